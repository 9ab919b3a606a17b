import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { is } from 'drizzle-orm';
import { getTableConfig as pgTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { getTableConfig as sqliteTableConfig, SQLiteBaseInteger, SQLiteTable } from 'drizzle-orm/sqlite-core';
import { describe, expect, it } from 'vitest';
import * as pgSchema from '../src/db/schema-pg/index.js';
import * as sqliteSchema from '../src/db/schema/index.js';

// The PostgreSQL schema and migrations mirror the SQLite ones: the same tables (by export
// name and table name), columns, NOT NULL flags, defaults, primary keys, and the same
// indexes (name, table, uniqueness, columns or JSON field, partial WHERE clause) once every
// migration has run. The repositories run the same SQL on both engines, so any drift is a bug.

const drizzleDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'drizzle');
const SQLITE_MIGRATIONS = drizzleDir;
const PG_MIGRATIONS = join(drizzleDir, 'postgres');

/** Tables only PostgreSQL has, by export name, and why. */
const PG_ONLY_TABLES: Record<string, string> = {
  changeCounters: 'the change counters shared by the replicas (one process on SQLite counts in memory)',
};

/** SQLite `integer` columns are one of these on PostgreSQL; `text` stays `text`. */
const PG_TYPES: Record<string, readonly string[]> = {
  integer: ['bigint', 'bigserial', 'smallint'],
  text: ['text'],
};

interface ColumnShape {
  notNull: boolean;
  hasDefault: boolean;
  default: unknown;
  autoIncrement: boolean;
}

interface TableShape {
  name: string;
  columns: Record<string, ColumnShape>;
  primaryKey: string[];
}

function tablesOf<T>(module: Record<string, unknown>, isTable: (value: unknown) => value is T): Map<string, T> {
  return new Map(Object.entries(module).filter((entry): entry is [string, T] => isTable(entry[1])));
}

const sqliteTables = tablesOf(sqliteSchema, (v): v is SQLiteTable => is(v, SQLiteTable));
const pgTables = tablesOf(pgSchema, (v): v is PgTable => is(v, PgTable));

function sqliteShape(table: SQLiteTable): TableShape {
  const config = sqliteTableConfig(table);
  const composite = config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name));
  return {
    name: config.name,
    columns: Object.fromEntries(
      config.columns.map((c) => {
        const autoIncrement = is(c, SQLiteBaseInteger) && c.autoIncrement;
        // An auto-increment is no default of the column, whatever drizzle's flag says.
        return [c.name, { notNull: c.notNull, hasDefault: c.hasDefault && !autoIncrement, default: c.default, autoIncrement }];
      }),
    ),
    primaryKey: composite.length > 0 ? composite : config.columns.filter((c) => c.primary).map((c) => c.name),
  };
}

function pgShape(table: PgTable): TableShape {
  const config = pgTableConfig(table);
  const composite = config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name));
  return {
    name: config.name,
    columns: Object.fromEntries(
      config.columns.map((c) => {
        const autoIncrement = c.getSQLType().endsWith('serial');
        // bigserial's sequence default is its auto-increment, not a default of the column.
        return [c.name, { notNull: c.notNull, hasDefault: c.hasDefault && !autoIncrement, default: c.default, autoIncrement }];
      }),
    ),
    primaryKey: composite.length > 0 ? composite : config.columns.filter((c) => c.primary).map((c) => c.name),
  };
}

// --- Indexes, as the migrations leave them ---------------------------------------------

interface IndexShape {
  table: string;
  unique: boolean;
  /** Columns by name, and JSON fields of `data` as `data.<path>`. */
  on: string[];
  /** The partial index's predicate, normalized (no quotes, no table names), or ''. */
  where: string;
}

/** The statements of the migrations of `folder`, in the order of its drizzle journal. */
function migrationStatements(folder: string): string[] {
  const journal = JSON.parse(readFileSync(join(folder, 'meta', '_journal.json'), 'utf8')) as { entries: { tag: string }[] };
  expect(journal.entries.length).toBeGreaterThan(0);
  return journal.entries.flatMap(({ tag }) =>
    readFileSync(join(folder, `${tag}.sql`), 'utf8')
      .replace(/--.*$/gm, '')
      .split(';')
      .map((s) => s.replace(/\s+/g, ' ').trim())
      .filter((s) => s.length > 0),
  );
}

/** Splits on the commas outside parentheses and quotes. */
function splitTopLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const ch = list[i];
    if (ch === "'") quoted = !quoted;
    else if (!quoted && ch === '(') depth++;
    else if (!quoted && ch === ')') depth--;
    else if (!quoted && depth === 0 && ch === ',') {
      parts.push(list.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(list.slice(start));
  return parts.map((p) => p.trim());
}

/** Removes parentheses around the whole of `expr`. */
function unwrap(expr: string): string {
  let e = expr.trim();
  while (e.startsWith('(') && e.endsWith(')')) {
    let depth = 0;
    let closesAtEnd = true;
    for (let i = 0; i < e.length; i++) {
      if (e[i] === '(') depth++;
      else if (e[i] === ')' && --depth === 0 && i < e.length - 1) closesAtEnd = false;
    }
    if (!closesAtEnd) break;
    e = e.slice(1, -1).trim();
  }
  return e;
}

/**
 * One indexed term: a column, or a JSON field of `data` in the one form each engine's
 * queries use (SQLite `json_extract(data, '$.a.b')`, PostgreSQL
 * `(NULLIF(data::jsonb #> '{a,b}', 'null'::jsonb))`). Anything else is returned as is, so
 * it cannot match the other engine's term: a PostgreSQL index on another expression of
 * `data` would never be used by the repositories' SQL.
 */
function indexTerm(raw: string): string {
  // NULLs first ascending is SQLite's own order, which a PostgreSQL index names (0005).
  const term = unwrap(raw.replace(/ ASC NULLS FIRST$/i, ''));
  const sqliteJson = /^json_extract\(data, '\$\.([\w.]+)'\)$/.exec(term);
  if (sqliteJson) return `data.${sqliteJson[1]}`;
  const pgJson = /^NULLIF\(data::jsonb #> '\{([\w,]+)\}', 'null'::jsonb\)$/.exec(term);
  if (pgJson) return `data.${pgJson[1]!.replace(/,/g, '.')}`;
  const column = /^[`"]?(\w+)[`"]?(?: (ASC|DESC))?$/i.exec(term);
  if (column) return column[2]?.toUpperCase() === 'DESC' ? `${column[1]} DESC` : column[1]!;
  return `unrecognized: ${term}`;
}

function normalizeWhere(where: string | undefined): string {
  if (!where) return '';
  return (
    unwrap(where.replace(/[`"]/g, '').replace(/\b[a-z_]\w*\./gi, ''))
      .replace(/\s+/g, ' ')
      .toLowerCase()
      // A JSON field of `data` compared with a string, in the form of each engine's queries
      // (`fieldEquals`): SQLite `json_extract(data, '$.a') = 'v'`, PostgreSQL
      // `(NULLIF(data::jsonb #> '{a}', 'null'::jsonb)) = '"v"'::jsonb` (its `"` gone above).
      .replace(/json_extract\(data, '\$\.([\w.]+)'\) = '([^']*)'/g, "data.$1 = '$2'")
      .replace(/\(nullif\(data::jsonb #> '\{([\w,]+)\}', 'null'::jsonb\)\) = '([^']*)'::jsonb/g, (_, path: string, value: string) => `data.${path.replace(/,/g, '.')} = '${value}'`)
  );
}

const CREATE_INDEX = /^CREATE (UNIQUE )?INDEX (?:IF NOT EXISTS )?[`"]?(\w+)[`"]? ON [`"]?(\w+)[`"]?(?: USING \w+)? ?\((.*)\)(?: WHERE (.*))?$/is;
const DROP_INDEX = /^DROP INDEX (?:IF EXISTS )?[`"]?(\w+)[`"]?/i;
const CREATE_TABLE = /^CREATE TABLE (?:IF NOT EXISTS )?[`"]?(\w+)[`"]?/i;
const UNIQUE_CONSTRAINT = /CONSTRAINT [`"](\w+)[`"] UNIQUE(?: NULLS NOT DISTINCT)?\s*\(([^)]*)\)/gi;

/** The indexes, by name, that the migrations of `folder` leave: created, minus those dropped later. */
function migratedIndexes(folder: string): Map<string, IndexShape> {
  const indexes = new Map<string, IndexShape>();
  const add = (name: string, shape: IndexShape) => {
    expect(indexes.has(name), `index ${name} created twice in ${folder}`).toBe(false);
    indexes.set(name, shape);
  };
  for (const statement of migrationStatements(folder)) {
    const created = CREATE_INDEX.exec(statement);
    if (created) {
      const [, unique, name, table, on, where] = created;
      const terms = splitTopLevel(on!).map(indexTerm);
      // Every SQLite index ends in the rowid, which is pk; a PostgreSQL index names it.
      if (terms.length > 1 && terms.at(-1) === 'pk') terms.pop();
      add(name!, { table: table!, unique: unique !== undefined, on: terms, where: normalizeWhere(where) });
      continue;
    }
    const dropped = DROP_INDEX.exec(statement);
    if (dropped) {
      expect(indexes.delete(dropped[1]!), `${dropped[1]} dropped before it was created in ${folder}`).toBe(true);
      continue;
    }
    // A UNIQUE constraint is a unique index of its name (drizzle's `.unique()` on PostgreSQL).
    const table = CREATE_TABLE.exec(statement);
    if (table) {
      for (const [, name, columns] of statement.matchAll(UNIQUE_CONSTRAINT)) {
        add(name!, { table: table[1]!, unique: true, on: splitTopLevel(columns!).map(indexTerm), where: '' });
      }
    }
  }
  return indexes;
}

describe('PostgreSQL schema parity with SQLite', () => {
  it('exports every SQLite table, and only the known extra tables', () => {
    expect(sqliteTables.size).toBeGreaterThan(0);
    const missing = [...sqliteTables.keys()].filter((name) => !pgTables.has(name));
    expect(missing, 'SQLite tables without a PostgreSQL table of the same export name').toEqual([]);
    const extra = [...pgTables.keys()].filter((name) => !sqliteTables.has(name)).sort();
    expect(extra, 'PostgreSQL-only tables (list them in PG_ONLY_TABLES)').toEqual(Object.keys(PG_ONLY_TABLES).sort());
  });

  const shared = [...sqliteTables.keys()].filter((name) => pgTables.has(name));

  it.each(shared)('%s: same table name, columns, NOT NULL flags, defaults and primary key', (exportName) => {
    const sqlite = sqliteShape(sqliteTables.get(exportName)!);
    const pg = pgShape(pgTables.get(exportName)!);
    expect(pg.name).toBe(sqlite.name);
    expect(Object.keys(pg.columns).sort(), `columns of ${sqlite.name}`).toEqual(Object.keys(sqlite.columns).sort());
    expect(pg.columns, `columns of ${sqlite.name}`).toEqual(sqlite.columns);
    expect(pg.primaryKey, `primary key of ${sqlite.name}`).toEqual(sqlite.primaryKey);
  });

  it.each(shared)('%s: column types map integer to bigint/bigserial/smallint and text to text', (exportName) => {
    const sqliteTypes = new Map(sqliteTableConfig(sqliteTables.get(exportName)!).columns.map((c) => [c.name, c.getSQLType()]));
    for (const column of pgTableConfig(pgTables.get(exportName)!).columns) {
      const sqliteType = sqliteTypes.get(column.name) ?? '';
      expect(PG_TYPES[sqliteType] ?? [], `${exportName}.${column.name}: SQLite ${sqliteType}, PostgreSQL ${column.getSQLType()}`).toContain(
        column.getSQLType(),
      );
    }
  });

  const sqliteIndexes = migratedIndexes(SQLITE_MIGRATIONS);
  const pgIndexes = migratedIndexes(PG_MIGRATIONS);

  it('the PostgreSQL migrations create every index the SQLite migrations leave, and no other', () => {
    expect(sqliteIndexes.size).toBeGreaterThan(0);
    // The plain (is_latest, time_deleted) indexes dropped by SQLite's 0005 are gone.
    expect(sqliteIndexes.has('users_live')).toBe(false);
    expect(sqliteIndexes.has('users_login_live')).toBe(true);
    const sqliteNames = [...sqliteIndexes.keys()].sort();
    const pgNames = [...pgIndexes.keys()].sort();
    expect.soft(
      sqliteNames.filter((n) => !pgIndexes.has(n)),
      'indexes of the SQLite migrations missing from drizzle/postgres/*.sql',
    ).toEqual([]);
    expect.soft(
      pgNames.filter((n) => !sqliteIndexes.has(n)),
      'indexes of drizzle/postgres/*.sql that the SQLite migrations do not have',
    ).toEqual([]);
  });

  it('each index has the same table, uniqueness, columns or JSON fields and partial WHERE on both engines', () => {
    for (const [name, sqlite] of sqliteIndexes) {
      const pg = pgIndexes.get(name);
      if (pg) expect.soft(pg, `index ${name}`).toEqual(sqlite);
    }
    for (const [name, index] of pgIndexes) {
      expect.soft(index.on.filter((term) => term.startsWith('unrecognized')), `index ${name}`).toEqual([]);
    }
  });
});
