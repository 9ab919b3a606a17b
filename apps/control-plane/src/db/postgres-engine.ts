import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql, type SQL } from 'drizzle-orm';
import type { Logger } from 'pino';
import { PostgresBus, type NotifyingDatabase } from './bus.js';
import { SharedCounters } from './change-counter.js';
import type { ColumnType, FieldKind, SourceRow, SqlEngine } from './engine.js';
import type { Bus, ChangeCounters } from './ports.js';

/** The folder of PostgreSQL's committed migrations. */
export const POSTGRES_MIGRATIONS = resolve(dirname(fileURLToPath(import.meta.url)), '../../drizzle/postgres');

/** A string as an SQL literal. */
function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/**
 * The SQL of PostgreSQL (see `SqlEngine`): JSON as `jsonb`, lists and rows as array
 * parameters (`unnest`), and the locks replicas sharing the database take: advisory locks,
 * `FOR UPDATE SKIP LOCKED`.
 */
export class PostgresEngine implements SqlEngine {
  readonly migrationsFolder = POSTGRES_MIGRATIONS;

  constructor(private readonly db: NotifyingDatabase) {}

  textList(values: readonly string[]): SQL {
    return sql`SELECT unnest(${sql.param([...values])}::text[])`;
  }

  rowSource(rows: readonly SourceRow[], types: readonly string[]): SQL {
    const arrays = sql.join(
      types.map((type, i) => sql`${sql.param(rows.map((r) => r[i]))}::${sql.raw(type)}[]`),
      sql`, `,
    );
    return sql`SELECT * FROM unnest(${arrays})`;
  }

  skipLocked(): SQL {
    return sql` FOR UPDATE SKIP LOCKED`;
  }

  lockNamed(name: string): SQL | null {
    return sql.raw(`SELECT pg_advisory_xact_lock(hashtext(${literal(name)}))`);
  }

  lockKeys(scope: string, keys: readonly string[]): SQL | null {
    return sql`SELECT pg_advisory_xact_lock(hashtext(${scope}), hashtext(k)) FROM unnest(${sql.param([...keys])}::text[]) AS k`;
  }

  tryLockedKeys(scope: string, keys: readonly string[]): SQL | null {
    return sql`SELECT k FROM unnest(${sql.param([...keys])}::text[]) AS k WHERE pg_try_advisory_xact_lock(hashtext(${scope}), hashtext(k))`;
  }

  readAndWrite(latest: SQL, write: SQL): SQL | null {
    return sql`
      WITH latest AS (${latest}),
      written AS (${write})
      SELECT (SELECT json_agg(latest) FROM latest) AS models, (SELECT json_agg(written) FROM written) AS written`;
  }

  updateThenInsert(update: SQL, insert: (afterUpdate: SQL) => SQL): SQL[] {
    // The INSERT reads the UPDATE's count, so the UPDATE runs first.
    return [sql`
          WITH unmarked AS (${update} RETURNING 1)
          ${insert(sql`(SELECT count(*) FROM unmarked) AS n, `)}`];
  }

  indexHint(table: SQL, _index: string): SQL {
    return table;
  }

  budgetCheck(_key: string): SQL | null {
    return null;
  }

  nullsOrder(where: 'FIRST' | 'LAST'): SQL {
    return sql.raw(` NULLS ${where}`);
  }

  columnText(column: string, type: ColumnType): SQL {
    return sql.raw(type === 'number' ? `${column}::text` : column);
  }

  dataField(path: readonly string[], _guarded: boolean): { readonly expr: SQL; readonly text: SQL } {
    const at = `'{${path.join(',')}}'`;
    return { expr: sql.raw(`(NULLIF(data::jsonb #> ${at}, 'null'::jsonb))`), text: sql.raw(`(data::jsonb #>> ${at})`) };
  }

  bindField(kind: FieldKind, value: string | number | boolean): SQL {
    return kind === 'json' ? sql`${JSON.stringify(value)}::jsonb` : sql`${typeof value === 'boolean' ? Number(value) : value}`;
  }

  dataLiteral(value: string | true): SQL {
    return sql.raw(`${literal(JSON.stringify(value))}::jsonb`);
  }

  regexpMatch(text: SQL, pattern: string): SQL {
    // PostgreSQL's own engine runs it (bounded by statement_timeout).
    return sql`(${text} ~ ${pattern})`;
  }

  jsonText(column: string, key: string): SQL {
    return sql.raw(`(${column}::jsonb ->> ${literal(key)})`);
  }

  jsonInteger(column: string, key: string): SQL {
    return sql.raw(`(${column}::jsonb ->> ${literal(key)})::bigint`);
  }

  jsonObject(entries: SQL): SQL {
    return sql`json_build_object(${entries})::text`;
  }

  jsonDocument(column: string): SQL {
    return sql.raw(`${column}::json`);
  }

  storedText(column: string): SQL {
    return sql.raw(column);
  }

  changeCounters(): ChangeCounters {
    return new SharedCounters(this.db);
  }

  async openBus(log: Logger): Promise<Bus> {
    const bus = new PostgresBus(this.db, log);
    await bus.start();
    return bus;
  }
}
