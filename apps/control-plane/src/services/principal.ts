import type { ApiPermission, PermissionGroup, UserData } from '@carapace/models';
import type { Stored } from '../db/versioned.repository.js';

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
