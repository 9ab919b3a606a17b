import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Server locks: a server is locked by at most one execution. A lock is a lease held by the
 * runner running it; it expires unless the runner's heartbeat renews it.
 */
export const serverLocks = sqliteTable(
  'server_locks',
  {
    serverId: text('server_id').primaryKey(),
    executionId: text('execution_id').notNull(),
    owner: text('owner').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (t) => [index('server_locks_execution').on(t.executionId), index('server_locks_owner').on(t.owner)],
);
