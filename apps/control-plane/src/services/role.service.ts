import {
  API_PERMISSIONS,
  PLAYBOOK_PERMISSIONS,
  type PermissionGroup,
  type RoleCreate,
  type RoleData,
  type RoleUpdate,
} from '@carapace/models';
import { badRequest, conflict, forbidden, UniqueViolation } from '../errors.js';
import type { Stored } from '../db/versioned.repository.js';
import type { Principal } from './principal.js';
import { VersionedService } from './versioned.service.js';
import type { UserService } from './user.service.js';

const KNOWN: Record<string, readonly string[]> = { api: API_PERMISSIONS, playbook: PLAYBOOK_PERMISSIONS };

/**
 * Normalizes permission groups: both groups present, names checked, duplicates merged,
 * permissions sorted. Unknown group or permission → 400.
 */
export function normalizePermissions(groups: readonly PermissionGroup[]): PermissionGroup[] {
  const merged: Record<string, Set<string>> = { api: new Set(), playbook: new Set() };
  for (const group of groups) {
    const known = KNOWN[group.name];
    const target = merged[group.name];
    if (!known || !target) throw badRequest(`Unknown permission group "${group.name.slice(0, 64)}": groups are api, playbook.`);
    for (const p of group.permissions) {
      if (!known.includes(p)) throw badRequest(`Unknown ${group.name} permission "${p.slice(0, 128)}".`);
      target.add(p);
    }
  }
  return Object.entries(merged).map(([name, set]) => ({ name, permissions: [...set].sort() }));
}

/** Refuses to grant permissions the caller does not hold itself (no privilege escalation). */
export function checkGrantable(principal: Principal, groups: readonly PermissionGroup[]): void {
  for (const g of groups) {
    const held = g.name === 'api' ? principal.api : principal.playbook;
    const missing = g.permissions.filter((p) => !held.has(p));
    if (missing.length) throw forbidden(`You cannot grant ${g.name} permissions you do not hold: ${missing.join(', ')}.`);
  }
}

/** Roles: permissions, uniqueness of names, and the guard on deleting a role in use. */
export class RoleService extends VersionedService<RoleData> {
  private users!: UserService;

  /** Wires the user service (the two refer to each other). */
  attach(users: UserService): void {
    this.users = users;
  }

  create(body: RoleCreate, principal: Principal): Stored<RoleData> {
    const permissions = normalizePermissions(body.permissions);
    checkGrantable(principal, permissions);
    return this.unique(() => this.repo.create({ name: body.name, permissions }, principal.user.id, this.now()));
  }

  update(id: string, body: RoleUpdate, principal: Principal): Stored<RoleData> {
    this.checkUpdatable(id, body);
    const permissions = normalizePermissions(body.data.permissions);
    checkGrantable(principal, permissions);
    return this.unique(() =>
      this.appendChecked(id, body, (latest) => ({ data: { ...latest.data, name: body.data.name, permissions } }), principal),
    );
  }

  delete(id: string, principal: Principal): Stored<RoleData> {
    return this.appendChecked(
      id,
      null,
      () => {
        if (this.users.countWithRole(id) > 0) {
          throw conflict('CannotDeleteRoleWithActiveUsers', `The role ${id} is the role of live users.`);
        }
        return { time_deleted: this.now() };
      },
      principal,
    );
  }

  /** The live role with this id, if any. */
  live(id: string): Stored<RoleData> | undefined {
    const role = this.repo.get(id);
    return role && role.time_deleted === 0 ? role : undefined;
  }

  private unique<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      if (e instanceof UniqueViolation) throw conflict('ImpossibleToCreateSuchModel', 'A role with this name exists already.');
      throw e;
    }
  }
}
