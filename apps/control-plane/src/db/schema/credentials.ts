import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** The password hash of each user, kept apart from the versioned user model. */
export const credentials = sqliteTable('credentials', {
  userId: text('user_id').primaryKey(),
  passwordHash: text('password_hash').notNull(),
  timeUpdated: integer('time_updated').notNull(),
});
