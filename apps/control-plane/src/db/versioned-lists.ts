import { sql, type SQL } from 'drizzle-orm';
import type { ListCursor, ListRequest, Page, Stored, StoredText } from '../domain/list-types.js';
import type { ChangeCounters } from './ports.js';
import { QueryBudgetExceeded, RejectedPattern, type Database } from './database.js';
import { budgetError, fieldExpression, parseFilter, parseSort, patternError, type ExpressionOptions, type ModelFields } from './list-query.js';

/** Bounds of a repository's lists and stored documents. */
export interface RepositoryLimits {
  /** Wall-clock budget of one list query, in milliseconds (`withQueryBudget`). */
  readonly queryBudgetMs: number;
  /** The largest `data` stored, as JSON in UTF-8 bytes. */
  readonly maxDataBytes: number;
}

/** A row of a versioned table as read by the repository (`COLUMNS`). */
export interface Row {
  id: string;
  version: number;
  time_updated: number;
  time_deleted: number;
  initiator_id: string | null;
  data: string;
}

export const COLUMNS = sql.raw('id, version, time_updated, time_deleted, initiator_id, data');

/** The most rows, and about the most bytes, one `ListCursor.next()` reads. */
const BATCH_ROWS = 256;
const BATCH_BYTES = 512 * 1024;

/** A row of `textColumns`, its `data` a Buffer on SQLite and a string on PostgreSQL (`SqlEngine.storedText`). */
type TextRow = Omit<StoredText, 'data'> & { data: Buffer | string };

function textRow(row: TextRow): StoredText {
  return typeof row.data === 'string' ? { ...row, data: Buffer.from(row.data) } : (row as StoredText);
}

/**
 * The list queries of one versioned table (`VersionedRepository` hands its lists here):
 * filters and sorts as api-v1 §4 says, pages with or without their total, cursors that read
 * every match in bounded batches, all under the query budget.
 */
export class VersionedLists<D> {
  /** The columns of a `TextRow`: the stored text of `data` as bytes, or as text turned into them (`textRow`). */
  private readonly textColumns: SQL;

  constructor(
    private readonly db: Database,
    private readonly table: SQL,
    private readonly fields: ModelFields,
    private readonly limits: RepositoryLimits,
    private readonly fromRow: (row: Row) => Stored<D>,
    private readonly liveTotal: LiveTotal | null = null,
  ) {
    this.textColumns = sql`pk, id, version, time_updated, time_deleted, initiator_id, ${db.engine.storedText('data')}`;
  }

  /**
   * A page of the versions of a model, deleted versions included, filtered and sorted as the
   * request says (api-v1 §4); newest first by default.
   */
  async listVersions(id: string, request: ListRequest): Promise<Page<Stored<D>>> {
    const page = await this.query((options) => {
      const { where, order } = this.versionClauses(id, request, options);
      return this.page<Row>(COLUMNS, where, order, request);
    });
    return { items: page.items.map((r) => this.fromRow(r)), total: page.total };
  }

  /** As `listVersions`, every match, read in batches (`ListCursor`). */
  async cursorVersions(id: string, request: ListRequest): Promise<ListCursor<StoredText>> {
    return this.readKeys(
      await this.query((options) => {
        const { where, order } = this.versionClauses(id, request, options);
        return this.keys(where, order);
      }),
    );
  }

  /**
   * The latest version of each model matching the request. Deleted models are left out
   * unless the filter names `time_deleted`, which then replaces that condition.
   */
  async list(request: ListRequest, extra?: SQL): Promise<Page<Stored<D>>> {
    const page = await this.listRows<Row>(COLUMNS, request, extra);
    return { items: page.items.map((r) => this.fromRow(r)), total: page.total };
  }

  /**
   * A condition for `list`'s `extra`: the data field `name` equals `value`, written into the
   * statement as a literal, not bound: a partial index whose predicate names that value can
   * then serve the query (a parameter cannot prove it). `value` is a constant of the
   * caller's, never a request's: a statement per value is prepared. It reads `data` of
   * whatever relation it stands in, this table or rows of it.
   */
  fieldEquals(name: string, value: string): SQL {
    const field = fieldExpression(this.fields, name, { engine: this.db.engine });
    return sql`${field.expr} = ${this.db.engine.dataLiteral(value)}`;
  }

  /**
   * A condition for `list`'s `extra`: the data field `name` holds JSON `true` (`wanted`), or
   * does not (absent, null or anything else: `!wanted`).
   */
  fieldIsTrue(name: string, wanted: boolean): SQL {
    const field = fieldExpression(this.fields, name, { engine: this.db.engine });
    const literal = this.db.engine.dataLiteral(true);
    return wanted ? sql`${field.expr} = ${literal}` : sql`(${field.expr} IS NULL OR ${field.expr} <> ${literal})`;
  }

  /**
   * The key, id and version of the latest, live models meeting `condition`, in the order they
   * were stored (`pk`), from the first stored after `afterPk`, at most `limit`: for a caller
   * that walks a queue page by page and keeps the models it has read, reading again only
   * those of a new version (`getMany`). `index` is a partial index on `pk` whose predicate is
   * `condition`: the rows come out of it in order, and nothing else of them is computed (an
   * order on a field of `data` would parse each row's JSON on PostgreSQL, index or not).
   * SQLite is told to use it (`INDEXED BY`).
   */
  async idsInStoredOrder(condition: SQL, index: string, afterPk: number, limit: number): Promise<{ pk: number; id: string; version: number }[]> {
    const from = this.db.engine.indexHint(this.table, index);
    return this.db.all<{ pk: number; id: string; version: number }>(
      sql`SELECT pk, id, version FROM ${from} WHERE is_latest = 1 AND time_deleted = 0 AND ${condition} AND pk > ${afterPk} ORDER BY pk LIMIT ${limit}`,
    );
  }

  /** As `list`, each model's `data` left as the stored JSON text (see `StoredText`). */
  async listText(request: ListRequest, extra?: SQL): Promise<Page<StoredText>> {
    const page = await this.listRows<TextRow>(this.textColumns, request, extra);
    return { items: page.items.map(textRow), total: page.total };
  }

  /** As `listText`, every match, read in batches (`ListCursor`). */
  async cursor(request: ListRequest, extra?: SQL): Promise<ListCursor<StoredText>> {
    return this.readKeys(
      await this.query((options) => {
        const { where, order } = this.listClauses(request, extra, options);
        return this.keys(where, order);
      }),
    );
  }

  /** A cursor over the rows of `keys`, in their order. */
  private readKeys(keys: readonly number[]): ListCursor<StoredText> {
    let next = 0;
    const columns = this.textColumns;
    return {
      total: keys.length,
      next: async () => {
        const rows: StoredText[] = [];
        let bytes = 0;
        while (next < keys.length && rows.length < BATCH_ROWS && bytes < BATCH_BYTES) {
          const row = await this.db.get<TextRow>(sql`SELECT ${columns} FROM ${this.table} WHERE pk = ${keys[next++] as number}`);
          if (!row) continue;
          const text = textRow(row);
          rows.push(text);
          bytes += text.data.length;
        }
        return rows;
      },
    };
  }

  private listRows<R>(columns: SQL, request: ListRequest, extra: SQL | undefined): Promise<Page<R>> {
    // Every live model, outside a transaction (which may hold models not committed): the
    // total is the live count, cached while no model is created or deleted.
    const everyLive = this.liveTotal !== null && !request.filter && extra === undefined && !this.db.inTransaction();
    return this.query((options) => {
      const { where, order } = this.listClauses(request, extra, options);
      const count = everyLive ? () => this.liveTotal!.total(() => this.count(where)) : undefined;
      return this.page<R>(columns, where, order, request, count);
    });
  }

  private listClauses(request: ListRequest, extra: SQL | undefined, options: ExpressionOptions): { where: SQL; order: SQL } {
    const filter = parseFilter(this.fields, request.filter, options);
    const order = parseSort(this.fields, request.sortBy, options);
    const conditions: SQL[] = [sql`is_latest = 1`];
    if (!filter.namesTimeDeleted) conditions.push(sql`time_deleted = 0`);
    if (filter.where) conditions.push(filter.where);
    if (extra) conditions.push(extra);
    const budget = request.filter || request.sortBy ? this.db.engine.budgetCheck('pk') : null;
    if (budget) conditions.push(budget);
    return { where: sql.join(conditions, sql` AND `), order };
  }

  private versionClauses(id: string, request: ListRequest, options: ExpressionOptions): { where: SQL; order: SQL } {
    const filter = parseFilter(this.fields, request.filter, options);
    const order = parseSort(this.fields, request.sortBy, { ...options, defaultSort: [['version', -1]] });
    const conditions: SQL[] = [sql`id = ${id}`];
    if (filter.where) conditions.push(filter.where);
    const budget = filter.where ? this.db.engine.budgetCheck('pk') : null;
    if (budget) conditions.push(budget);
    return { where: sql.join(conditions, sql` AND `), order };
  }

  private async page<R>(columns: SQL, where: SQL, order: SQL, request: ListRequest, count: () => Promise<number> = () => this.count(where)): Promise<Page<R>> {
    const limit = request.all ? sql`` : sql` LIMIT ${request.perPage} OFFSET ${(request.page - 1) * request.perPage}`;
    const rows = await this.db.all<R>(sql`SELECT ${columns} FROM ${this.table} WHERE ${where} ORDER BY ${order}${limit}`);
    if (request.withoutTotal) return { items: rows, total: rows.length };
    return { items: rows, total: await count() };
  }

  private async count(where: SQL): Promise<number> {
    return (await this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${this.table} WHERE ${where}`))?.n ?? 0;
  }

  /** The keys of the matching rows, in order. */
  private async keys(where: SQL, order: SQL): Promise<number[]> {
    const rows = await this.db.all<{ pk: number }>(sql`SELECT pk FROM ${this.table} WHERE ${where} ORDER BY ${order}`);
    return rows.map((r) => r.pk);
  }

  /**
   * Runs the statements of a list under the query budget. SQLite's JSON functions fail the
   * whole statement on one stored document they cannot read; then the list runs once more
   * with guarded expressions (`ExpressionOptions.guarded`), which read such a document as
   * null. The first, indexed try keeps lists fast in the normal case.
   */
  private async query<T>(run: (options: ExpressionOptions) => Promise<T>): Promise<T> {
    const engine = this.db.engine;
    try {
      return await this.db.withBudget(this.limits.queryBudgetMs, async () => {
        try {
          return await run({ engine });
        } catch (e) {
          if (!this.db.isJsonError(e)) throw e;
          return run({ engine, guarded: true });
        }
      });
    } catch (e) {
      if (e instanceof RejectedPattern) throw patternError(e);
      throw e instanceof QueryBudgetExceeded ? budgetError(e) : e;
    }
  }
}

/**
 * The number of a table's live models, counted once and kept while the table's live count
 * (`liveCountKey`, bumped with every model created or deleted, in the same transaction) stays
 * where it was when the count began: a change to a model that creates or deletes none (new
 * facts, a state) leaves it. Exact: a count that raced a creation is kept at the count read
 * before it began, so the next list sees the counter moved and counts again.
 */
export class LiveTotal {
  private at = -1;
  private n = 0;

  constructor(
    private readonly changes: ChangeCounters,
    private readonly key: string,
  ) {}

  async total(count: () => Promise<number>): Promise<number> {
    const at = await this.changes.read([this.key]);
    if (at === this.at) return this.n;
    const n = await count();
    this.at = at;
    this.n = n;
    return n;
  }
}
