import {
  API_PERMISSIONS,
  ErrorSchema,
  PermissionListSchema,
  PLAYBOOK_PERMISSIONS,
  PlaybookListSchema,
  RoleSchema,
  UserSchema,
} from '@carapace/models';
import { PLAYBOOK_DESCRIPTORS } from '@carapace/playbooks';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { notFound } from '../../errors.js';
import type { AppServices } from '../../app-services.js';
import { principalOf } from '../context.js';

/** The caller's own user and role, the permission catalog and the playbook catalog. */
export const catalogRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get(
    '/v1/user/self',
    { config: { auth: 'token' }, schema: { tags: ['user'], summary: 'The caller', response: { 200: UserSchema, '4xx': ErrorSchema } } },
    (request) => ({ ...principalOf(request).user, model: 'user' as const }),
  );
  app.get(
    '/v1/role/self',
    { config: { auth: 'token' }, schema: { tags: ['role'], summary: "The caller's role", response: { 200: RoleSchema, '4xx': ErrorSchema } } },
    async (request) => {
      const roleId = principalOf(request).user.data.role_id;
      const role = roleId ? await services.roles.live(roleId) : undefined;
      if (!role) throw notFound('You have no role.');
      return { ...role, model: 'role' as const };
    },
  );
  app.get(
    '/v1/permission',
    {
      config: { auth: 'token', permissions: ['view_role'] },
      schema: { tags: ['role'], summary: 'Every permission of the system', response: { 200: PermissionListSchema, '4xx': ErrorSchema } },
    },
    () => ({
      items: [
        { name: 'api', permissions: [...API_PERMISSIONS] },
        { name: 'playbook', permissions: [...PLAYBOOK_PERMISSIONS] },
      ],
    }),
  );
  app.get(
    '/v1/playbook',
    { config: { auth: 'token' }, schema: { tags: ['playbook'], summary: 'The playbooks', response: { 200: PlaybookListSchema, '4xx': ErrorSchema } } },
    () => ({ items: [...PLAYBOOK_DESCRIPTORS] }),
  );
};
