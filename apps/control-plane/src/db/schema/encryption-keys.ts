import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * The key the secrets of this database are encrypted with (AES-256-GCM), by its id and a
 * check value (an HMAC under the key): never the key itself, which is kept outside the
 * database (`secrets.keyFile`, `secrets.key`). One row once the secrets are encrypted; none
 * in a database whose secrets are still in clear (before the first start of this release).
 */
export const encryptionKeys = sqliteTable('encryption_keys', {
  id: text('id').primaryKey(),
  checkValue: text('check_value').notNull(),
  timeCreated: integer('time_created').notNull(),
});
