import { Type, type Static } from 'typebox';
import { ModelSchema, UpdateBodySchema } from './common.schema.js';

/** A permission group: `{name: "api"|"playbook", permissions: [...]}`. */
export const PermissionGroupSchema = Type.Object({
  name: Type.String({ maxLength: 64 }),
  permissions: Type.Array(Type.String({ maxLength: 128 }), { maxItems: 256 }),
});
export type PermissionGroup = Static<typeof PermissionGroupSchema>;

const RoleName = Type.String({ minLength: 1, maxLength: 128 });
const Permissions = Type.Array(PermissionGroupSchema, { maxItems: 8 });

/** `data` of a role model. */
export const RoleDataSchema = Type.Object({
  name: Type.String(),
  permissions: Type.Array(PermissionGroupSchema),
});
export type RoleData = Static<typeof RoleDataSchema>;

/** A role model. */
export const RoleSchema = ModelSchema('role', RoleDataSchema);
export type Role = Static<typeof RoleSchema>;

/** Body of `POST /v1/role/`. */
export const RoleCreateSchema = Type.Object({ name: RoleName, permissions: Permissions });
export type RoleCreate = Static<typeof RoleCreateSchema>;

/** Body of `PUT /v1/role/{id}/`. */
export const RoleUpdateSchema = UpdateBodySchema(Type.Object({ name: RoleName, permissions: Permissions }));
export type RoleUpdate = Static<typeof RoleUpdateSchema>;

/** The answer of `GET /v1/permission/`. */
export const PermissionListSchema = Type.Object({ items: Type.Array(PermissionGroupSchema) });
