import { randomUUID } from 'node:crypto';
import { jsonEqual, MAX_DATA_DEPTH, nestsDeeper } from '@carapace/models';
import { and, eq, getTableName, sql, type SQL } from 'drizzle-orm';
import { SqliteError } from 'better-sqlite3';
import { ApiError, invalidJson, UniqueViolation } from '../errors.js';
import { tableChanges, type ChangeCounter } from './change-counter.js';
import { QueryBudgetExceeded, withQueryBudget, type Db } from './client.js';
import { budgetError, fieldExpression, parseFilter, parseSort, tableName, type ExpressionOptions, type ModelFields } from './list-query.js';
import type { ListCursor, ListRequest, Page, Stored, StoredText } from '../domain/list-types.js';
import type { VersionedTable } from './schema/versioned.js';


/** Bounds of a repository's lists and stored documents. */
export interface RepositoryLimits {
  /** Wall-clock budget of one list query, in milliseconds (`withQueryBudget`). */
  readonly queryBudgetMs: number;
  /** The largest `data` stored, as JSON in UTF-8 bytes. */
  readonly maxDataBytes: number;
}

/** The limits when none are given: those of the default configuration. */
export const DEFAULT_LIMITS: RepositoryLimits = { queryBudgetMs: 1000, maxDataBytes: 1_048_576 };
/** The most rows, and about the most bytes, one `ListCursor.next()` reads. */
const BATCH_ROWS = 256;
const BATCH_BYTES = 512 * 1024;

interface Row {
  id: string;
  version: number;
  time_updated: number;
  time_deleted: number;
  initiator_id: string | null;
  data: string;
}

const COLUMN_LIST = 'id, version, time_updated, time_deleted, initiator_id, data';
const COLUMNS = sql.raw(COLUMN_LIST);
const TEXT_COLUMN_LIST = 'pk, id, version, time_updated, time_deleted, initiator_id, CAST(data AS BLOB) AS data';
const TEXT_COLUMNS = sql.raw(TEXT_COLUMN_LIST);

/** An error SQLite's JSON functions raise on a stored document they cannot read. */
function isJsonError(e: unknown): boolean {
  return e instanceof SqliteError && /JSON/.test(e.message);
}

/**
 * Storage of one kind of versioned model (api-v1 §5): every version is a row, a change
 * appends the next version in one transaction, and nothing is ever rewritten but the
 * `is_latest` mark.
 */
export class VersionedRepository<D> {
  private readonly latestById;
  private readonly byVersion;
  private readonly byPk;
  private readonly insertRow;
  private readonly unmarkLatest;
  private readonly limits: RepositoryLimits;

  /** Bumped by every write to the table, by this repository or another on the same table. */
  private readonly changes: ChangeCounter;
  /** The latest versions read, by id, when enabled (`options.cacheLatest`). */
  private readonly latest: Map<string, Stored<D>> | null;
  /** The value of `changes` the entries of `latest` were read at. */
  private latestAt = -1;
  private readonly latestMax: number;

  /**
   * `options.cacheLatest` (a number of models) keeps the latest versions read by `get` in
   * memory, for tables written seldom and read on many requests (users, roles): any write to
   * the table empties it (see `ChangeCounter`), and nothing read inside a transaction is
   * kept (it may be rolled back). Models handed out from it are frozen. `options.limits`
   * bounds list queries and stored documents (`DEFAULT_LIMITS` when not given).
   */
  constructor(
    private readonly db: Db,
    private readonly table: VersionedTable,
    readonly fields: ModelFields,
    options: { cacheLatest?: number; limits?: RepositoryLimits } = {},
  ) {
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.changes = tableChanges(db, getTableName(table));
    this.latestMax = options.cacheLatest ?? 0;
    this.latest = this.latestMax > 0 ? new Map() : null;
    const t = table;
    // `is_latest = 1` as a literal, not a bound parameter (Drizzle binds `eq(col, true)`):
    // whether the partial index `<table>_latest` (WHERE is_latest = 1) applies then depends
    // on the bound value, so SQLite recompiles the statement each time it is run with new
    // bindings, which tripled the cost of this lookup (the model read of every
    // `GET /v1/<model>/{id}/` and the check of every change). The reads are plain
    // better-sqlite3 statements: Drizzle's row mapping cost as much as the query.
    const isLatest = sql`${t.isLatest} = 1`;
    const name = getTableName(t).replace(/"/g, '""');
    this.latestById = db.$client.prepare<[string], Row>(`SELECT ${COLUMN_LIST} FROM "${name}" WHERE id = ? AND is_latest = 1`);
    this.byVersion = db.$client.prepare<[string, number], Row>(`SELECT ${COLUMN_LIST} FROM "${name}" WHERE id = ? AND version = ?`);
    this.byPk = db.$client.prepare<[number], StoredText>(`SELECT ${TEXT_COLUMN_LIST} FROM "${name}" WHERE pk = ?`);
    this.insertRow = db.$client.prepare<[string, number, number, number, string | null, string]>(
      `INSERT INTO "${name}" (id, version, time_updated, time_deleted, initiator_id, is_latest, data) VALUES (?, ?, ?, ?, ?, 1, ?)`,
    );
    this.unmarkLatest = db
      .update(t)
      .set({ isLatest: false })
      .where(and(eq(t.id, sql.placeholder('id')), isLatest))
      .prepare();
  }

  /** The latest version of a model, deleted or not. */
  get(id: string): Stored<D> | undefined {
    const cache = this.latest;
    if (!cache) {
      const row = this.latestById.get(id);
      return row && this.fromRow(row);
    }
    if (this.latestAt !== this.changes.value) {
      cache.clear();
      this.latestAt = this.changes.value;
    }
    const cached = cache.get(id);
    if (cached) return cached;
    const row = this.latestById.get(id);
    if (!row) return undefined;
    const model = this.fromRow(row);
    if (this.db.$client.inTransaction) return model;
    if (cache.size >= this.latestMax) {
      const oldest = cache.keys().next();
      if (!oldest.done) cache.delete(oldest.value);
    }
    Object.freeze(model.data);
    cache.set(id, Object.freeze(model));
    return model;
  }

  /** One version of a model. */
  getVersion(id: string, version: number): Stored<D> | undefined {
    const row = this.byVersion.get(id, version);
    return row && this.fromRow(row);
  }

  /**
   * A page of the versions of a model, deleted versions included, filtered and sorted as the
   * request says (api-v1 §4); newest first by default.
   */
  listVersions(id: string, request: ListRequest): Page<Stored<D>> {
    const page = this.query((options) => {
      const { where, order } = this.versionClauses(id, request, options);
      return this.page<Row>(COLUMNS, where, order, request);
    });
    return { items: page.items.map((r) => this.fromRow(r)), total: page.total };
  }

  /** How many versions a model has (0 when the id is unknown). */
  countVersions(id: string): number {
    return this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${tableName(this.table)} WHERE id = ${id}`).n;
  }

  /** As `listVersions`, every match, read in batches (`ListCursor`). */
  cursorVersions(id: string, request: ListRequest): ListCursor<StoredText> {
    return this.readKeys(
      this.query((options) => {
        const { where, order } = this.versionClauses(id, request, options);
        return this.keys(where, order);
      }),
    );
  }

  /**
   * The latest version of each model matching the request. Deleted models are left out
   * unless the filter names `time_deleted`, which then replaces that condition.
   */
  list(request: ListRequest, extra?: SQL): Page<Stored<D>> {
    const page = this.listRows<Row>(COLUMNS, request, extra);
    return { items: page.items.map((r) => this.fromRow(r)), total: page.total };
  }

  /** As `list`, each model's `data` left as the stored JSON text (see `StoredText`). */
  listText(request: ListRequest, extra?: SQL): Page<StoredText> {
    return this.listRows<StoredText>(TEXT_COLUMNS, request, extra);
  }

  /** As `listText`, every match, read in batches (`ListCursor`). */
  cursor(request: ListRequest, extra?: SQL): ListCursor<StoredText> {
    return this.readKeys(
      this.query((options) => {
        const { where, order } = this.listClauses(request, extra, options);
        return this.keys(where, order);
      }),
    );
  }

  /** A cursor over the rows of `keys`, in their order. */
  private readKeys(keys: readonly number[]): ListCursor<StoredText> {
    let next = 0;
    return {
      total: keys.length,
      next: () => {
        const rows: StoredText[] = [];
        let bytes = 0;
        while (next < keys.length && rows.length < BATCH_ROWS && bytes < BATCH_BYTES) {
          const row = this.byPk.get(keys[next++] as number);
          if (!row) continue;
          rows.push(row);
          bytes += row.data.length;
        }
        return rows;
      },
    };
  }

  private listRows<R>(columns: SQL, request: ListRequest, extra: SQL | undefined): Page<R> {
    return this.query((options) => {
      const { where, order } = this.listClauses(request, extra, options);
      return this.page<R>(columns, where, order, request);
    });
  }

  private listClauses(request: ListRequest, extra: SQL | undefined, options: ExpressionOptions): { where: SQL; order: SQL } {
    const filter = parseFilter(this.fields, request.filter, options);
    const order = parseSort(this.fields, request.sortBy, options);
    const conditions: SQL[] = [sql`is_latest = 1`];
    if (!filter.namesTimeDeleted) conditions.push(sql`time_deleted = 0`);
    if (filter.where) conditions.push(filter.where);
    if (extra) conditions.push(extra);
    if (request.filter || request.sortBy) conditions.push(sql`budget_check(pk)`);
    return { where: sql.join(conditions, sql` AND `), order };
  }

  private versionClauses(id: string, request: ListRequest, options: ExpressionOptions): { where: SQL; order: SQL } {
    const filter = parseFilter(this.fields, request.filter, options);
    const order = parseSort(this.fields, request.sortBy, { ...options, defaultSort: [['version', -1]] });
    const conditions: SQL[] = [sql`id = ${id}`];
    if (filter.where) conditions.push(filter.where, sql`budget_check(pk)`);
    return { where: sql.join(conditions, sql` AND `), order };
  }

  private page<R>(columns: SQL, where: SQL, order: SQL, request: ListRequest): Page<R> {
    const name = tableName(this.table);
    const count = this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${name} WHERE ${where}`);
    const limit = request.all ? sql`` : sql` LIMIT ${request.perPage} OFFSET ${(request.page - 1) * request.perPage}`;
    const rows = this.db.all<R>(sql`SELECT ${columns} FROM ${name} WHERE ${where} ORDER BY ${order}${limit}`);
    return { items: rows, total: count.n };
  }

  /** The keys of the matching rows, in order. */
  private keys(where: SQL, order: SQL): number[] {
    return this.db.values<[number]>(sql`SELECT pk FROM ${tableName(this.table)} WHERE ${where} ORDER BY ${order}`).map((r) => r[0]);
  }

  /**
   * Runs the statements of a list under the query budget. SQLite's JSON functions fail the
   * whole statement on one stored document they cannot read; then the list runs once more
   * with guarded expressions (`ExpressionOptions.guarded`), which read such a document as
   * null. The first, indexed try keeps lists fast in the normal case.
   */
  private query<T>(run: (options: ExpressionOptions) => T): T {
    try {
      return withQueryBudget(this.db, this.limits.queryBudgetMs, () => {
        try {
          return run({});
        } catch (e) {
          if (!isJsonError(e)) throw e;
          return run({ guarded: true });
        }
      });
    } catch (e) {
      throw e instanceof QueryBudgetExceeded ? budgetError(e) : e;
    }
  }

  /** The live model whose `field` equals `value` (a field with a unique index). */
  findLive(field: string, value: string): Stored<D> | undefined {
    const expr = fieldExpression(this.fields, field);
    const row = this.db.get<Row | undefined>(
      sql`SELECT ${COLUMNS} FROM ${tableName(this.table)} WHERE is_latest = 1 AND time_deleted = 0 AND ${expr} = ${value}`,
    );
    return row && this.fromRow(row);
  }

  /** How many live models have `field` equal to `value`. */
  countLive(field: string, value: string): number {
    const expr = fieldExpression(this.fields, field);
    const row = this.db.get<{ n: number }>(
      sql`SELECT count(*) AS n FROM ${tableName(this.table)} WHERE is_latest = 1 AND time_deleted = 0 AND ${expr} = ${value}`,
    );
    return row.n;
  }

  /** Stores version 1 of a new model. */
  create(data: D, initiatorId: string | null, now: number, id: string = randomUUID()): Stored<D> {
    const model: Stored<D> = { id, version: 1, time_updated: now, time_deleted: 0, initiator_id: initiatorId, data };
    this.insert(model);
    return model;
  }

  /**
   * Appends a new version of the latest one, changed by `change`; the caller holds the
   * transaction and has checked that the model may change. A change that changes nothing
   * (the same `time_deleted`, and `data` equal as JSON: key order and keys holding
   * `undefined` do not count) stores nothing and returns `latest`: a version is a change.
   */
  append(
    latest: Stored<D>,
    change: { data?: D; time_deleted?: number },
    initiatorId: string | null,
    now: number,
  ): Stored<D> {
    if ((change.time_deleted ?? latest.time_deleted) === latest.time_deleted && (change.data === undefined || jsonEqual(change.data, latest.data))) {
      return latest;
    }
    const next: Stored<D> = {
      id: latest.id,
      version: latest.version + 1,
      time_updated: now,
      time_deleted: change.time_deleted ?? latest.time_deleted,
      initiator_id: initiatorId,
      data: change.data ?? latest.data,
    };
    this.changes.bump();
    this.unmarkLatest.run({ id: latest.id });
    this.insert(next);
    return next;
  }

  /** Runs `fn` in one (synchronous) transaction. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn);
  }

  private insert(model: Stored<D>): void {
    if (nestsDeeper(model.data, MAX_DATA_DEPTH)) {
      throw invalidJson(`The data of a model may nest at most ${MAX_DATA_DEPTH} levels of objects and arrays.`);
    }
    const text = JSON.stringify(model.data);
    const bytes = Buffer.byteLength(text);
    if (bytes > this.limits.maxDataBytes) {
      throw new ApiError(
        413,
        'PayloadTooLarge',
        `The data of a model is at most ${this.limits.maxDataBytes} bytes as JSON; this one is ${bytes} bytes.`,
      );
    }
    this.changes.bump();
    try {
      this.insertRow.run(model.id, model.version, model.time_updated, model.time_deleted, model.initiator_id, text);
    } catch (e) {
      if (e instanceof SqliteError && e.code === 'SQLITE_CONSTRAINT_UNIQUE') {
        const field = /json_extract\(data, '\$\.(\w+)'\)|\.(\w+)$/.exec(e.message);
        throw new UniqueViolation(field?.[1] ?? field?.[2] ?? 'id');
      }
      throw e;
    }
  }

  private fromRow(r: Row): Stored<D> {
    return {
      id: r.id,
      version: r.version,
      time_updated: r.time_updated,
      time_deleted: r.time_deleted,
      initiator_id: r.initiator_id,
      data: JSON.parse(r.data) as D,
    };
  }
}
