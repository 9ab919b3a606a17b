import type { SQL } from 'drizzle-orm';
import type { Logger } from 'pino';
import type { Bus, ChangeCounters } from './ports.js';

/** The type of a column a list may filter on: values of another type are refused. */
export type ColumnType = 'text' | 'number';

/** What a field of a list is: `json`, a field of `data`; otherwise a column of that type. */
export type FieldKind = 'json' | ColumnType;

/** A row of `SqlEngine.rowSource`: strings, integers or null. */
export type SourceRow = readonly (string | number | null)[];

/**
 * Everything in which SQLite and PostgreSQL differ for the control plane, one method per
 * difference, named by what it means: the SQL each engine writes for it, the objects each
 * builds in its own way (change counters, bus), and its migrations. Implemented once per
 * engine (`sqlite-engine.ts`, `postgres-engine.ts`) and reached as `Database.engine`: no
 * code outside those two modules asks which engine it runs on.
 *
 * Methods that answer `null` (or an empty statement) stand for what the engine does not need:
 * SQLite runs one writing transaction at a time, so what PostgreSQL locks it has already.
 */
export interface SqlEngine {
  /**
   * `values` as a subquery of one parameter, for `column IN (${engine.textList(values)})`:
   * the statement's text is the same whatever their number, so PostgreSQL prepares it once
   * (a list written out as `IN ($1, $2, …)` is a new statement for each length).
   * PostgreSQL: `SELECT unnest($1::text[])`; SQLite: `SELECT value FROM json_each(?)`.
   */
  textList(values: readonly string[]): SQL;

  /**
   * Rows as a `SELECT` of one parameter per column on PostgreSQL (`unnest($1::text[],
   * $2::int8[], …)`, each array cast to its column's type in `types`) and of one JSON array on
   * SQLite (`json_each`), for `INSERT INTO t (…) ${rowSource(…)} ON CONFLICT …`: the
   * statement's text does not depend on how many rows it writes, so it is prepared once, on
   * either engine (a `VALUES` list is a new statement for each length).
   */
  rowSource(rows: readonly SourceRow[], types: readonly string[]): SQL;

  /**
   * What ends a subquery that claims rows (`… ORDER BY … LIMIT n${skipLocked()}`): on
   * PostgreSQL ` FOR UPDATE SKIP LOCKED` (a replica skips the rows another one is claiming);
   * nothing on SQLite, whose writers take turns.
   */
  skipLocked(): SQL;

  /**
   * A statement making the caller's transaction the only one, until it ends, among those
   * taking the lock `name` (a constant, written into the statement): PostgreSQL's
   * transaction-scoped advisory lock; null on SQLite, where writing transactions run one at
   * a time already.
   */
  lockNamed(name: string): SQL | null;

  /**
   * A statement taking, for the rest of the caller's transaction, the lock of each of `keys`
   * under `scope` (a table's name), in the order given, waiting for each: PostgreSQL's
   * advisory locks on `(hashtext(scope), hashtext(key))`; null on SQLite (one writer at a time).
   */
  lockKeys(scope: string, keys: readonly string[]): SQL | null;

  /**
   * A subquery of those of `keys` whose lock (as `lockKeys`) this transaction took without
   * waiting, for `id IN (…)`: PostgreSQL's `pg_try_advisory_xact_lock`; null on SQLite, where
   * no other transaction can hold one (every key is free).
   */
  tryLockedKeys(scope: string, keys: readonly string[]): SQL | null;

  /**
   * One statement reading `latest` (a `SELECT`, which `write` names `latest`) and running
   * `write` (an `INSERT … RETURNING`, say), in one snapshot, answering one row: `models`, the
   * rows of `latest` as a JSON array, and `written`, those of `write` (null for none). On
   * PostgreSQL, whose `WITH` may hold a write; null on SQLite, whose may not (the caller runs
   * the read and the write apart).
   */
  readAndWrite(latest: SQL, write: SQL): SQL | null;

  /**
   * The statements that run `update` and then the `INSERT` that `insert` writes, the insert
   * seeing what the update changed (a partial unique index then sees the rows it unmarked as
   * gone). `insert` is given a FROM item, with its comma, to put first in its FROM list. On
   * PostgreSQL one statement: the update in a data-modifying `WITH` whose count that FROM item
   * reads, so that it runs first; on SQLite the two statements, the FROM item empty.
   */
  updateThenInsert(update: SQL, insert: (afterUpdate: SQL) => SQL): SQL[];

  /**
   * `table` told to read through `index` (a partial index whose predicate the query repeats):
   * SQLite's `INDEXED BY`; PostgreSQL's planner picks it by itself (the table alone).
   */
  indexHint(table: SQL, index: string): SQL;

  /**
   * A condition, always true, that stops a budgeted list query in time as it scans (`key` is
   * a column of each row): SQLite's `budget_check(key)`; null on PostgreSQL, whose
   * `statement_timeout` stops it.
   */
  budgetCheck(key: string): SQL | null;

  /**
   * What follows a sort key so that NULLs come first ascending and last descending, as
   * SQLite orders them anyway: ` NULLS FIRST` / ` NULLS LAST` on PostgreSQL, nothing on SQLite.
   */
  nullsOrder(where: 'FIRST' | 'LAST'): SQL;

  /**
   * The text of a column (`column`, checked by the caller) for a `regexp` filter: a number
   * column is cast to text on PostgreSQL; SQLite's `regexp()` takes it as it is.
   */
  columnText(column: string, type: ColumnType): SQL;

  /**
   * The field at `path` of `data` (the parts checked by the caller): `expr`, the exact
   * expression the expression indexes are built on, compared and sorted on, and `text`, its
   * text for `regexp`. On SQLite `json_extract(data, '$.a.b')`, or when `guarded` its form
   * reading a document SQLite's JSON functions refuse as null; on PostgreSQL
   * `(NULLIF(data::jsonb #> '{a,b}', 'null'::jsonb))`, which reads a JSON null as SQL NULL as
   * SQLite does (`guarded` changes nothing: `jsonb` is always valid).
   */
  dataField(path: readonly string[], guarded: boolean): { readonly expr: SQL; readonly text: SQL };

  /**
   * A value bound for comparison with a field of that kind: JSON (`::jsonb`) for a data
   * field on PostgreSQL; booleans as 1 and 0 otherwise.
   */
  bindField(kind: FieldKind, value: string | number | boolean): SQL;

  /**
   * A data field (`dataField(…).expr`) equals `value` written as a literal, not bound (a
   * partial index whose predicate names the value can then serve the query): the literal,
   * JSON on PostgreSQL (`'"x"'::jsonb`, `'true'::jsonb`), SQLite's value of `json_extract`
   * (`'x'`, `1` for true). `value` is a constant of the caller's, never a request's.
   */
  dataLiteral(value: string | true): SQL;

  /** The `regexp` filter: `text` matches `pattern` (bound). PostgreSQL's `~`; SQLite's `regexp()` (RE2). */
  regexpMatch(text: SQL, pattern: string): SQL;

  /**
   * The top-level `key` of the JSON document in `column` (both constants of the caller's),
   * for a comparison with a string: `(column::jsonb ->> 'key')` on PostgreSQL,
   * `json_extract(column, '$.key')` on SQLite.
   */
  jsonText(column: string, key: string): SQL;

  /** As `jsonText`, a number: cast to `bigint` on PostgreSQL; SQLite's `json_extract` reads it as one. */
  jsonInteger(column: string, key: string): SQL;

  /**
   * A JSON object built of `entries` (`'name', value, …`) as text: `json_build_object(…)::text`
   * on PostgreSQL, `json_object(…)` on SQLite.
   */
  jsonObject(entries: SQL): SQL;

  /** The JSON document stored as text in `column`, as a JSON value to nest in `jsonObject`: `column::json`, `json(column)`. */
  jsonDocument(column: string): SQL;

  /**
   * The column `column` of stored JSON text as its bytes, under its own name: SQLite hands a
   * BLOB over as a Buffer (`CAST(data AS BLOB) AS data`); PostgreSQL's text is read as a
   * string (the column alone), which the caller turns into bytes.
   */
  storedText(column: string): SQL;

  /**
   * The change counters of this engine's database (see `ChangeCounters`): in memory on SQLite,
   * the only writer of its file; rows of `change_counters` on PostgreSQL, shared by replicas.
   */
  changeCounters(): ChangeCounters;

  /** The bus of this engine's database (see `Bus`): in memory on SQLite, `LISTEN`/`NOTIFY` on PostgreSQL. */
  openBus(log: Logger): Promise<Bus>;

  /** The folder of the engine's committed migrations (its journal: `meta/_journal.json`). */
  readonly migrationsFolder: string;
}
