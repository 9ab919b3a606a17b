import { sql } from 'drizzle-orm';
import { integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

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
 * fields are expression indexes in the custom migrations, partial on the live rows
 * (`WHERE is_latest = 1 AND time_deleted = 0`). There is deliberately no plain index on
 * (is_latest, time_deleted): offered one, SQLite's planner prefers it (and a sort of every
 * live row) over those partial indexes, even with ANALYZE statistics (migration 0005).
 */
export function versionedTable<N extends string>(name: N) {
  return sqliteTable(name, versionedColumns(), (t) => [
    uniqueIndex(`${name}_id_version`).on(t.id, t.version),
    uniqueIndex(`${name}_latest`).on(t.id).where(sql`${t.isLatest} = 1`),
  ]);
}

/** Any versioned model table. */
export type VersionedTable = ReturnType<typeof versionedTable<string>>;
