import { API_PERMISSIONS, PLAYBOOK_PERMISSIONS, type RoleData, type UserData } from '@carapace/models';
import type { AuthRepository } from '../db/auth.repository.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import { nowS, type Clock } from '../ports.js';
import { generatePassword, hashPassword } from './passwords.js';

/** What the first start created; `generatedPassword` is set only when none was configured. */
export interface BootstrapResult {
  readonly created: boolean;
  readonly generatedPassword: string | null;
}

/**
 * On first start (no user at all), creates the role `wheel` with every permission and the
 * user `root` with it. The password is the configured one, or a generated one that the
 * caller shows once. Never a fixed default.
 */
export async function bootstrap(
  deps: { users: VersionedRepository<UserData>; roles: VersionedRepository<RoleData>; auth: AuthRepository; clock: Clock },
  admin: { password: string | null; email: string },
): Promise<BootstrapResult> {
  const any = deps.users.list({ page: 1, perPage: 1, all: false, filter: '{"time_deleted":{"gte":0}}' });
  if (any.total > 0) return { created: false, generatedPassword: null };
  const password = admin.password ?? generatePassword();
  const hash = await hashPassword(password);
  const created = deps.auth.transaction(() => {
    const now = nowS(deps.clock);
    if (deps.users.list({ page: 1, perPage: 1, all: false, filter: '{"time_deleted":{"gte":0}}' }).total > 0) return false;
    const wheel = deps.roles.create(
      {
        name: 'wheel',
        permissions: [
          { name: 'api', permissions: [...API_PERMISSIONS].sort() },
          { name: 'playbook', permissions: [...PLAYBOOK_PERMISSIONS].sort() },
        ],
      },
      null,
      now,
    );
    const root = deps.users.create({ login: 'root', email: admin.email, full_name: 'Root', role_id: wheel.id }, null, now);
    deps.auth.setPasswordHash(root.id, hash, now);
    return true;
  });
  return { created, generatedPassword: created && admin.password === null ? password : null };
}
