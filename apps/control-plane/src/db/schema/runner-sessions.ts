import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * The open stream of each connected runner, whichever replica holds it: written when the
 * runner says hello, its heartbeat time renewed, deleted when the stream ends (a session
 * whose heartbeat is older than the lease timeout is a stream its replica lost with it).
 * Every replica answers `GET /v1/runner/` from it.
 */
export const runnerSessions = sqliteTable(
  'runner_sessions',
  {
    name: text('name').primaryKey(),
    sessionId: text('session_id').notNull(),
    /** The replica holding the stream (its id for this process's life). */
    replica: text('replica').notNull(),
    version: text('version').notNull(),
    labels: text('labels').notNull(),
    slots: integer('slots').notNull(),
    connectedAtMs: integer('connected_at_ms').notNull(),
    lastHeartbeatMs: integer('last_heartbeat_ms').notNull(),
    peer: text('peer').notNull(),
    sshPublicKey: text('ssh_public_key').notNull(),
    draining: integer('draining').notNull().default(0),
  },
  (t) => [index('runner_sessions_replica').on(t.replica)],
);
