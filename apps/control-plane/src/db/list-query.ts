import { getTableName, sql, type SQL } from 'drizzle-orm';
import { badRequest } from '../errors.js';
import type { ApiError } from '../errors.js';
import type { QueryBudgetExceeded, RejectedPattern } from './database.js';
import type { ColumnType, FieldKind, SqlEngine } from './engine.js';
import { compileRegexp } from './regexp.js';
import type { VersionedTable } from './schema/versioned.js';

export type { ColumnType } from './engine.js';

/** Which fields of a model's `data` may be filtered and sorted on, and the default order. */
export interface ModelFields {
  /** Top-level `data` fields; a dotted path below one of them is allowed too. */
  readonly data: readonly string[];
  /** Default order: field and direction (1 ascending, -1 descending). */
  readonly defaultSort: readonly (readonly [string, 1 | -1])[];
  /**
   * For tables that are not versioned models: field name → column and its type. When set,
   * only these fields exist.
   */
  readonly columns?: Readonly<Record<string, readonly [column: string, type: ColumnType]>>;
  /** The column that orders rows equal on every sort field (default `pk`). */
  readonly tiebreak?: string;
}

// Looked up as own entries only: `name in {...}` also finds `toString`, `constructor`,
// `__proto__` and the rest of Object.prototype.
const ENVELOPE_COLUMNS: ReadonlyMap<string, readonly [string, ColumnType]> = new Map([
  ['id', ['id', 'text']],
  ['version', ['version', 'number']],
  ['time_updated', ['time_updated', 'number']],
  ['time_deleted', ['time_deleted', 'number']],
  ['initiator_id', ['initiator_id', 'text']],
]);
const OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'regexp'] as const;
type Operator = (typeof OPERATORS)[number];
const OPERATOR_SET: ReadonlySet<string> = new Set(OPERATORS);
export type Scalar = string | number | boolean | null;
const MAX_CONDITIONS = 32;
const MAX_IN_VALUES = 1000;
const PATH_PART = /^[A-Za-z0-9_]{1,64}$/;

/** How the expressions of fields are written (see `fieldExpression`). */
export interface ExpressionOptions {
  /** The engine the SQL is for. */
  readonly engine: SqlEngine;
  /**
   * SQLite: guard each `json_extract` with `json_valid`, so that a row whose data SQLite's
   * JSON functions reject (nested deeper than SQLite's limit, stored before the write bounds)
   * reads as null instead of failing the whole query. The guarded expressions do not match
   * the expression indexes: lists use them only when the indexed form has failed.
   */
  readonly guarded?: boolean;
}

/** A field as SQL: the expression compared and sorted on, its text for `regexp`, and how values bind to it. */
export interface FieldExpression {
  readonly expr: SQL;
  readonly text: SQL;
  /** `json`: a field of `data`; otherwise a column of that type. */
  readonly kind: FieldKind;
}

/**
 * The SQL expression of a field. Envelope fields are columns; data fields are the exact
 * expression the expression indexes are built on (`SqlEngine.dataField`: on SQLite
 * `json_extract(data, '$.a.b')`, or its guarded form, `options.guarded`). The name is checked
 * against the model's fields first, so it is safe to embed.
 */
export function fieldExpression(fields: ModelFields, name: string, options: ExpressionOptions): FieldExpression {
  const engine = options.engine;
  const column = (c: readonly [string, ColumnType]): FieldExpression => ({
    expr: sql.raw(c[0]),
    text: engine.columnText(c[0], c[1]),
    kind: c[1],
  });
  if (fields.columns) {
    const found = Object.hasOwn(fields.columns, name) ? fields.columns[name] : undefined;
    if (!found) throw badRequest(`Unknown field "${name.slice(0, 100)}": fields are ${Object.keys(fields.columns).join(', ')}.`);
    return column(found);
  }
  const envelope = ENVELOPE_COLUMNS.get(name);
  if (envelope) return column(envelope);
  const parts = name.split('.');
  const top = parts[0] ?? '';
  if (!fields.data.includes(top) || parts.length > 8 || !parts.every((p) => PATH_PART.test(p))) {
    throw badRequest(`Unknown field "${name.slice(0, 100)}": fields are ${[...ENVELOPE_COLUMNS.keys(), ...fields.data].join(', ')}.`);
  }
  return { ...engine.dataField(parts, options.guarded ?? false), kind: 'json' };
}

/** A value bound for comparison with a field: JSON for data fields on PostgreSQL; a 400 when a column's type differs. */
export function bindValue(engine: SqlEngine, field: FieldExpression, name: string, value: string | number | boolean): SQL {
  if (field.kind !== 'json') {
    const type: ColumnType = typeof value === 'string' ? 'text' : 'number';
    if (type !== field.kind) throw badRequest(`Filter on "${name.slice(0, 100)}" takes a ${field.kind === 'text' ? 'string' : 'number'}.`);
  }
  return engine.bindField(field.kind, value);
}

/** The field holds one of `values` (null: the field is null or absent), the values bound; no value: false. */
export function fieldIn(engine: SqlEngine, field: FieldExpression, name: string, values: readonly Scalar[]): SQL {
  const present = values.filter((v): v is string | number | boolean => v !== null);
  const parts: SQL[] = [];
  if (present.length) parts.push(sql`${field.expr} IN (${sql.join(present.map((v) => bindValue(engine, field, name, v)), sql`, `)})`);
  if (present.length < values.length) parts.push(sql`${field.expr} IS NULL`);
  if (parts.length === 0) return sql`1 = 0`;
  return parts.length === 1 ? (parts[0] as SQL) : sql`(${sql.join(parts, sql` OR `)})`;
}

function parseJsonParam(name: string, text: string | undefined): Record<string, unknown> {
  if (text === undefined || text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest(`Query parameter "${name}" is not valid JSON.`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest(`Query parameter "${name}" must be a JSON object.`);
  }
  return value as Record<string, unknown>;
}

function scalar(field: string, value: unknown): Scalar {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw badRequest(`Filter on "${field}" takes a string, number, boolean or null.`);
}

function condition(engine: SqlEngine, field: FieldExpression, name: string, op: Operator, raw: unknown): SQL {
  const expr = field.expr;
  const bind = (v: string | number | boolean): SQL => bindValue(engine, field, name, v);
  switch (op) {
    case 'eq': {
      const v = scalar(name, raw);
      return v === null ? sql`${expr} IS NULL` : sql`${expr} = ${bind(v)}`;
    }
    case 'ne': {
      const v = scalar(name, raw);
      return v === null ? sql`${expr} IS NOT NULL` : sql`(${expr} IS NULL OR ${expr} <> ${bind(v)})`;
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const v = scalar(name, raw);
      const operator = sql.raw({ gt: '>', gte: '>=', lt: '<', lte: '<=' }[op]);
      // Nothing is ordered against null.
      return v === null ? sql`1 = 0` : sql`${expr} ${operator} ${bind(v)}`;
    }
    case 'in': {
      if (!Array.isArray(raw) || raw.length > MAX_IN_VALUES) {
        throw badRequest(`Filter "in" on "${name}" takes a list of at most ${MAX_IN_VALUES} values.`);
      }
      return fieldIn(engine, field, name, raw.map((v) => scalar(name, v)));
    }
    case 'regexp': {
      if (typeof raw !== 'string') throw badRequest(`Filter "regexp" on "${name}" takes a string.`);
      try {
        compileRegexp(raw);
      } catch (e) {
        throw badRequest(`Filter "regexp" on "${name}": ${(e as Error).message}.`);
      }
      // PostgreSQL's own engine runs it (bounded by statement_timeout); SQLite calls RE2.
      return engine.regexpMatch(field.text, raw);
    }
  }
}

/** The parsed `filter` of a list: its SQL, and whether it names `time_deleted`. */
export interface ParsedFilter {
  readonly where: SQL | undefined;
  readonly namesTimeDeleted: boolean;
}

/** Parses the `filter` query parameter (api-v1 §4) into SQL; a 400 on anything unknown. */
export function parseFilter(fields: ModelFields, text: string | undefined, options: ExpressionOptions): ParsedFilter {
  const filter = parseJsonParam('filter', text);
  const parts: SQL[] = [];
  for (const [field, spec] of Object.entries(filter)) {
    const expr = fieldExpression(fields, field, options);
    if (typeof spec === 'object' && spec !== null && !Array.isArray(spec)) {
      const ops = Object.entries(spec as Record<string, unknown>);
      if (ops.length === 0) throw badRequest(`Filter on "${field}" names no operator.`);
      for (const [op, value] of ops) {
        if (!OPERATOR_SET.has(op)) {
          throw badRequest(`Unknown filter operator "${op.slice(0, 32)}": operators are ${OPERATORS.join(', ')}.`);
        }
        parts.push(condition(options.engine, expr, field, op as Operator, value));
      }
    } else {
      parts.push(condition(options.engine, expr, field, 'eq', spec));
    }
    if (parts.length > MAX_CONDITIONS) throw badRequest(`A filter takes at most ${MAX_CONDITIONS} conditions.`);
  }
  return {
    where: parts.length ? sql.join(parts, sql` AND `) : undefined,
    namesTimeDeleted: Object.hasOwn(filter, 'time_deleted'),
  };
}

/**
 * Parses the `sort_by` query parameter into an ORDER BY list; when empty, `defaultSort` (the
 * model's default unless given).
 */
export function parseSort(
  fields: ModelFields,
  text: string | undefined,
  options: ExpressionOptions & { readonly defaultSort?: ModelFields['defaultSort'] },
): SQL {
  const sort = parseJsonParam('sort_by', text);
  const entries = Object.entries(sort);
  if (entries.length > 8) throw badRequest('sort_by takes at most 8 fields.');
  const order = entries.length ? entries : (options.defaultSort ?? fields.defaultSort);
  const parts = order.map(([field, dir]) => {
    if (dir !== 1 && dir !== -1) throw badRequest(`sort_by of "${field.slice(0, 100)}" must be 1 or -1.`);
    const { expr } = fieldExpression(fields, field, options);
    // NULLs first ascending, last descending, in both engines (SQLite's order).
    return dir === 1 ? sql`${expr} ASC${options.engine.nullsOrder('FIRST')}` : sql`${expr} DESC${options.engine.nullsOrder('LAST')}`;
  });
  parts.push(sql`${sql.raw(fields.tiebreak ?? 'pk')} ASC`);
  return sql.join(parts, sql`, `);
}

/** The answer to a list whose `regexp` the database's engine refused. */
export function patternError(e: RejectedPattern): ApiError {
  return badRequest(`Filter "regexp": ${e.message}.`);
}

/** The answer to a list query stopped at its time budget (`withQueryBudget`). */
export function budgetError(e: QueryBudgetExceeded): ApiError {
  return badRequest(
    `The list query took longer than its budget of ${e.budgetMs} ms and was stopped: narrow the filter (a regexp on a long field is slow) or sort on an indexed field.`,
  );
}

/** The table name of a versioned table, as an SQL identifier. */
export function tableName(table: VersionedTable): SQL {
  return sql`${sql.identifier(getTableName(table))}`;
}
