import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Runners allowed to connect: one row per runner name, holding the hash of its token.
 * Connection state (connected, slots, heartbeat) is kept in memory by the runner service.
 */
export const runners = sqliteTable('runners', {
  name: text('name').primaryKey(),
  tokenHash: text('token_hash').notNull(),
  labels: text('labels', { mode: 'json' }).$type<Record<string, string>>().notNull(),
  timeCreated: integer('time_created').notNull(),
  createdBy: text('created_by'),
  revokedAt: integer('revoked_at'),
});
