import {
  API_PERMISSIONS,
  PLAYBOOK_PERMISSIONS,
  type PermissionGroup,
  type RoleCreate,
  type RoleData,
  type RoleUpdate,
} from '@carapace/models';
import { badRequest, conflict, forbidden } from '../errors.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import type { Clock } from '../ports.js';
import type { Administrators } from './administrators.js';
import { holdsEverything, notHeld, type Principal } from './principal.js';
import { VersionedService } from '../services/versioned.service.js';

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

/**
 * Refuses to change or delete a role, or a user having it, that holds permissions the
 * caller does not hold (no takeover of those who hold more).
 */
export function checkHeld(principal: Principal, groups: readonly PermissionGroup[] | undefined, what: string): void {
  const missing = notHeld(principal, groups);
  if (missing.length) throw forbidden(`You cannot ${what} permissions you do not hold: ${missing.join(', ')}.`);
}

/**
 * Roles: permissions, uniqueness of names, the guard on deleting a role in use, and no
 * escalation: a caller creates, edits (before and after) and deletes only roles whose
 * permissions they hold in full. The bootstrap role keeps every permission and cannot be
 * deleted; no change may leave no live user holding every permission.
 */
export class RoleService extends VersionedService<RoleData> {
  constructor(
    model: 'role',
    repo: VersionedRepository<RoleData>,
    clock: Clock,
    private readonly admins: Administrators,
    private readonly countUsersWithRole: (roleId: string) => Promise<number>,
  ) {
    super(model, repo, clock);
  }

  async create(body: RoleCreate, principal: Principal): Promise<Stored<RoleData>> {
    const permissions = normalizePermissions(body.permissions);
    checkGrantable(principal, permissions);
    return this.unique(() => this.repo.create({ name: body.name, permissions }, principal.user.id, this.now()));
  }

  async update(id: string, body: RoleUpdate, principal: Principal): Promise<Stored<RoleData>> {
    const latest = await this.checkUpdatable(id, body);
    checkHeld(principal, latest.data.permissions, 'change a role holding');
    const permissions = normalizePermissions(body.data.permissions);
    checkGrantable(principal, permissions);
    return this.unique(() =>
      this.admins.guard(() =>
        this.appendChecked(
          id,
          body,
          async (current) => {
            checkHeld(principal, current.data.permissions, 'change a role holding');
            if ((await this.admins.isBootstrapRole(id)) && !holdsEverything(permissions)) {
              throw conflict('CannotReduceBootstrapRole', `The role ${current.data.name} was created at first start and keeps every permission.`);
            }
            return { data: { ...current.data, name: body.data.name, permissions } };
          },
          principal,
        ),
      ),
    );
  }

  delete(id: string, principal: Principal): Promise<Stored<RoleData>> {
    return this.appendChecked(
      id,
      null,
      async (latest) => {
        checkHeld(principal, latest.data.permissions, 'delete a role holding');
        if (await this.admins.isBootstrapRole(id)) {
          throw conflict('CannotDeleteBootstrapRole', `The role ${latest.data.name} was created at first start and cannot be deleted.`);
        }
        if ((await this.countUsersWithRole(id)) > 0) {
          throw conflict('CannotDeleteRoleWithActiveUsers', `The role ${id} is the role of live users.`);
        }
        return { time_deleted: this.now() };
      },
      principal,
    );
  }

  /** The latest version of a role, deleted or not. */
  find(id: string): Promise<Stored<RoleData> | undefined> {
    return this.repo.get(id);
  }
}
