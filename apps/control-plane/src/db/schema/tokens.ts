import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Issued API tokens, by their JWT id, so that they can be revoked. */
export const tokens = sqliteTable(
  'tokens',
  {
    jti: text('jti').primaryKey(),
    userId: text('user_id').notNull(),
    timeCreated: integer('time_created').notNull(),
    expiresAt: integer('expires_at').notNull(),
    revokedAt: integer('revoked_at'),
  },
  (t) => [index('tokens_user').on(t.userId), index('tokens_expires').on(t.expiresAt)],
);
