import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** A held server lock. */
export interface ServerLock {
  readonly serverId: string;
  readonly executionId: string;
  readonly owner: string;
  readonly expiresAt: number;
}

const LOCK_COLUMNS = sql.raw('server_id AS "serverId", execution_id AS "executionId", owner, expires_at AS "expiresAt"');

function idList(ids: readonly string[]) {
  return sql.join(
    ids.map((id) => sql`${id}`),
    sql`, `,
  );
}

/** Server locks as leases (ARCHITECTURE.md "Server locks"). Times in milliseconds. */
export class LockRepository {
  constructor(private readonly db: Database) {}

  /** The unexpired lock of a server, if any. */
  lockOf(serverId: string, nowMs: number): Promise<ServerLock | undefined> {
    return this.db.get<ServerLock>(sql`SELECT ${LOCK_COLUMNS} FROM server_locks WHERE server_id = ${serverId} AND expires_at > ${nowMs}`);
  }

  /** Every unexpired lock. */
  held(nowMs: number): Promise<ServerLock[]> {
    return this.db.all<ServerLock>(sql`SELECT ${LOCK_COLUMNS} FROM server_locks WHERE expires_at > ${nowMs}`);
  }

  /**
   * Locks every server for the execution at once, or none: false when any of them holds an
   * unexpired lock. The caller holds the transaction. On PostgreSQL the rows of expired
   * locks are deleted and the new ones inserted under the servers' primary keys, so two
   * replicas locking one server at once cannot both succeed: the second insert waits for the
   * first transaction and then finds the row (`ON CONFLICT DO NOTHING` inserts fewer rows).
   */
  async lockAll(serverIds: readonly string[], executionId: string, owner: string, expiresAt: number, nowMs: number): Promise<boolean> {
    if (serverIds.length === 0) return true;
    const ids = idList(serverIds);
    const taken = await this.db.get<{ n: number }>(
      sql`SELECT count(*) AS n FROM server_locks WHERE server_id IN (${ids}) AND expires_at > ${nowMs}`,
    );
    if ((taken?.n ?? 0) > 0) return false;
    await this.db.run(sql`DELETE FROM server_locks WHERE server_id IN (${ids}) AND expires_at <= ${nowMs}`);
    const values = sql.join(
      serverIds.map((serverId) => sql`(${serverId}, ${executionId}, ${owner}, ${expiresAt})`),
      sql`, `,
    );
    const inserted = await this.db.run(
      sql`INSERT INTO server_locks (server_id, execution_id, owner, expires_at) VALUES ${values} ON CONFLICT (server_id) DO NOTHING`,
    );
    if (inserted !== serverIds.length) throw new LockConflict();
    return true;
  }

  /** Extends every lease of an owner; returns how many. */
  renew(owner: string, expiresAt: number): Promise<number> {
    return this.db.run(sql`UPDATE server_locks SET expires_at = ${expiresAt} WHERE owner = ${owner}`);
  }

  /** Extends every lease, whoever holds it; returns how many. */
  renewAll(expiresAt: number): Promise<number> {
    return this.db.run(sql`UPDATE server_locks SET expires_at = ${expiresAt}`);
  }

  /** Extends the leases of one execution. */
  renewExecution(executionId: string, expiresAt: number): Promise<number> {
    return this.db.run(sql`UPDATE server_locks SET expires_at = ${expiresAt} WHERE execution_id = ${executionId}`);
  }

  /** Releases the locks of an execution. */
  async release(executionId: string): Promise<void> {
    await this.db.run(sql`DELETE FROM server_locks WHERE execution_id = ${executionId}`);
  }

  /** The executions whose leases have expired. */
  async expiredExecutions(nowMs: number): Promise<string[]> {
    const rows = await this.db.all<{ executionId: string }>(
      sql`SELECT DISTINCT execution_id AS "executionId" FROM server_locks WHERE expires_at <= ${nowMs}`,
    );
    return rows.map((r) => r.executionId);
  }
}

/**
 * Another transaction locked one of the servers between the check and the insert (another
 * replica): the caller's transaction is rolled back, and the execution stays queued.
 */
export class LockConflict extends Error {
  constructor() {
    super('a server was locked by another transaction meanwhile');
  }
}
