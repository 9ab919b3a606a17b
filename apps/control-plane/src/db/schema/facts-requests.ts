import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * The servers waiting for their facts (`FactsScheduler`), one row per server, shared by the
 * replicas: written when a server registers (in the registration's transaction), claimed by
 * the replica that hands it to one of its runners, deleted when the facts are recorded.
 * `due_ms` is when the row may next be handed out: the request's time, the next retry after
 * a failed attempt, or, while a runner holds it (`runner`, `sent_ms`), the deadline of its
 * answer, after which any replica asks again. `request_id` changes at every hand-out and
 * every new request: only the answer carrying the current one is recorded.
 */
export const factsRequests = sqliteTable(
  'facts_requests',
  {
    serverId: text('server_id').primaryKey(),
    requestId: text('request_id').notNull(),
    /** Failed attempts since the request (the retry backoff's exponent). */
    attempts: integer('attempts').notNull().default(0),
    dueMs: integer('due_ms').notNull(),
    /** The runner asked to gather the facts, while its answer is awaited; null while waiting for one. */
    runner: text('runner'),
    sentMs: integer('sent_ms'),
  },
  (t) => [index('facts_requests_due').on(t.dueMs)],
);
