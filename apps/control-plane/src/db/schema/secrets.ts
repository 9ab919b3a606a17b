import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** Secrets the service generates for itself (the token signing key). */
export const secrets = sqliteTable('secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  timeCreated: integer('time_created').notNull(),
});
