import { API_PERMISSIONS, PLAYBOOK_PERMISSIONS, type ApiPermission, type PermissionGroup, type UserData } from '@carapace/models';
import type { Stored } from '../domain/list-types.js';

/** The authenticated caller of a request, with its role's permissions as stored now. */
export interface Principal {
  readonly user: Stored<UserData>;
  readonly api: ReadonlySet<string>;
  readonly playbook: ReadonlySet<string>;
  readonly jti: string;
  readonly expiresAt: number;
}

/** The permission sets of a role's permission groups. */
export function permissionSets(groups: readonly PermissionGroup[] | undefined): { api: Set<string>; playbook: Set<string> } {
  const api = new Set<string>();
  const playbook = new Set<string>();
  for (const g of groups ?? []) {
    const target = g.name === 'api' ? api : g.name === 'playbook' ? playbook : null;
    for (const p of g.permissions) target?.add(p);
  }
  return { api, playbook };
}

/** Whether the principal holds every listed api permission. */
export function hasApi(principal: Principal, permissions: readonly ApiPermission[]): boolean {
  return permissions.every((p) => principal.api.has(p));
}

/** Whether the principal may run a playbook. */
export function hasPlaybook(principal: Principal, playbook: string): boolean {
  return principal.playbook.has(playbook);
}

/** Every permission there is, in both groups, sorted: what the bootstrap role `wheel` holds. */
export function allPermissions(): PermissionGroup[] {
  return [
    { name: 'api', permissions: [...API_PERMISSIONS].sort() },
    { name: 'playbook', permissions: [...PLAYBOOK_PERMISSIONS].sort() },
  ];
}

/** Whether these permission groups hold every permission there is. */
export function holdsEverything(groups: readonly PermissionGroup[] | undefined): boolean {
  const sets = permissionSets(groups);
  return API_PERMISSIONS.every((p) => sets.api.has(p)) && PLAYBOOK_PERMISSIONS.every((p) => sets.playbook.has(p));
}

/**
 * The permissions of `groups` that the principal does not hold, as `group:permission`.
 * Names that are no longer permissions (a playbook removed since) grant nothing and count
 * for nothing.
 */
export function notHeld(principal: Principal, groups: readonly PermissionGroup[] | undefined): string[] {
  const sets = permissionSets(groups);
  return [
    ...API_PERMISSIONS.filter((p) => sets.api.has(p) && !principal.api.has(p)).map((p) => `api:${p}`),
    ...PLAYBOOK_PERMISSIONS.filter((p) => sets.playbook.has(p) && !principal.playbook.has(p)).map((p) => `playbook:${p}`),
  ];
}
