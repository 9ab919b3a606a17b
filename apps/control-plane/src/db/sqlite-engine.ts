import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql, type SQL } from 'drizzle-orm';
import type { Logger } from 'pino';
import { MemoryBus } from './bus.js';
import { MemoryCounters } from './change-counter.js';
import type { Database } from './database.js';
import type { ColumnType, FieldKind, SourceRow, SqlEngine } from './engine.js';
import type { Bus, ChangeCounters } from './ports.js';

/** The folder of SQLite's committed migrations. */
export const SQLITE_MIGRATIONS = resolve(dirname(fileURLToPath(import.meta.url)), '../../drizzle');

const EMPTY = sql``;

/**
 * The SQL of SQLite (see `SqlEngine`): JSON as text read by `json_extract`, lists and rows as
 * one JSON parameter (`json_each`), RE2 and the query budget as functions of the connection
 * (`regexp()`, `budget_check()`), and no locks: one writing transaction runs at a time.
 */
export class SqliteEngine implements SqlEngine {
  readonly migrationsFolder = SQLITE_MIGRATIONS;

  constructor(private readonly db: Database) {}

  textList(values: readonly string[]): SQL {
    return sql`SELECT value FROM json_each(${JSON.stringify(values)})`;
  }

  rowSource(rows: readonly SourceRow[], types: readonly string[]): SQL {
    const columns = sql.raw(types.map((_, i) => `value ->> ${i}`).join(', '));
    // `WHERE true`: SQLite reads an `ON CONFLICT` after a bare `FROM` as a join's.
    return sql`SELECT ${columns} FROM json_each(${JSON.stringify(rows)}) WHERE true`;
  }

  skipLocked(): SQL {
    return EMPTY;
  }

  lockNamed(_name: string): SQL | null {
    return null;
  }

  lockKeys(_scope: string, _keys: readonly string[]): SQL | null {
    return null;
  }

  tryLockedKeys(_scope: string, _keys: readonly string[]): SQL | null {
    return null;
  }

  readAndWrite(_latest: SQL, _write: SQL): SQL | null {
    return null;
  }

  updateThenInsert(update: SQL, insert: (afterUpdate: SQL) => SQL): SQL[] {
    return [update, insert(EMPTY)];
  }

  indexHint(table: SQL, index: string): SQL {
    return sql`${table} INDEXED BY ${sql.identifier(index)}`;
  }

  budgetCheck(key: string): SQL | null {
    return sql`budget_check(${sql.raw(key)})`;
  }

  nullsOrder(_where: 'FIRST' | 'LAST'): SQL {
    return EMPTY;
  }

  columnText(column: string, _type: ColumnType): SQL {
    return sql.raw(column);
  }

  dataField(path: readonly string[], guarded: boolean): { readonly expr: SQL; readonly text: SQL } {
    const extract = `json_extract(data, '$.${path.join('.')}')`;
    const expr = sql.raw(guarded ? `(CASE WHEN json_valid(data) THEN ${extract} END)` : extract);
    return { expr, text: expr };
  }

  bindField(_kind: FieldKind, value: string | number | boolean): SQL {
    if (typeof value === 'boolean') return sql`${value ? 1 : 0}`;
    return sql`${value}`;
  }

  dataLiteral(value: string | true): SQL {
    return sql.raw(value === true ? '1' : `'${value.replace(/'/g, "''")}'`);
  }

  regexpMatch(text: SQL, pattern: string): SQL {
    return sql`regexp(${pattern}, ${text})`;
  }

  jsonText(column: string, key: string): SQL {
    return sql.raw(`json_extract(${column}, '$.${key}')`);
  }

  jsonInteger(column: string, key: string): SQL {
    return this.jsonText(column, key);
  }

  jsonObject(entries: SQL): SQL {
    return sql`json_object(${entries})`;
  }

  jsonDocument(column: string): SQL {
    return sql.raw(`json(${column})`);
  }

  storedText(column: string): SQL {
    return sql.raw(`CAST(${column} AS BLOB) AS ${column}`);
  }

  changeCounters(): ChangeCounters {
    return new MemoryCounters();
  }

  async openBus(_log: Logger): Promise<Bus> {
    return new MemoryBus(this.db);
  }
}
