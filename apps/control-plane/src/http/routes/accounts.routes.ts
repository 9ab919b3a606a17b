import { RoleCreateSchema, RoleSchema, RoleUpdateSchema, UserCreateSchema, UserSchema, UserUpdateSchema } from '@carapace/models';
import type { FastifyPluginAsync } from 'fastify';
import type { AppServices } from '../../app-services.js';
import { registerVersionedRoutes } from './versioned.routes.js';

/** Users and roles: the versioned model routes. */
export const accountsRoutes: FastifyPluginAsync<{ services: AppServices }> = async (app, { services }) => {
  registerVersionedRoutes(app, services.config, {
    model: 'user',
    schema: UserSchema,
    service: services.users,
    createBody: UserCreateSchema,
    updateBody: UserUpdateSchema,
    permissions: { view: 'view_user', versions: 'view_user_versions', create: 'create_user', edit: 'edit_user', delete: 'delete_user' },
  });
  registerVersionedRoutes(app, services.config, {
    model: 'role',
    schema: RoleSchema,
    service: services.roles,
    createBody: RoleCreateSchema,
    updateBody: RoleUpdateSchema,
    permissions: { view: 'view_role', versions: 'view_role_versions', create: 'create_role', edit: 'edit_role', delete: 'delete_role' },
  });
};
