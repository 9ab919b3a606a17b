import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Events counted by the throttles (failed logins, reset requests, registrations) when
 * several replicas share the database (PostgreSQL): each replica counts what all of them
 * saw, so an attacker gains nothing by spreading requests over them. A single control plane
 * counts in memory and leaves this table empty.
 */
export const throttleEvents = sqliteTable(
  'throttle_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    timeMs: integer('time_ms').notNull(),
  },
  (t) => [index('throttle_events_key').on(t.scope, t.key, t.timeMs), index('throttle_events_time').on(t.timeMs)],
);
