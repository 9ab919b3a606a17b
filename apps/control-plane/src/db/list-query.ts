import { getTableName, sql, type SQL } from 'drizzle-orm';
import { badRequest } from '../errors.js';
import type { ApiError } from '../errors.js';
import { compileRegexp, type QueryBudgetExceeded } from './client.js';
import type { VersionedTable } from './schema/versioned.js';

/** Which fields of a model's `data` may be filtered and sorted on, and the default order. */
export interface ModelFields {
  /** Top-level `data` fields; a dotted path below one of them is allowed too. */
  readonly data: readonly string[];
  /** Default order: field and direction (1 ascending, -1 descending). */
  readonly defaultSort: readonly (readonly [string, 1 | -1])[];
  /**
   * For tables that are not versioned models: field name → column. When set, only these
   * fields exist.
   */
  readonly columns?: Readonly<Record<string, string>>;
}

// Looked up as own entries only: `name in {...}` also finds `toString`, `constructor`,
// `__proto__` and the rest of Object.prototype.
const ENVELOPE_COLUMNS: ReadonlyMap<string, string> = new Map([
  ['id', 'id'],
  ['version', 'version'],
  ['time_updated', 'time_updated'],
  ['time_deleted', 'time_deleted'],
  ['initiator_id', 'initiator_id'],
]);
const OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'regexp'] as const;
type Operator = (typeof OPERATORS)[number];
const OPERATOR_SET: ReadonlySet<string> = new Set(OPERATORS);
type Scalar = string | number | boolean | null;
const MAX_CONDITIONS = 32;
const MAX_IN_VALUES = 1000;
const PATH_PART = /^[A-Za-z0-9_]{1,64}$/;

/** How the expressions of `data` fields are written (see `fieldExpression`). */
export interface ExpressionOptions {
  /**
   * Guard each `json_extract` with `json_valid`, so that a row whose data SQLite's JSON
   * functions reject (nested deeper than SQLite's limit, stored before the write bounds)
   * reads as null instead of failing the whole query. The guarded expressions do not match
   * the expression indexes: lists use them only when the indexed form has failed.
   */
  readonly guarded?: boolean;
}

/**
 * The SQL expression of a field. Envelope fields are columns; data fields are the exact
 * `json_extract(data, '$.field')` expression the expression indexes are built on (or its
 * guarded form, `options.guarded`). The name is checked against the model's fields first,
 * so it is safe to embed.
 */
export function fieldExpression(fields: ModelFields, name: string, options: ExpressionOptions = {}): SQL {
  if (fields.columns) {
    const column = Object.hasOwn(fields.columns, name) ? fields.columns[name] : undefined;
    if (!column) throw badRequest(`Unknown field "${name.slice(0, 100)}": fields are ${Object.keys(fields.columns).join(', ')}.`);
    return sql.raw(column);
  }
  const envelope = ENVELOPE_COLUMNS.get(name);
  if (envelope) return sql.raw(envelope);
  const parts = name.split('.');
  const top = parts[0] ?? '';
  if (!fields.data.includes(top) || parts.length > 8 || !parts.every((p) => PATH_PART.test(p))) {
    throw badRequest(`Unknown field "${name.slice(0, 100)}": fields are ${[...ENVELOPE_COLUMNS.keys(), ...fields.data].join(', ')}.`);
  }
  const extract = `json_extract(data, '$.${parts.join('.')}')`;
  return sql.raw(options.guarded ? `(CASE WHEN json_valid(data) THEN ${extract} END)` : extract);
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

function bind(value: Scalar): SQL {
  if (typeof value === 'boolean') return sql`${value ? 1 : 0}`;
  return sql`${value}`;
}

function condition(expr: SQL, field: string, op: Operator, raw: unknown): SQL {
  switch (op) {
    case 'eq': {
      const v = scalar(field, raw);
      return v === null ? sql`${expr} IS NULL` : sql`${expr} = ${bind(v)}`;
    }
    case 'ne': {
      const v = scalar(field, raw);
      return v === null ? sql`${expr} IS NOT NULL` : sql`(${expr} IS NULL OR ${expr} <> ${bind(v)})`;
    }
    case 'gt':
      return sql`${expr} > ${bind(scalar(field, raw))}`;
    case 'gte':
      return sql`${expr} >= ${bind(scalar(field, raw))}`;
    case 'lt':
      return sql`${expr} < ${bind(scalar(field, raw))}`;
    case 'lte':
      return sql`${expr} <= ${bind(scalar(field, raw))}`;
    case 'in': {
      if (!Array.isArray(raw) || raw.length > MAX_IN_VALUES) {
        throw badRequest(`Filter "in" on "${field}" takes a list of at most ${MAX_IN_VALUES} values.`);
      }
      if (raw.length === 0) return sql`0`;
      const values = raw.map((v) => bind(scalar(field, v)));
      return sql`${expr} IN (${sql.join(values, sql`, `)})`;
    }
    case 'regexp': {
      if (typeof raw !== 'string') throw badRequest(`Filter "regexp" on "${field}" takes a string.`);
      try {
        compileRegexp(raw);
      } catch (e) {
        throw badRequest(`Filter "regexp" on "${field}": ${(e as Error).message}.`);
      }
      return sql`regexp(${raw}, ${expr})`;
    }
  }
}

/** The parsed `filter` of a list: its SQL, and whether it names `time_deleted`. */
export interface ParsedFilter {
  readonly where: SQL | undefined;
  readonly namesTimeDeleted: boolean;
}

/** Parses the `filter` query parameter (api-v1 §4) into SQL; a 400 on anything unknown. */
export function parseFilter(fields: ModelFields, text: string | undefined, options: ExpressionOptions = {}): ParsedFilter {
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
        parts.push(condition(expr, field, op as Operator, value));
      }
    } else {
      parts.push(condition(expr, field, 'eq', spec));
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
  options: ExpressionOptions & { readonly defaultSort?: ModelFields['defaultSort'] } = {},
): SQL {
  const sort = parseJsonParam('sort_by', text);
  const entries = Object.entries(sort);
  if (entries.length > 8) throw badRequest('sort_by takes at most 8 fields.');
  const order = entries.length ? entries : (options.defaultSort ?? fields.defaultSort);
  const parts = order.map(([field, dir]) => {
    if (dir !== 1 && dir !== -1) throw badRequest(`sort_by of "${field.slice(0, 100)}" must be 1 or -1.`);
    const expr = fieldExpression(fields, field, options);
    return dir === 1 ? sql`${expr} ASC` : sql`${expr} DESC`;
  });
  parts.push(sql`rowid ASC`);
  return sql.join(parts, sql`, `);
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
