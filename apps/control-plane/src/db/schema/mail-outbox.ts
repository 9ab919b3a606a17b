import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Mail waiting to be delivered: written in the same transaction as what it tells of (a new
 * user and their password, a reset token), deleted once the SMTP server (or the spool
 * folder) has it. The body may hold a secret: see the mail outbox service.
 */
export const mailOutbox = sqliteTable(
  'mail_outbox',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    recipient: text('recipient').notNull(),
    subject: text('subject').notNull(),
    body: text('body').notNull(),
    timeCreatedMs: integer('time_created_ms').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptMs: integer('next_attempt_ms').notNull(),
    lastError: text('last_error'),
  },
  (t) => [index('mail_outbox_next_attempt').on(t.nextAttemptMs)],
);
