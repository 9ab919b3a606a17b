import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** A server waiting for its facts, as the `facts_requests` table holds it. */
export interface StoredFactsRequest {
  readonly serverId: string;
  /** The id of the current request: a runner's answer is recorded only if it carries it. */
  readonly requestId: string;
  /** Failed attempts since the server asked for its facts. */
  readonly attempts: number;
  /** When it may next be handed out: the request, its next retry, or its answer's deadline. */
  readonly dueMs: number;
  /** The runner asked for the facts (until its answer or its deadline); null while none is. */
  readonly runner: string | null;
  readonly sentMs: number | null;
}

const COLUMNS = sql.raw(`server_id AS "serverId", request_id AS "requestId", attempts, due_ms AS "dueMs", runner, sent_ms AS "sentMs"`);

/**
 * The `facts_requests` table: the servers waiting for their facts, shared by the replicas.
 * A request is handed to one runner at a time, by whichever replica claims it first: `due`
 * takes rows with `FOR UPDATE SKIP LOCKED` on PostgreSQL (a replica skips what another is
 * handing out; SQLite has one process and one connection); `claim` gives the row a new
 * request id, the runner and the answer's deadline. Every later change of a row is
 * conditional on its request id (`retryLater`, `remove`): an answer to an older request, or
 * one that lost a race with a new registration, changes nothing.
 */
export class FactsRequestRepository {
  constructor(private readonly db: Database) {}

  /** Runs `fn` in a transaction (joining the caller's). */
  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  /**
   * Asks for a server's facts from `nowMs` on, starting over: no attempt yet, no runner
   * (the answer of one asked before is no longer awaited). Joins the caller's transaction.
   */
  async request(serverId: string, nowMs: number): Promise<void> {
    await this.db.run(sql`
      INSERT INTO facts_requests (server_id, request_id, attempts, due_ms, runner, sent_ms)
      VALUES (${serverId}, ${randomUUID()}, 0, ${nowMs}, NULL, NULL)
      ON CONFLICT (server_id) DO UPDATE SET request_id = excluded.request_id, attempts = 0, due_ms = excluded.due_ms, runner = NULL, sent_ms = NULL`);
  }

  /** Asks for a server's facts unless a request for it exists already (kept as it is). */
  async requestIfAbsent(serverId: string, nowMs: number): Promise<void> {
    await this.db.run(sql`
      INSERT INTO facts_requests (server_id, request_id, attempts, due_ms, runner, sent_ms)
      VALUES (${serverId}, ${randomUUID()}, 0, ${nowMs}, NULL, NULL)
      ON CONFLICT (server_id) DO NOTHING`);
  }

  /** A server's request, if it has one. */
  async get(serverId: string): Promise<StoredFactsRequest | undefined> {
    return this.db.get<StoredFactsRequest>(sql`SELECT ${COLUMNS} FROM facts_requests WHERE server_id = ${serverId}`);
  }

  /** Whether any request is due at `nowMs` (one indexed read, without a transaction). */
  async anyDue(nowMs: number): Promise<boolean> {
    return (await this.db.get<{ one: number }>(sql`SELECT 1 AS one FROM facts_requests WHERE due_ms <= ${nowMs} LIMIT 1`)) !== undefined;
  }

  /**
   * Up to `limit` requests due at `nowMs`, after `after` (the last of the previous page) in
   * the order of their due time, locked until the caller's transaction ends; on PostgreSQL
   * those another replica holds are skipped. To be called in a transaction that claims them.
   */
  async due(nowMs: number, limit: number, after?: { dueMs: number; serverId: string }): Promise<StoredFactsRequest[]> {
    const skip = this.db.engine.skipLocked();
    const from = after ? sql` AND (due_ms, server_id) > (${after.dueMs}, ${after.serverId})` : sql``;
    return this.db.all<StoredFactsRequest>(sql`
      SELECT ${COLUMNS} FROM facts_requests WHERE due_ms <= ${nowMs}${from}
       ORDER BY due_ms, server_id LIMIT ${limit}${skip}`);
  }

  /** Hands a request to `runner` as `requestId`, sent at `nowMs`, its answer awaited until `deadlineMs`. */
  async claim(serverId: string, requestId: string, runner: string, nowMs: number, deadlineMs: number): Promise<void> {
    await this.db.run(sql`
      UPDATE facts_requests SET request_id = ${requestId}, runner = ${runner}, sent_ms = ${nowMs}, due_ms = ${deadlineMs}
       WHERE server_id = ${serverId}`);
  }

  /** Records a failed attempt of `requestId`: no runner holds it, it is due again at `dueMs`. Whether the request was still that one. */
  async retryLater(serverId: string, requestId: string, attempts: number, dueMs: number): Promise<boolean> {
    const changed = await this.db.run(sql`
      UPDATE facts_requests SET attempts = ${attempts}, due_ms = ${dueMs}, runner = NULL, sent_ms = NULL
       WHERE server_id = ${serverId} AND request_id = ${requestId}`);
    return changed > 0;
  }

  /** Forgets a server's request (when `requestId` is given: only if it is still that one); whether one was removed. */
  async remove(serverId: string, requestId?: string): Promise<boolean> {
    const which = requestId === undefined ? sql`` : sql` AND request_id = ${requestId}`;
    return (await this.db.run(sql`DELETE FROM facts_requests WHERE server_id = ${serverId}${which}`)) > 0;
  }

  /** How many servers wait for their facts, in the whole installation. */
  async count(): Promise<number> {
    return (await this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM facts_requests`))?.n ?? 0;
  }
}
