import type { PermissionGroup } from '@carapace/models';
import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** What the guards on administrators read: live roles, the users holding them, the bootstrap role. */
export class AdministratorRepository {
  constructor(private readonly db: Database) {}

  /** The live roles and their permissions. */
  async liveRoles(): Promise<{ id: string; permissions: PermissionGroup[] }[]> {
    const rows = await this.db.all<{ id: string; data: string }>(sql`SELECT id, data FROM roles WHERE is_latest = 1 AND time_deleted = 0`);
    return rows.map((r) => ({ id: r.id, permissions: (JSON.parse(r.data) as { permissions?: PermissionGroup[] }).permissions ?? [] }));
  }

  /** How many live users have one of these roles. */
  async countLiveUsersWithRoles(roleIds: readonly string[]): Promise<number> {
    if (roleIds.length === 0) return 0;
    const roleOf = this.db.engine.jsonText('data', 'role_id');
    const ids = sql.join(
      roleIds.map((id) => sql`${id}`),
      sql`, `,
    );
    const row = await this.db.get<{ n: number }>(
      sql`SELECT count(*) AS n FROM users WHERE is_latest = 1 AND time_deleted = 0 AND ${roleOf} IN (${ids})`,
    );
    return row?.n ?? 0;
  }

  /**
   * The id of the role the first start created (`wheel`), if any. Only the first start
   * creates a role without an initiator: every role created through the API names its
   * creator. A rename keeps it the same role.
   */
  async bootstrapRoleId(): Promise<string | undefined> {
    const row = await this.db.get<{ id: string }>(sql`SELECT id FROM roles WHERE version = 1 AND initiator_id IS NULL ORDER BY pk LIMIT 1`);
    return row?.id;
  }

  /**
   * Makes the caller's transaction the only one changing who administers until it ends: on
   * PostgreSQL a transaction-scoped advisory lock (two replicas demoting two different
   * administrators at once would otherwise each see the other still there); SQLite runs one
   * writing transaction at a time already.
   */
  async serialize(): Promise<void> {
    const lock = this.db.engine.lockNamed('carapace_administrators');
    if (lock) await this.db.run(lock);
  }

  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }
}
