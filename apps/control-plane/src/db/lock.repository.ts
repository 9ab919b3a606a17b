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
   * Locks every server for the execution at once, or throws `LockConflict` when any of them
   * holds an unexpired lock: the caller holds the transaction, which must then roll back.
   * The locks are rows under the servers' primary keys (an expired one is overwritten), so
   * two replicas locking one server at once cannot both succeed: the second insert waits for
   * the first transaction, then finds its unexpired row and counts it as not taken.
   */
  async lockAll(serverIds: readonly string[], executionId: string, owner: string, expiresAt: number, nowMs: number): Promise<void> {
    if (serverIds.length === 0) return;
    const values = sql.join(
      serverIds.map((serverId) => sql`(${serverId}, ${executionId}, ${owner}, ${expiresAt})`),
      sql`, `,
    );
    // A server's expired lock is taken over in place; an unexpired one stays, and counts no row.
    const taken = await this.db.run(sql`
      INSERT INTO server_locks (server_id, execution_id, owner, expires_at) VALUES ${values}
      ON CONFLICT (server_id) DO UPDATE SET execution_id = excluded.execution_id, owner = excluded.owner, expires_at = excluded.expires_at
      WHERE server_locks.expires_at <= ${nowMs}`);
    if (taken !== serverIds.length) throw new LockConflict();
  }

  /** Which of these servers hold an unexpired lock. */
  async lockedAmong(serverIds: readonly string[], nowMs: number): Promise<string[]> {
    if (serverIds.length === 0) return [];
    const rows = await this.db.all<{ serverId: string }>(
      sql`SELECT server_id AS "serverId" FROM server_locks WHERE server_id IN (${idList(serverIds)}) AND expires_at > ${nowMs}`,
    );
    return rows.map((r) => r.serverId);
  }

  /** Extends every lease of an owner; returns how many. */
  renew(owner: string, expiresAt: number): Promise<number> {
    return this.db.run(sql`UPDATE server_locks SET expires_at = ${expiresAt} WHERE owner = ${owner}`);
  }

  /**
   * Extends the leases of every runner that no other replica has heard from since
   * `heardSinceMs` (its stream, in `runner_sessions`); returns how many. Those others hold
   * renew their leases themselves.
   */
  renewUnattended(expiresAt: number, replica: string, heardSinceMs: number): Promise<number> {
    return this.db.run(sql`
      UPDATE server_locks SET expires_at = ${expiresAt}
      WHERE owner NOT IN (SELECT name FROM runner_sessions WHERE replica <> ${replica} AND last_heartbeat_ms > ${heardSinceMs})`);
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
 * A server is locked already, or another transaction (another replica) locked it meanwhile:
 * the caller's transaction is rolled back, and the execution stays queued.
 */
export class LockConflict extends Error {
  constructor() {
    super('a server was locked by another transaction meanwhile');
  }
}
