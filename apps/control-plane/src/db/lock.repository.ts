import { sql } from 'drizzle-orm';
import { StatementPart, type IdSubquery, type Statement } from './condition.js';
import type { Database } from './database.js';

/** A held server lock. */
export interface ServerLock {
  readonly serverId: string;
  readonly executionId: string;
  readonly owner: string;
  readonly expiresAt: number;
}

const LOCK_COLUMNS = sql.raw('server_id AS "serverId", execution_id AS "executionId", owner, expires_at AS "expiresAt"');

/** The servers one execution asks to lock, all of them or none (`LockRepository.lockEach`). */
export interface LockRequest {
  readonly executionId: string;
  readonly serverIds: readonly string[];
  /** The runner the execution goes to. */
  readonly owner: string;
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
   * Locks the servers of several executions in one statement, each execution all of its
   * servers or none: the executions returned hold theirs; an execution any of whose servers
   * holds a lock gets none, and its requests leave nothing behind. The caller holds the
   * transaction. No server may be asked for twice (one statement cannot write a row twice).
   *
   * The locks are rows under the servers' primary keys, so two replicas locking one server
   * at once cannot both have it: the second insert waits for the first transaction, then
   * finds its row and counts it as not taken. An expired lock counts as held too: it stays
   * until the sweep fails its execution (`expiredExecutions`) and frees the server; taken
   * over in place, it would hide that execution from the sweep.
   */
  async lockEach(requests: readonly LockRequest[], expiresAt: number): Promise<Set<string>> {
    const statement = this.lockStatement(requests, expiresAt);
    return this.settle(requests, statement ? await this.db.all<{ executionId: string }>(StatementPart.sql(statement)) : []);
  }

  /**
   * The statement of `lockEach`: inserts the locks, and returns a row (`executionId`) for
   * each one taken; null when there is nothing to lock. With `onlyFor` (a subquery of
   * execution ids), only those executions lock anything. What it returns goes to `settle`,
   * in the same transaction.
   */
  lockStatement(requests: readonly LockRequest[], expiresAt: number, onlyFor?: IdSubquery): Statement | null {
    const rows = requests.flatMap((r) => r.serverIds.map((serverId) => [serverId, r.executionId, r.owner] as const));
    if (new Set(rows.map(([serverId]) => serverId)).size !== rows.length) throw new Error('lockEach: a server is asked for twice');
    if (rows.length === 0) return null;
    const source = this.db.engine.rowSource(rows.map(([serverId, executionId, owner]) => [serverId, executionId, owner, expiresAt]), ['text', 'text', 'text', 'int8']);
    // `WHERE true`: SQLite reads an `ON CONFLICT` after a bare `FROM` as a join's.
    const rowsToLock = onlyFor
      ? sql`SELECT * FROM (WITH s (server_id, execution_id, owner, expires_at) AS (${source})
          SELECT * FROM s WHERE execution_id IN (${StatementPart.sql(onlyFor)})) AS q WHERE true`
      : source;
    // A server locked already is not returned.
    return StatementPart.of(sql`
      INSERT INTO server_locks (server_id, execution_id, owner, expires_at) ${rowsToLock}
      ON CONFLICT (server_id) DO NOTHING
      RETURNING execution_id AS "executionId"`);
  }

  /**
   * What `lockEach` returns, from the rows its statement returned: the executions that hold
   * all their servers; those that took only some release them.
   */
  async settle(requests: readonly LockRequest[], taken: readonly { executionId: string }[]): Promise<Set<string>> {
    const locked = new Set(requests.filter((r) => r.serverIds.length === 0).map((r) => r.executionId));
    const count = new Map<string, number>();
    for (const { executionId } of taken) count.set(executionId, (count.get(executionId) ?? 0) + 1);
    const partial: string[] = [];
    for (const r of requests) {
      if (r.serverIds.length === 0) continue;
      const n = count.get(r.executionId) ?? 0;
      if (n === r.serverIds.length) locked.add(r.executionId);
      else if (n > 0) partial.push(r.executionId);
    }
    if (partial.length) await this.db.run(sql`DELETE FROM server_locks WHERE execution_id IN (${this.db.engine.textList(partial)})`);
    return locked;
  }

  /** Which of these servers hold a lock, expired or not (an expired one waits for the sweep: see `lockEach`). */
  async lockedAmong(serverIds: readonly string[]): Promise<string[]> {
    if (serverIds.length === 0) return [];
    const rows = await this.db.all<{ serverId: string }>(
      sql`SELECT server_id AS "serverId" FROM server_locks WHERE server_id IN (${this.db.engine.textList(serverIds)})`,
    );
    return rows.map((r) => r.serverId);
  }

  /** Extends every lease of these owners; returns how many. */
  async renew(owners: readonly string[], expiresAt: number): Promise<number> {
    if (owners.length === 0) return 0;
    return this.db.run(sql`UPDATE server_locks SET expires_at = ${expiresAt} WHERE owner IN (${this.db.engine.textList(owners)})`);
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

  /** Releases the locks of executions. */
  async release(executionIds: readonly string[]): Promise<void> {
    if (executionIds.length === 0) return;
    await this.db.run(sql`DELETE FROM server_locks WHERE execution_id IN (${this.db.engine.textList(executionIds)})`);
  }

  /** The executions whose leases have expired. */
  async expiredExecutions(nowMs: number): Promise<string[]> {
    const rows = await this.db.all<{ executionId: string }>(
      sql`SELECT DISTINCT execution_id AS "executionId" FROM server_locks WHERE expires_at <= ${nowMs}`,
    );
    return rows.map((r) => r.executionId);
  }
}
