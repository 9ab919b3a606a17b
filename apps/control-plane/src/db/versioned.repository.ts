import { randomUUID } from 'node:crypto';
import { jsonEqual, MAX_DATA_DEPTH, nestsDeeper } from '@carapace/models';
import { getTableName, sql, type SQL } from 'drizzle-orm';
import { StatementPart, type Condition, type IdSubquery, type Statement } from './condition.js';
import { ApiError, invalidJson, UniqueViolation } from '../errors.js';
import { changeCounters, COUNTED_TABLES, liveCountKey, type ChangeCounters } from './change-counter.js';
import { atomically, type Database } from './database.js';
import { bindValue, fieldExpression, fieldIn, tableName, type ModelFields } from './list-query.js';
import { ModelCache } from './model-cache.js';
import { COLUMNS, LiveTotal, VersionedLists, type RepositoryLimits, type Row } from './versioned-lists.js';
import type { ListCursor, ListRequest, Page, Stored, StoredText } from '../domain/list-types.js';
import type { VersionedTable } from './schema/versioned.js';

/** For `liveWhere`: string fields of a model's data, each with the value, or the values, it must hold. */
export type FieldMatch<D> = {
  readonly [K in keyof D & string as Extract<D[K], string> extends never ? never : K]?: Extract<D[K], string> | readonly Extract<D[K], string>[];
};

/** The limits when none are given: those of the default configuration. */
export const DEFAULT_LIMITS: RepositoryLimits = { queryBudgetMs: 1000, maxDataBytes: 1_048_576 };
/** `\u0000` as JSON writes a NUL character: an odd number of backslashes before `u0000`. */
const ESCAPED_NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/;

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
  /** The key of the count of models created and deleted, when the list's total is cached (`options.cacheLiveCount`). */
  private readonly liveKey: string | null;
  /** The list queries (filters, sorts, pages, cursors, under the query budget). */
  private readonly lists: VersionedLists<D>;

  /**
   * `options.cacheLatest` (a number of models) keeps the latest versions read by `get` in
   * memory, for tables written seldom and read on many requests (users, roles): any write to
   * the table empties it (see `ChangeCounters`), and nothing read inside a transaction is
   * kept (it may be rolled back). Models handed out from it are frozen. `options.limits`
   * bounds list queries and stored documents (`DEFAULT_LIMITS` when not given).
   * `options.cacheVersions` (a number of versions) keeps the versions `getVersion` read, for
   * tables whose versions are read again and again (a configuration by each of its runs): a
   * version, once committed, never changes. `options.cacheLiveCount` keeps the total of the
   * unfiltered list (every live model) while no model is created or deleted, for a large
   * table whose models change often but come and go seldom (servers: a count of every live
   * row costs a few milliseconds per 100,000); each creation and deletion then also writes a
   * count (`liveCountKey`), which on PostgreSQL is a row its writers queue on.
   */
  constructor(
    private readonly db: Database,
    table: VersionedTable,
    readonly fields: ModelFields,
    options: { cacheLatest?: number; cacheVersions?: number; cacheLiveCount?: boolean; limits?: RepositoryLimits } = {},
  ) {
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.name = getTableName(table);
    this.table = tableName(table);
    this.changes = changeCounters(db);
    this.latest = options.cacheLatest ? new ModelCache(options.cacheLatest) : null;
    this.versions = options.cacheVersions ? new ModelCache(options.cacheVersions) : null;
    this.liveKey = options.cacheLiveCount ? liveCountKey(this.name) : null;
    if (this.liveKey !== null && !COUNTED_TABLES.has(this.liveKey)) throw new Error(`${this.liveKey} is not in COUNTED_TABLES`);
    const liveTotal = this.liveKey === null ? null : new LiveTotal(this.changes, this.liveKey);
    this.lists = new VersionedLists(db, this.table, fields, this.limits, (row) => this.fromRow(row), liveTotal);
  }

  /** The latest version of a model if it is not deleted. */
  async getLive(id: string): Promise<Stored<D> | undefined> {
    const model = await this.get(id);
    return model && model.time_deleted === 0 ? model : undefined;
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
    const lock = sorted.length ? this.db.engine.lockKeys(this.name, sorted) : null;
    if (lock) await this.db.run(lock);
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
    // Null where no other transaction can hold a lock (SQLite): every model is free.
    const locked = ids.length ? this.db.engine.tryLockedKeys(this.name, [...new Set(ids)]) : null;
    if (!locked) return this.getMany(ids);
    const rows = await this.db.all<Row>(sql`
      SELECT ${COLUMNS} FROM ${this.table} WHERE is_latest = 1 AND id IN (
        ${locked})`);
    return new Map(rows.map((r) => [r.id, this.fromRow(r)]));
  }

  /**
   * As `tryGetManyForUpdate`, and a write with it: `write` is given the ids of the models read
   * that meet `where` (a subquery) and returns a statement (an `INSERT … RETURNING`, say), or
   * null for none; its rows come back in `written`. On PostgreSQL both go in one statement,
   * one round trip (`write` as a data-modifying `WITH`, which sees the same snapshot); on
   * SQLite, in two.
   */
  async tryGetManyForUpdateAnd<R>(ids: readonly string[], where: Condition, write: (ids: IdSubquery) => Statement | null): Promise<{ models: Map<string, Stored<D>>; written: R[] }> {
    const unique = [...new Set(ids)];
    const statement = unique.length ? write(StatementPart.of<'ids'>(sql`SELECT id FROM latest WHERE ${StatementPart.sql(where)}`)) : null;
    const writing = statement ? StatementPart.sql(statement) : null;
    const locked = writing ? this.db.engine.tryLockedKeys(this.name, unique) : null;
    // One statement where the engine can (PostgreSQL), else the read and the write apart.
    const both = writing && locked ? this.db.engine.readAndWrite(sql`
        SELECT ${COLUMNS} FROM ${this.table} WHERE is_latest = 1 AND id IN (
          ${locked})`, writing) : null;
    if (!writing || !both) {
      const models = await this.tryGetManyForUpdate(unique);
      if (!writing || models.size === 0) return { models, written: [] };
      const written = await this.db.all<R>(sql`
        WITH latest AS (SELECT ${COLUMNS} FROM ${this.table} WHERE is_latest = 1 AND id IN (${this.db.engine.textList([...models.keys()])}))
        ${writing}`);
      return { models, written };
    }
    const row = await this.db.get<{ models: Row[] | null; written: R[] | null }>(both);
    return { models: new Map((row?.models ?? []).map((r) => [r.id, this.fromRow(r)])), written: row?.written ?? [] };
  }

  private async read(id: string): Promise<Stored<D> | undefined> {
    const row = await this.db.get<Row>(sql`SELECT ${COLUMNS} FROM ${this.table} WHERE id = ${id} AND is_latest = 1`);
    return row && this.fromRow(row);
  }

  /** The latest versions of several models (deleted or not), in one query, by id. */
  async getMany(ids: readonly string[]): Promise<Map<string, Stored<D>>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.all<Row>(sql`SELECT ${COLUMNS} FROM ${this.table} WHERE id IN (${this.db.engine.textList([...new Set(ids)])}) AND is_latest = 1`);
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

  /** A page of the versions of a model (`VersionedLists.listVersions`). */
  listVersions(id: string, request: ListRequest): Promise<Page<Stored<D>>> {
    return this.lists.listVersions(id, request);
  }

  /** How many versions a model has (0 when the id is unknown). */
  async countVersions(id: string): Promise<number> {
    return (await this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM ${this.table} WHERE id = ${id}`))?.n ?? 0;
  }

  /** Every version of a model matching the request, in batches (`VersionedLists.cursorVersions`). */
  cursorVersions(id: string, request: ListRequest): Promise<ListCursor<StoredText>> {
    return this.lists.cursorVersions(id, request);
  }

  /** A condition for `list`'s `extra`, its value written out (`VersionedLists.fieldEquals`). */
  fieldEquals(name: string, value: string): Condition {
    return StatementPart.of(this.lists.fieldEquals(name, value));
  }

  /** A condition for `list`'s `extra`: the data field `name` is JSON `true`, or not (`VersionedLists.fieldIsTrue`). */
  fieldIsTrue(name: string, wanted: boolean): Condition {
    return StatementPart.of(this.lists.fieldIsTrue(name, wanted));
  }

  /** A page of the latest versions of the models matching the request (`VersionedLists.list`). */
  list(request: ListRequest, extra?: Condition): Promise<Page<Stored<D>>> {
    return this.lists.list(request, extra && StatementPart.sql(extra));
  }

  /** The live models meeting `condition`, in stored order, as keys, ids and versions (`VersionedLists.idsInStoredOrder`). */
  idsInStoredOrder(condition: Condition, index: string, afterPk: number, limit: number): Promise<{ pk: number; id: string; version: number }[]> {
    return this.lists.idsInStoredOrder(StatementPart.sql(condition), index, afterPk, limit);
  }

  /** As `list`, `data` left as stored (`VersionedLists.listText`). */
  listText(request: ListRequest, extra?: Condition): Promise<Page<StoredText>> {
    return this.lists.listText(request, extra && StatementPart.sql(extra));
  }

  /** Every model matching the request, in batches (`VersionedLists.cursor`). */
  cursor(request: ListRequest, extra?: Condition): Promise<ListCursor<StoredText>> {
    return this.lists.cursor(request, extra && StatementPart.sql(extra));
  }

  /**
   * Every live model whose data fields hold what `match` names: for each field, one value or
   * any of several (values bound, not written out). For the services' own questions ("the
   * running executions of a runner"), typed by the model's fields; a request's filter goes
   * through `list`.
   */
  async liveWhere(match: FieldMatch<D>): Promise<Stored<D>[]> {
    const engine = this.db.engine;
    const conditions = Object.entries(match).map(([name, wanted]) =>
      fieldIn(engine, fieldExpression(this.fields, name, { engine }), name, typeof wanted === 'string' ? [wanted] : (wanted as readonly string[])),
    );
    if (conditions.length === 0) throw new Error('liveWhere: name at least one field');
    // every match, and no count of them
    return (await this.lists.list({ page: 1, perPage: 1, all: true, withoutTotal: true }, sql.join(conditions, sql` AND `))).items;
  }

  /** The live model whose `field` equals `value` (a field with a unique index). */
  async findLive(field: string, value: string): Promise<Stored<D> | undefined> {
    const expr = fieldExpression(this.fields, field, { engine: this.db.engine });
    const row = await this.db.get<Row>(
      sql`SELECT ${COLUMNS} FROM ${this.table} WHERE is_latest = 1 AND time_deleted = 0 AND ${expr.expr} = ${bindValue(this.db.engine, expr, field, value)}`,
    );
    return row && this.fromRow(row);
  }

  /** Whether any model was ever stored here, deleted ones included. */
  async anyEver(): Promise<boolean> {
    return (await this.db.get<{ one: number }>(sql`SELECT 1 AS one FROM ${this.table} LIMIT 1`)) !== undefined;
  }

  /** How many live models have `field` equal to `value`. */
  async countLive(field: string, value: string): Promise<number> {
    const expr = fieldExpression(this.fields, field, { engine: this.db.engine });
    const row = await this.db.get<{ n: number }>(
      sql`SELECT count(*) AS n FROM ${this.table} WHERE is_latest = 1 AND time_deleted = 0 AND ${expr.expr} = ${bindValue(this.db.engine, expr, field, value)}`,
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
  async createIf(condition: Condition, data: D, initiatorId: string | null, now: number, id: string = randomUUID()): Promise<Stored<D> | undefined> {
    const model: Stored<D> = { id, version: 1, time_updated: now, time_deleted: 0, initiator_id: initiatorId, data };
    return (await this.insert(model, StatementPart.sql(condition))) ? model : undefined;
  }

  /**
   * A condition, for a statement of any repository: one of the models `ids` is live and its
   * `field` equals `value` (written out, `fieldEquals`). `index` is a partial index on `id`
   * whose predicate is the same condition: the answer reads no model's JSON (SQLite is told
   * to use it, `INDEXED BY`). False for no ids.
   */
  anyLiveAmong(ids: readonly string[], field: string, value: string, index: string): Condition {
    if (ids.length === 0) return StatementPart.of(sql`0 = 1`);
    const from = this.db.engine.indexHint(this.table, index);
    const list = sql.join(
      ids.map((id) => sql`${id}`),
      sql`, `,
    );
    return StatementPart.of(sql`EXISTS (SELECT 1 FROM ${from} WHERE is_latest = 1 AND time_deleted = 0 AND ${this.lists.fieldEquals(field, value)} AND id IN (${list}))`);
  }

  /** A condition, for a statement of any repository: the model `id` exists and its latest version is not deleted. */
  liveCondition(id: string): Condition {
    return StatementPart.of(sql`EXISTS (SELECT 1 FROM ${this.table} WHERE id = ${id} AND is_latest = 1 AND time_deleted = 0)`);
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
    // A deletion (or an undeletion) changes how many models are live.
    const comesOrGoes = this.liveKey !== null && out.some((m, i) => m.time_deleted !== changes[i]?.latest.time_deleted);
    await atomically(this.db, async () => {
      await this.changes.bump(this.name);
      if (comesOrGoes && this.liveKey !== null) await this.changes.bump(this.liveKey);
      const rows = next.map((m, i) => [m.id, m.version, m.time_updated, m.time_deleted, m.initiator_id, texts[i] as string]);
      const source = this.db.engine.rowSource(rows, ['text', 'int8', 'int8', 'int8', 'text', 'text']);
      // The INSERT after the UPDATE (in one statement on PostgreSQL): the partial unique
      // index on the latest version of an id then sees the rows unmarked here as gone.
      const statements = this.db.engine.updateThenInsert(
        sql`UPDATE ${this.table} SET is_latest = 0 WHERE id IN (${this.db.engine.textList(ids)}) AND is_latest = 1`,
        (afterUpdate) => sql`INSERT INTO ${this.table} (${columns}) SELECT v.*, 1 FROM ${afterUpdate}(${source}) AS v`,
      );
      for (const statement of statements) await this.db.run(statement);
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
      if (COUNTED_TABLES.has(this.name) || this.liveKey !== null) {
        return await atomically(this.db, async () => {
          await this.changes.bump(this.name);
          if (this.liveKey !== null) await this.changes.bump(this.liveKey);
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
