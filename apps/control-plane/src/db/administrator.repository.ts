import type { PermissionGroup } from '@carapace/models';
import type { Db } from './client.js';

/** What the guards on administrators read: live roles, the users holding them, the bootstrap role. */
export class AdministratorRepository {
  private readonly liveRolesStmt;
  private readonly countUsersStmt;
  private readonly bootstrapRoleStmt;

  constructor(private readonly db: Db) {
    this.liveRolesStmt = db.$client.prepare<[], { id: string; data: string }>(
      'SELECT id, data FROM roles WHERE is_latest = 1 AND time_deleted = 0',
    );
    this.countUsersStmt = db.$client.prepare<[string], { n: number }>(
      `SELECT count(*) AS n FROM users
        WHERE is_latest = 1 AND time_deleted = 0
          AND json_extract(data, '$.role_id') IN (SELECT value FROM json_each(?))`,
    );
    // Only the first start creates a role without an initiator: every role created through
    // the API names its creator. A rename keeps it the same role.
    this.bootstrapRoleStmt = db.$client.prepare<[], { id: string }>(
      'SELECT id FROM roles WHERE version = 1 AND initiator_id IS NULL ORDER BY pk LIMIT 1',
    );
  }

  /** The live roles and their permissions. */
  liveRoles(): { id: string; permissions: PermissionGroup[] }[] {
    return this.liveRolesStmt.all().map((r) => ({ id: r.id, permissions: (JSON.parse(r.data) as { permissions?: PermissionGroup[] }).permissions ?? [] }));
  }

  /** How many live users have one of these roles. */
  countLiveUsersWithRoles(roleIds: readonly string[]): number {
    if (roleIds.length === 0) return 0;
    return this.countUsersStmt.get(JSON.stringify(roleIds))?.n ?? 0;
  }

  /** The id of the role the first start created (`wheel`), if any. */
  bootstrapRoleId(): string | undefined {
    return this.bootstrapRoleStmt.get()?.id;
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn);
  }
}
