import type { Role, User } from '@carapace/models';
import { ClientCore, segment } from './core.client.js';
import type { RequestOptions } from './transport.js';
import { permissionGroups, type IterParams, type ListParams, type Page, type PermissionList, type RolePermissions } from './types.js';

/** The calls on users, roles and permissions. Part of {@link Client}. */
export class AccountsClient extends ClientCore {
  /** The caller's own user model (`GET /v1/user/self/`). */
  getUserSelf(options?: RequestOptions): Promise<User> {
    return this.call('GET', '/v1/user/self/', { options });
  }

  /** A page of the latest active users (`GET /v1/user/`; `view_user`). */
  getUsers(params?: ListParams, options?: RequestOptions): Promise<Page<User>> {
    return this.list('/v1/user/', params, options);
  }

  /** Every user matching `params`, fetched page by page as the loop goes. */
  iterUsers(params?: IterParams, options?: RequestOptions): AsyncGenerator<User, void, undefined> {
    return this.iterate('/v1/user/', params, options);
  }

  /** The latest version of a user (`GET /v1/user/{id}/`), also when deleted. */
  getUser(userId: string, options?: RequestOptions): Promise<User> {
    return this.call('GET', `/v1/user/${segment(userId)}/`, { options });
  }

  /** The versions of a user, newest first (`GET /v1/user/{id}/version/`; `view_user_versions`). */
  getUserVersions(userId: string, params?: ListParams, options?: RequestOptions): Promise<Page<User>> {
    return this.list(`/v1/user/${segment(userId)}/version/`, params, options);
  }

  /** One version of a user (`GET /v1/user/{id}/version/{version}/`). */
  getUserVersion(userId: string, version: number, options?: RequestOptions): Promise<User> {
    return this.call('GET', `/v1/user/${segment(userId)}/version/${segment(version)}/`, { options });
  }

  /**
   * Creates a user (`POST /v1/user/`; `create_user`). The service generates a password and
   * e-mails it to `email`.
   */
  createUser(login: string, email: string, fullName = '', roleId: string | null = null, options?: RequestOptions): Promise<User> {
    return this.call('POST', '/v1/user/', { body: { login, email, full_name: fullName, role_id: roleId }, options });
  }

  /**
   * Updates a user (`PUT /v1/user/{id}/`; `edit_user`): give the model as last read with
   * `data` changed; returns the new version. A stale model is refused with 409.
   */
  updateUser(model: User, options?: RequestOptions): Promise<User> {
    return this.call('PUT', `/v1/user/${segment(model.id)}/`, { body: model, options });
  }

  /** Deletes a user (`DELETE /v1/user/{id}/`; `delete_user`): marks it deleted and revokes its tokens. */
  deleteUser(userId: string, options?: RequestOptions): Promise<User> {
    return this.call('DELETE', `/v1/user/${segment(userId)}/`, { options });
  }

  /** The caller's role (`GET /v1/role/self/`); 404 when the caller has none. */
  getRoleSelf(options?: RequestOptions): Promise<Role> {
    return this.call('GET', '/v1/role/self/', { options });
  }

  /** A page of the latest active roles (`GET /v1/role/`; `view_role`). */
  getRoles(params?: ListParams, options?: RequestOptions): Promise<Page<Role>> {
    return this.list('/v1/role/', params, options);
  }

  /** Every role matching `params`, fetched page by page as the loop goes. */
  iterRoles(params?: IterParams, options?: RequestOptions): AsyncGenerator<Role, void, undefined> {
    return this.iterate('/v1/role/', params, options);
  }

  /** The latest version of a role (`GET /v1/role/{id}/`). */
  getRole(roleId: string, options?: RequestOptions): Promise<Role> {
    return this.call('GET', `/v1/role/${segment(roleId)}/`, { options });
  }

  /** The versions of a role, newest first (`GET /v1/role/{id}/version/`; `view_role_versions`). */
  getRoleVersions(roleId: string, params?: ListParams, options?: RequestOptions): Promise<Page<Role>> {
    return this.list(`/v1/role/${segment(roleId)}/version/`, params, options);
  }

  /** One version of a role (`GET /v1/role/{id}/version/{version}/`). */
  getRoleVersion(roleId: string, version: number, options?: RequestOptions): Promise<Role> {
    return this.call('GET', `/v1/role/${segment(roleId)}/version/${segment(version)}/`, { options });
  }

  /**
   * Creates a role (`POST /v1/role/`; `create_role`) with permission groups, given as the
   * API's list (`[{name: 'api', permissions: [...]}]`) or as `{api: [...], playbook: [...]}`.
   */
  createRole(name: string, permissions: RolePermissions, options?: RequestOptions): Promise<Role> {
    return this.call('POST', '/v1/role/', { body: { name, permissions: permissionGroups(permissions) }, options });
  }

  /** Updates a role (`PUT /v1/role/{id}/`; `edit_role`): the model as last read with `data` changed. */
  updateRole(model: Role, options?: RequestOptions): Promise<Role> {
    return this.call('PUT', `/v1/role/${segment(model.id)}/`, { body: model, options });
  }

  /** Deletes a role (`DELETE /v1/role/{id}/`; `delete_role`); 409 while a live user has it. */
  deleteRole(roleId: string, options?: RequestOptions): Promise<Role> {
    return this.call('DELETE', `/v1/role/${segment(roleId)}/`, { options });
  }

  /** Every permission of the system, by group (`GET /v1/permission/`; `view_role`). */
  getPermissions(options?: RequestOptions): Promise<PermissionList> {
    return this.call('GET', '/v1/permission/', { options });
  }
}
