import { sql } from 'drizzle-orm';
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

/**
 * Columns shared by every versioned model table: each version is one row; `is_latest`
 * marks the newest version of an id, and a partial unique index keeps it to one per id.
 */
function versionedColumns() {
  return {
    pk: integer('pk').primaryKey({ autoIncrement: true }),
    id: text('id').notNull(),
    version: integer('version').notNull(),
    timeUpdated: integer('time_updated').notNull(),
    timeDeleted: integer('time_deleted').notNull().default(0),
    initiatorId: text('initiator_id'),
    isLatest: integer('is_latest', { mode: 'boolean' }).notNull(),
    data: text('data', { mode: 'json' }).notNull().$type<Record<string, unknown>>(),
  };
}

/**
 * Defines the table of one versioned model with the common indexes. Indexes on `data`
 * fields are expression indexes in the custom migrations.
 */
export function versionedTable<N extends string>(name: N) {
  return sqliteTable(name, versionedColumns(), (t) => [
    uniqueIndex(`${name}_id_version`).on(t.id, t.version),
    uniqueIndex(`${name}_latest`).on(t.id).where(sql`${t.isLatest} = 1`),
    index(`${name}_live`).on(t.isLatest, t.timeDeleted),
  ]);
}

/** Any versioned model table. */
export type VersionedTable = ReturnType<typeof versionedTable<string>>;
