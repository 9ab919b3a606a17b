import { randomUUID } from 'node:crypto';
import { jsonEqual, MAX_DATA_DEPTH, nestsDeeper } from '@carapace/models';
import { getTableName, sql, type SQL } from 'drizzle-orm';
import { ApiError, invalidJson, UniqueViolation } from '../errors.js';
import { changeCounters, COUNTED_TABLES, type ChangeCounters } from './change-counter.js';
import { atomically, QueryBudgetExceeded, RejectedPattern, rowSource, textList, type Database } from './database.js';
import { bindValue, budgetError, patternError, fieldExpression, parseFilter, parseSort, tableName, type ExpressionOptions, type ModelFields } from './list-query.js';
import { ModelCache } from './model-cache.js';
import { SqliteDatabase } from './sqlite.js';
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

const COLUMNS = sql.raw('id, version, time_updated, time_deleted, initiator_id, data');
/** The stored text of `data` as bytes: SQLite hands a BLOB over as a Buffer; PostgreSQL's text is turned into one. */
const TEXT_COLUMNS = {
  sqlite: sql.raw('pk, id, version, time_updated, time_deleted, initiator_id, CAST(data AS BLOB) AS data'),
  postgres: sql.raw('pk, id, version, time_updated, time_deleted, initiator_id, data'),
} as const;

/** `\u0000` as JSON writes a NUL character: an odd number of backslashes before `u0000`. */
const ESCAPED_NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/;

/** A row of `TEXT_COLUMNS`, its `data` a Buffer on SQLite and a string on PostgreSQL. */
type TextRow = Omit<StoredText, 'data'> & { data: Buffer | string };

function textRow(row: TextRow): StoredText {
  return typeof row.data === 'string' ? { ...row, data: Buffer.from(row.data) } : (row as StoredText);
}

/**
 * Storage of one kind of versioned model (api-v1 §5): every version is a row, a change
 * appends the next version in one transaction, and nothing is ever rewritten but the
 * `is_latest` mark.
 */
export class VersionedRepository<D> {
  private readonly limits: RepositoryLimits;
  private readonly name: string;
  private readonly table: SQL;

  /** The writes to the table, by this repository or another on the same table. */
  private readonly changes: ChangeCounters;
  /** The latest versions read, by id, when enabled (`options.cacheLatest`). */
  private readonly latest: ModelCache<D> | null;
  /** The change count the entries of `latest` were read at. */
  private latestAt = -1;
  /** Versions read by `getVersion`, by `id@version`, when enabled (`options.cacheVersions`). */
  private readonly versions: ModelCache<D> | null;

  /**
   * `options.cacheLatest` (a number of models) keeps the latest versions read by `get` in
   * memory, for tables written seldom and read on many requests (users, roles): any write to
   * the table empties it (see `ChangeCounters`), and nothing read inside a transaction is
   * kept (it may be rolled back). Models handed out from it are frozen. `options.limits`
   * bounds list queries and stored documents (`DEFAULT_LIMITS` when not given).
   * `options.cacheVersions` (a number of versions) keeps the versions `getVersion` read, for
   * tables whose versions are read again and again (a configuration by each of its runs): a
   * version, once committed, never changes.
   */
  constructor(
    private readonly db: Database,
    table: VersionedTable,
    readonly fields: ModelFields,
    options: { cacheLatest?: number; cacheVersions?: number; limits?: RepositoryLimits } = {},
  ) {
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.name = getTableName(table);
    this.table = tableName(table);
    this.changes = changeCounters(db);
    this.latest = options.cacheLatest ? new ModelCache(options.cacheLatest) : null;
    this.versions = options.cacheVersions ? new ModelCache(options.cacheVersions) : null;
  }

  /** The latest version of a model, deleted or not. */
  async get(id: string): Promise<Stored<D> | undefined> {
    const cache = this.latest;
    if (!cache) return this.read(id);
    // The count is taken before the read: a write after it changes the count, so what is
    // read is never kept under a count it is older than.
    const at = await this.changes.read([this.name]);
    if (this.latestAt !== at) {
      cache.clear();
      this.latestAt = at;
    }
    const cached = cache.get(id);
    if (cached) return cached;
    const model = await this.read(id);
    if (!model || this.db.inTransaction() || this.latestAt !== at) return model;
    cache.set(id, model);
    return model;
  }

  /**
   * The latest version of a model, read to be changed: the caller holds the transaction, and
   * on PostgreSQL the row stays locked until it ends, so that two replicas changing one model
   * take turns instead of both appending the same next version.
   */
  async getForUpdate(id: string): Promise<Stored<D> | undefined> {
    return (await this.getManyForUpdate([id])).get(id);
  }


  /**
   * As `getForUpdate` for several models: their latest versions by id (unknown ids left
   * out), each locked until the caller's transaction ends. The locks are taken in one
   * statement, in the order of the sorted ids (unnest's order), so that two callers locking
   * overlapping sets take turns instead of waiting for each other.
   */
  async getManyForUpdate(ids: readonly string[]): Promise<Map<string, Stored<D>>> {
    // An advisory lock on (table, id), not `FOR UPDATE` on the row: the row a waiter would
    // lock stops being the latest when the holder appends, and READ COMMITTED would then
    // find no row at all. Taken first, the locks make the read after them see the holders'
    // committed versions. (A hash collision only makes two models take turns.)
    const sorted = [...new Set(ids)].sort();
    if (sorted.length && this.db.dialect === 'postgres') {
      await this.db.run(
        sql`SELECT pg_advisory_xact_lock(hashtext(${this.name}), hashtext(k)) FROM unnest(${sql.param(sorted)}::text[]) AS k`,
      );
    }
    return this.getMany(sorted);
  }

  /**
   * As `getManyForUpdate`, without waiting, in one statement: the latest versions of those
   * no other transaction holds (another replica), by id; the others, and unknown ids, are
   * left out, as `SKIP LOCKED` would.
   *
   * The statement's snapshot is taken before it takes the locks, so a holder that commits
   * in between is not seen: what is read may be the version before its change. A caller
   * that appends then fails on the unique (id, version) index (`UniqueViolation`) and must
   * take that as "someone else changed it"; the locks it takes on other rows first (a
   * server's lease) see the holder's commit.
   */
  async tryGetManyForUpdate(ids: readonly string[]): Promise<Map<string, Stored<D>>> {
    if (ids.length === 0 || this.db.dialect !== 'postgres') return this.getMany(ids);
    const rows = await this.db.all<Row>(sql`
      SELECT ${COLUMNS} FROM ${this.table} WHERE is_latest = 1 AND id IN (
        SELECT k FROM unnest(${sql.param([...new Set(ids)])}::text[]) AS k WHERE pg_try_advisory_xact_lock(hashtext(${this.name}), hashtext(k)))`);
    return new Map(rows.map((r) => [r.id, this.fromRow(r)]));
  }

  private async read(id: string): Promise<Stored<D> | undefined> {
    const row = await this.db.get<Row>(sql`SELECT ${COLUMNS} FROM ${this.table} WHERE id = ${id} AND is_latest = 1`);
    return row && this.fromRow(row);
  }

  /** The latest versions of several models (deleted or not), in one query, by id. */
  async getMany(ids: readonly string[]): Promise<Map<string, Stored<D>>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.all<Row>(sql`SELECT ${COLUMNS} FROM ${this.table} WHERE id IN (${textList(this.db.dialect, [...new Set(ids)])}) AND is_latest = 1`);
    return new Map(rows.map((r) => [r.id, this.fromRow(r)]));
  }

  /** One version of a model (frozen when it comes from the cache, see `options.cacheVersions`). */
  async getVersion(id: string, version: number): Promise<Stored<D> | undefined> {
    const key = `${id}@${version}`;
    const cached = this.versions?.get(key);
    if (cached) return cached;
    const row = await this.db.get<Row>(sql`SELECT ${COLUMNS} FROM ${this.table} WHERE id = ${id} AND version = ${version}`);
    const model = row && this.fromRow(row);
    // Read inside a transaction, it may be a version that transaction wrote and rolls back.
    if (model && !this.db.inTransaction()) this.versions?.set(key, model);
    return model;
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

  /** How many versions a model has (0 when the id is unknown). */
  async countVersions(id: string): Promise<number> {
    return (await this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${this.table} WHERE id = ${id}`))?.n ?? 0;
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

  /** As `list`, each model's `data` left as the stored JSON text (see `StoredText`). */
  async listText(request: ListRequest, extra?: SQL): Promise<Page<StoredText>> {
    const page = await this.listRows<TextRow>(TEXT_COLUMNS[this.db.dialect], request, extra);
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
    const columns = TEXT_COLUMNS[this.db.dialect];
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
    if ((request.filter || request.sortBy) && this.db.dialect === 'sqlite') conditions.push(sql`budget_check(pk)`);
    return { where: sql.join(conditions, sql` AND `), order };
  }

  private versionClauses(id: string, request: ListRequest, options: ExpressionOptions): { where: SQL; order: SQL } {
    const filter = parseFilter(this.fields, request.filter, options);
    const order = parseSort(this.fields, request.sortBy, { ...options, defaultSort: [['version', -1]] });
    const conditions: SQL[] = [sql`id = ${id}`];
    if (filter.where) conditions.push(filter.where);
    if (filter.where && this.db.dialect === 'sqlite') conditions.push(sql`budget_check(pk)`);
    return { where: sql.join(conditions, sql` AND `), order };
  }

  private async page<R>(columns: SQL, where: SQL, order: SQL, request: ListRequest): Promise<Page<R>> {
    const limit = request.all ? sql`` : sql` LIMIT ${request.perPage} OFFSET ${(request.page - 1) * request.perPage}`;
    const rows = await this.db.all<R>(sql`SELECT ${columns} FROM ${this.table} WHERE ${where} ORDER BY ${order}${limit}`);
    if (request.withoutTotal) return { items: rows, total: rows.length };
    const count = await this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${this.table} WHERE ${where}`);
    return { items: rows, total: count?.n ?? 0 };
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
    const dialect = this.db.dialect;
    try {
      return await this.db.withBudget(this.limits.queryBudgetMs, async () => {
        try {
          return await run({ dialect });
        } catch (e) {
          if (!SqliteDatabase.isJsonError(e)) throw e;
          return run({ dialect, guarded: true });
        }
      });
    } catch (e) {
      if (e instanceof RejectedPattern) throw patternError(e);
      throw e instanceof QueryBudgetExceeded ? budgetError(e) : e;
    }
  }

  /** The live model whose `field` equals `value` (a field with a unique index). */
  async findLive(field: string, value: string): Promise<Stored<D> | undefined> {
    const expr = fieldExpression(this.fields, field, { dialect: this.db.dialect });
    const row = await this.db.get<Row>(
      sql`SELECT ${COLUMNS} FROM ${this.table} WHERE is_latest = 1 AND time_deleted = 0 AND ${expr.expr} = ${bindValue(expr, field, value, this.db.dialect)}`,
    );
    return row && this.fromRow(row);
  }

  /** How many live models have `field` equal to `value`. */
  async countLive(field: string, value: string): Promise<number> {
    const expr = fieldExpression(this.fields, field, { dialect: this.db.dialect });
    const row = await this.db.get<{ n: number }>(
      sql`SELECT count(*) AS n FROM ${this.table} WHERE is_latest = 1 AND time_deleted = 0 AND ${expr.expr} = ${bindValue(expr, field, value, this.db.dialect)}`,
    );
    return row?.n ?? 0;
  }

  /** Stores version 1 of a new model. */
  async create(data: D, initiatorId: string | null, now: number, id: string = randomUUID()): Promise<Stored<D>> {
    const model: Stored<D> = { id, version: 1, time_updated: now, time_deleted: 0, initiator_id: initiatorId, data };
    await this.insert(model, null);
    return model;
  }

  /**
   * As `create`, only while `condition` holds (`liveCondition` of the models it refers to,
   * say): the condition is checked by the statement that stores the model, in one round trip
   * and with no moment between the check and the write. Undefined when it does not hold.
   */
  async createIf(condition: SQL, data: D, initiatorId: string | null, now: number, id: string = randomUUID()): Promise<Stored<D> | undefined> {
    const model: Stored<D> = { id, version: 1, time_updated: now, time_deleted: 0, initiator_id: initiatorId, data };
    return (await this.insert(model, condition)) ? model : undefined;
  }

  /** A condition, for a statement of any repository: the model `id` exists and its latest version is not deleted. */
  liveCondition(id: string): SQL {
    return sql`EXISTS (SELECT 1 FROM ${this.table} WHERE id = ${id} AND is_latest = 1 AND time_deleted = 0)`;
  }

  /**
   * Appends a new version of the latest one, changed by `change`; the caller holds the
   * transaction and has checked that the model may change. A change that changes nothing
   * (the same `time_deleted`, and `data` equal as JSON: key order and keys holding
   * `undefined` do not count) stores nothing and returns `latest`: a version is a change.
   */
  async append(
    latest: Stored<D>,
    change: { data?: D; time_deleted?: number },
    initiatorId: string | null,
    now: number,
  ): Promise<Stored<D>> {
    return (await this.appendMany([{ latest, change }], initiatorId, now))[0] as Stored<D>;
  }

  /**
   * As `append` for several models at once (each once at most): one statement unmarks the
   * latest versions and one inserts the next ones (a single one on PostgreSQL), the same
   * statements whatever their number. Returns the new versions in the order given (`latest` where nothing
   * changed).
   */
  async appendMany(
    changes: readonly { latest: Stored<D>; change: { data?: D; time_deleted?: number } }[],
    initiatorId: string | null,
    now: number,
  ): Promise<Stored<D>[]> {
    const out = changes.map(({ latest, change }) => this.nextVersion(latest, change, initiatorId, now));
    const next = out.filter((m, i) => m !== changes[i]?.latest);
    if (next.length === 0) return out;
    if (new Set(next.map((m) => m.id)).size !== next.length) throw new Error('appendMany: a model is changed twice');
    const texts = next.map((m) => this.serialize(m));
    const columns = sql.raw('id, version, time_updated, time_deleted, initiator_id, data, is_latest');
    const ids = next.map((m) => m.id);
    await atomically(this.db, async () => {
      await this.changes.bump(this.name);
      const rows = next.map((m, i) => [m.id, m.version, m.time_updated, m.time_deleted, m.initiator_id, texts[i] as string]);
      const source = rowSource(this.db.dialect, rows, ['text', 'int8', 'int8', 'int8', 'text', 'text']);
      if (this.db.dialect === 'postgres') {
        // The INSERT reads the UPDATE's count, so the UPDATE runs first: the partial unique
        // index on the latest version of an id then sees the rows unmarked here as gone.
        await this.db.run(sql`
          WITH unmarked AS (UPDATE ${this.table} SET is_latest = 0 WHERE id IN (${textList('postgres', ids)}) AND is_latest = 1 RETURNING 1)
          INSERT INTO ${this.table} (${columns}) SELECT v.*, 1 FROM (SELECT count(*) FROM unmarked) AS n, (${source}) AS v`);
      } else {
        await this.db.run(sql`UPDATE ${this.table} SET is_latest = 0 WHERE id IN (${textList('sqlite', ids)}) AND is_latest = 1`);
        await this.db.run(sql`INSERT INTO ${this.table} (${columns}) SELECT v.*, 1 FROM (${source}) AS v`);
      }
    }).catch((e: unknown) => {
      const field = this.db.uniqueViolation(e);
      throw field !== null ? new UniqueViolation(field) : e;
    });
    return out;
  }

  /** The version `change` makes of `latest`, or `latest` itself when it changes nothing (see `append`). */
  private nextVersion(latest: Stored<D>, change: { data?: D; time_deleted?: number }, initiatorId: string | null, now: number): Stored<D> {
    if ((change.time_deleted ?? latest.time_deleted) === latest.time_deleted && (change.data === undefined || jsonEqual(change.data, latest.data))) {
      return latest;
    }
    return {
      id: latest.id,
      version: latest.version + 1,
      time_updated: now,
      time_deleted: change.time_deleted ?? latest.time_deleted,
      initiator_id: initiatorId,
      data: change.data ?? latest.data,
    };
  }

  /** Runs `fn` once the caller's transaction commits (at once outside one; see `Database.afterCommit`). */
  afterCommit(fn: () => void): void {
    this.db.afterCommit(fn);
  }

  /** Whether the caller runs inside a transaction (see `Database.inTransaction`). */
  inTransaction(): boolean {
    return this.db.inTransaction();
  }

  /** Runs `fn` in one transaction (see `Database.transaction`). */
  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  /** Stores version 1 of a model, if `condition` (when there is one) holds; whether it stored it. */
  private async insert(model: Stored<D>, condition: SQL | null): Promise<boolean> {
    const text = this.serialize(model);
    const columns = sql`${this.table} (id, version, time_updated, time_deleted, initiator_id, is_latest, data)`;
    const values = sql`${model.id}, ${model.version}, ${model.time_updated}, ${model.time_deleted}, ${model.initiator_id}, 1, ${text}`;
    const store = () =>
      this.db.run(condition ? sql`INSERT INTO ${columns} SELECT ${values} WHERE ${condition}` : sql`INSERT INTO ${columns} VALUES (${values})`);
    try {
      // The count and the row in one transaction: a replica that reads the new count reads
      // the row. A table nobody counts needs no transaction for one statement.
      if (COUNTED_TABLES.has(this.name)) {
        return await atomically(this.db, async () => {
          await this.changes.bump(this.name);
          return (await store()) > 0;
        });
      }
      return (await store()) > 0;
    } catch (e) {
      const field = this.db.uniqueViolation(e);
      if (field !== null) throw new UniqueViolation(field);
      throw e;
    }
  }


  /** The `data` of a version as stored: JSON text, within the limits (else an `ApiError`). */
  private serialize(model: Stored<D>): string {
    if (nestsDeeper(model.data, MAX_DATA_DEPTH)) {
      throw invalidJson(`The data of a model may nest at most ${MAX_DATA_DEPTH} levels of objects and arrays.`);
    }
    const text = JSON.stringify(model.data);
    // The API refuses NUL characters in requests; this keeps any other path from storing one
    // (PostgreSQL's JSON cannot hold it, and every list would then fail on the row).
    if (ESCAPED_NUL.test(text)) throw invalidJson('The data of a model may not hold a NUL character (U+0000).');
    const bytes = Buffer.byteLength(text);
    if (bytes > this.limits.maxDataBytes) {
      throw new ApiError(
        413,
        'PayloadTooLarge',
        `The data of a model is at most ${this.limits.maxDataBytes} bytes as JSON; this one is ${bytes} bytes.`,
      );
    }
    return text;
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
