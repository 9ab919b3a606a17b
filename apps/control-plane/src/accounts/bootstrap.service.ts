import type { RoleData, UserData } from '@carapace/models';
import type { AdministratorRepository } from '../db/administrator.repository.js';
import type { AuthRepository } from '../db/auth.repository.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import { UniqueViolation } from '../errors.js';
import { nowS, type Clock, type PasswordHasher } from '../ports.js';
import { generatePassword } from '../adapters/passwords.js';
import { allPermissions } from './principal.js';

/** What the start did; `generatedPassword` is set only when none was configured. */
export interface BootstrapResult {
  readonly created: boolean;
  readonly generatedPassword: string | null;
  /** Whether the bootstrap role was given permissions that appeared since (new playbooks). */
  readonly bootstrapRoleUpdated: boolean;
}

/**
 * On first start (no user at all), creates the role `wheel` with every permission and the
 * user `root` with it. The password is the configured one, or a generated one that the
 * caller shows once. Never a fixed default. On every later start, gives the bootstrap role
 * (the one role created without an initiator, whatever its name now) every permission
 * there is, so that permissions added by a new release are held by it too.
 */
export async function bootstrap(
  deps: {
    users: VersionedRepository<UserData>;
    roles: VersionedRepository<RoleData>;
    auth: AuthRepository;
    administrators: AdministratorRepository;
    clock: Clock;
    passwords: PasswordHasher;
  },
  admin: { password: string | null; email: string },
): Promise<BootstrapResult> {
  if (await deps.users.anyEver()) return { created: false, generatedPassword: null, bootstrapRoleUpdated: await completeBootstrapRole(deps) };
  const password = admin.password ?? generatePassword();
  // hashed before the transaction opens: a transaction holds the database meanwhile
  const hash = await deps.passwords.hash(password);
  let created: boolean;
  try {
    created = await deps.auth.transaction(async () => {
      const now = nowS(deps.clock);
      if (await deps.users.anyEver()) return false;
      const wheel = await deps.roles.create({ name: 'wheel', permissions: allPermissions() }, null, now);
      const root = await deps.users.create({ login: 'root', email: admin.email, full_name: 'Root', role_id: wheel.id }, null, now);
      await deps.auth.setPasswordHash(root.id, hash, now);
      return true;
    });
  } catch (e) {
    // On PostgreSQL, replicas starting together may both find no user: the first to commit
    // creates `wheel` and `root`, the others find them taken and create nothing.
    if (!(e instanceof UniqueViolation)) throw e;
    created = false;
  }
  return { created, generatedPassword: created && admin.password === null ? password : null, bootstrapRoleUpdated: false };
}

/** Makes the live bootstrap role hold exactly every permission there is; whether it changed. */
function completeBootstrapRole(deps: { roles: VersionedRepository<RoleData>; administrators: AdministratorRepository; clock: Clock }): Promise<boolean> {
  return deps.roles.transaction(async () => {
    const id = await deps.administrators.bootstrapRoleId();
    // locked until the commit (PostgreSQL): replicas starting together take turns
    const role = id === undefined ? undefined : await deps.roles.getForUpdate(id);
    if (!role || role.time_deleted !== 0) return false;
    const permissions = allPermissions();
    if (JSON.stringify(role.data.permissions) === JSON.stringify(permissions)) return false;
    await deps.roles.append(role, { data: { ...role.data, permissions } }, null, nowS(deps.clock));
    return true;
  });
}
