import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Webhook deliveries of the notifications of executions' ends: written in the same
 * transaction as the final state, so a notification is committed with what it tells of.
 * `body` is the exact JSON sent (signed anew at each attempt); the webhook's secret is not
 * stored: it is read from the configuration when sending, by the target's URL.
 */
export const notificationDeliveries = sqliteTable(
  'notification_deliveries',
  {
    id: text('id').primaryKey(),
    executionId: text('execution_id').notNull(),
    event: text('event').notNull(),
    url: text('url').notNull(),
    body: text('body').notNull(),
    /** `pending`, `delivered` or `failed` (refused for good, or given up). */
    state: text('state').notNull(),
    attempts: integer('attempts').notNull().default(0),
    timeCreatedMs: integer('time_created_ms').notNull(),
    nextAttemptMs: integer('next_attempt_ms').notNull(),
    timeDoneMs: integer('time_done_ms'),
    lastError: text('last_error'),
  },
  (t) => [index('notification_deliveries_due').on(t.state, t.nextAttemptMs), index('notification_deliveries_execution').on(t.executionId)],
);

/** Every attempt of a webhook delivery: when, how long, the HTTP status or the error. */
export const notificationAttempts = sqliteTable(
  'notification_attempts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    deliveryId: text('delivery_id').notNull(),
    attempt: integer('attempt').notNull(),
    timeMs: integer('time_ms').notNull(),
    durationMs: integer('duration_ms').notNull(),
    status: integer('status'),
    error: text('error'),
  },
  (t) => [index('notification_attempts_delivery').on(t.deliveryId, t.attempt)],
);
