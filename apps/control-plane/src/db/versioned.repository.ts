import { randomUUID } from 'node:crypto';
import { and, desc, eq, getTableName, sql, type SQL } from 'drizzle-orm';
import { SqliteError } from 'better-sqlite3';
import { UniqueViolation } from '../errors.js';
import { tableChanges, type ChangeCounter } from './change-counter.js';
import type { Db } from './client.js';
import { fieldExpression, parseFilter, parseSort, tableName, type ModelFields } from './list-query.js';
import type { VersionedTable } from './schema/versioned.js';

/** One stored version of a model: the envelope without `model`, and its `data`. */
export interface Stored<D> {
  readonly id: string;
  readonly version: number;
  readonly time_updated: number;
  readonly time_deleted: number;
  readonly initiator_id: string | null;
  readonly data: D;
}

/**
 * One stored version with its `data` as stored: the JSON text, in UTF-8, unparsed; `pk` is
 * the row's key (a row's data is never rewritten, so `pk` names its content for good).
 */
export interface StoredText extends Omit<Stored<unknown>, 'data'> {
  readonly pk: number;
  readonly data: Buffer;
}

/**
 * An item of a list page to write as stored: the row, when its data JSON is exactly what the
 * API serves, or else the parsed model, to serialize.
 */
export type ListItem<D> = { readonly row: StoredText; readonly model?: undefined } | { readonly row?: undefined; readonly model: Stored<D> };

/** What a list asks for: a page, or everything, with a filter and an order. */
export interface ListRequest {
  readonly page: number;
  readonly perPage: number;
  readonly all: boolean;
  readonly filter?: string | undefined;
  readonly sortBy?: string | undefined;
}

/** A page of results and the number of all matches. */
export interface Page<T> {
  readonly items: T[];
  readonly total: number;
}

/** The result of an update that checks the envelope the caller last read. */
export type UpdateResult<D> =
  | { readonly ok: true; readonly model: Stored<D> }
  | { readonly ok: false; readonly reason: 'not_found' | 'stale' | 'deleted' };

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
const TEXT_COLUMNS = sql.raw('pk, id, version, time_updated, time_deleted, initiator_id, CAST(data AS BLOB) AS data');

/**
 * Storage of one kind of versioned model (api-v1 §5): every version is a row, a change
 * appends the next version in one transaction, and nothing is ever rewritten but the
 * `is_latest` mark.
 */
export class VersionedRepository<D> {
  private readonly latestById;
  private readonly byVersion;
  private readonly unmarkLatest;

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
   * kept (it may be rolled back). Models handed out from it are frozen.
   */
  constructor(
    private readonly db: Db,
    private readonly table: VersionedTable,
    readonly fields: ModelFields,
    options: { cacheLatest?: number } = {},
  ) {
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

  /** Every version of a model, newest first, deleted versions included. */
  listVersions(id: string, request: ListRequest): Page<Stored<D>> {
    const t = this.table;
    const total = this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${tableName(t)} WHERE id = ${id}`).n;
    let query = this.db.select().from(t).where(eq(t.id, id)).orderBy(desc(t.version)).$dynamic();
    if (!request.all) query = query.limit(request.perPage).offset((request.page - 1) * request.perPage);
    return { items: query.all().map((r) => this.fromDrizzle(r)), total };
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

  private listRows<R>(columns: SQL, request: ListRequest, extra: SQL | undefined): Page<R> {
    const filter = parseFilter(this.fields, request.filter);
    const order = parseSort(this.fields, request.sortBy);
    const conditions: SQL[] = [sql`is_latest = 1`];
    if (!filter.namesTimeDeleted) conditions.push(sql`time_deleted = 0`);
    if (filter.where) conditions.push(filter.where);
    if (extra) conditions.push(extra);
    const where = sql.join(conditions, sql` AND `);
    const name = tableName(this.table);
    const count = this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${name} WHERE ${where}`);
    const limit = request.all ? sql`` : sql` LIMIT ${request.perPage} OFFSET ${(request.page - 1) * request.perPage}`;
    const rows = this.db.all<R>(sql`SELECT ${columns} FROM ${name} WHERE ${where} ORDER BY ${order}${limit}`);
    return { items: rows, total: count.n };
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
   * Appends the next version with new `data`, if the latest stored version still has the
   * envelope the caller read (`expected`); the check and the write are one transaction.
   */
  update(expected: Omit<Stored<unknown>, 'data'>, data: D, initiatorId: string | null, now: number): UpdateResult<D> {
    return this.db.transaction(() => {
      const latest = this.get(expected.id);
      if (!latest) return { ok: false, reason: 'not_found' } as const;
      if (latest.time_deleted !== 0) return { ok: false, reason: 'deleted' } as const;
      if (
        latest.version !== expected.version ||
        latest.time_updated !== expected.time_updated ||
        latest.time_deleted !== expected.time_deleted ||
        latest.initiator_id !== expected.initiator_id
      ) {
        return { ok: false, reason: 'stale' } as const;
      }
      return { ok: true, model: this.append(latest, { data }, initiatorId, now) } as const;
    });
  }

  /**
   * Appends a new version of the latest one, changed by `change`; the caller holds the
   * transaction and has checked that the model may change.
   */
  append(
    latest: Stored<D>,
    change: { data?: D; time_deleted?: number },
    initiatorId: string | null,
    now: number,
  ): Stored<D> {
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
    this.changes.bump();
    try {
      this.db
        .insert(this.table)
        .values({
          id: model.id,
          version: model.version,
          timeUpdated: model.time_updated,
          timeDeleted: model.time_deleted,
          initiatorId: model.initiator_id,
          isLatest: true,
          data: model.data as Record<string, unknown>,
        })
        .run();
    } catch (e) {
      if (e instanceof SqliteError && e.code === 'SQLITE_CONSTRAINT_UNIQUE') {
        const field = /json_extract\(data, '\$\.(\w+)'\)|\.(\w+)$/.exec(e.message);
        throw new UniqueViolation(field?.[1] ?? field?.[2] ?? 'id');
      }
      throw e;
    }
  }

  private fromDrizzle(r: VersionedTable['$inferSelect']): Stored<D> {
    return {
      id: r.id,
      version: r.version,
      time_updated: r.timeUpdated,
      time_deleted: r.timeDeleted,
      initiator_id: r.initiatorId,
      data: r.data as D,
    };
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
