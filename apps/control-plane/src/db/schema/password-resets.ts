import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Password reset tokens, stored only as SHA-256 digests. */
export const passwordResets = sqliteTable(
  'password_resets',
  {
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id').notNull(),
    timeCreated: integer('time_created').notNull(),
    expiresAt: integer('expires_at').notNull(),
    usedAt: integer('used_at'),
  },
  (t) => [index('password_resets_user').on(t.userId)],
);
