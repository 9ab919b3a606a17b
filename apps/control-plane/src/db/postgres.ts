import { sql, type SQL } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import pgUtils from 'pg/lib/utils.js';
import { QueryBudgetExceeded, RejectedPattern, Transactions, type ConnectionCounts, type Database, type TxContext } from './database.js';
import type { SqlEngine } from './engine.js';
import { PostgresEngine } from './postgres-engine.js';
import { ScopedStorage } from './scoped-storage.js';

const INT8_OID = 20;
const NUMERIC_OID = 1700;
/** SQLSTATEs: a statement stopped by `statement_timeout`, a unique violation, and the failures a transaction is retried on. */
const QUERY_CANCELED = '57014';
const INVALID_REGULAR_EXPRESSION = '2201B';
const UNIQUE_VIOLATION = '23505';
const RETRYABLE = new Set(['40001', '40P01']);
const TRANSACTION_TRIES = 5;

/**
 * int8 (bigint columns, `count(*)`) and numeric as JavaScript numbers: times in milliseconds
 * and counts stay far below 2^53.
 */
const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text') as (value: string) => unknown;
  },
};

/** What a PostgreSQL pool and its connections are asked for. */
export interface PostgresOptions {
  readonly url: string;
  /** The most connections the pools open together (the bus opens one more). */
  readonly poolSize: number;
  /** Names this process in `pg_stat_activity`. */
  readonly applicationName?: string;
}

/** The most statements prepared (`statementName`): each connection keeps them as long as it lives. */
const PREPARED_MAX = 500;
const prepared = new Map<string, string>();

/**
 * The name under which a statement is prepared on each connection, so that PostgreSQL
 * parses and plans it once per connection instead of at every call: the statements of the
 * engine, repositories and services repeat with other parameters. The first `PREPARED_MAX`
 * texts seen get a name; later ones run unnamed (a list's filter a user wrote once).
 */
function statementName(text: string): string | undefined {
  let name = prepared.get(text);
  if (name === undefined && prepared.size < PREPARED_MAX) {
    name = `carapace_${prepared.size}`;
    prepared.set(text, name);
  }
  return name;
}

/**
 * How many of a replica's `poolSize` connections run lists under their budget (`withBudget`
 * outside a transaction): a quarter, at least one. The others serve everything else (two at
 * least: a pool of 2 or 3 opens one more).
 */
function budgetPoolSize(poolSize: number): number {
  return Math.max(1, Math.floor(poolSize / 4));
}

/**
 * `text` with each parameter (`$1`, `$2`, …) replaced by its value as a quoted literal,
 * for the simple protocol: a literal of unknown type, which PostgreSQL types from where it
 * stands, as it types a parameter sent without a type (node-postgres sends them so); the
 * values as node-postgres would send them (`prepareValue`: arrays as array literals, null
 * as NULL). Quoted strings, quoted identifiers and comments are left as they are.
 */
export function inlineParameters(text: string, values: readonly unknown[], client: { escapeLiteral(value: string): string }): string {
  const literal = (index: number): string => {
    if (index < 1 || index > values.length) throw new Error(`inlineParameters: no value for $${index}`);
    const value = pgUtils.prepareValue(values[index - 1]);
    if (value === null) return 'NULL';
    return client.escapeLiteral(typeof value === 'string' ? value : `\\x${value.toString('hex')}`);
  };
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    const end = (close: string, from: number) => {
      const at = text.indexOf(close, from);
      return at < 0 ? text.length : at + close.length;
    };
    let next: number;
    if (c === "'" || c === '"') {
      // A doubled quote inside is two quoted runs back to back: the same result.
      next = end(c, i + 1);
    } else if (c === '-' && text[i + 1] === '-') {
      next = end('\n', i + 2);
    } else if (c === '/' && text[i + 1] === '*') {
      next = end('*/', i + 2);
    } else if (c === '$' && /[0-9]/.test(text[i + 1] ?? '')) {
      const digits = /^[0-9]+/.exec(text.slice(i + 1))?.[0] as string;
      out += literal(Number(digits));
      i += 1 + digits.length;
      continue;
    } else {
      next = i + 1;
    }
    out += text.slice(i, next);
    i = next;
  }
  return out;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/**
 * The control plane's database on PostgreSQL (node-postgres): a pool of connections; a
 * transaction holds one of them across its `await`s (AsyncLocalStorage), and a statement
 * outside any transaction takes whichever is free. Transactions are READ COMMITTED; one
 * that fails on a deadlock or a serialization failure is run again from the start.
 */
export class PostgresDatabase implements Database {
  readonly dialect = 'postgres';
  readonly engine: SqlEngine = new PostgresEngine(this);
  readonly sharedByReplicas = true;
  private readonly dialectImpl = new PgDialect();
  private readonly tx = new Transactions<pg.PoolClient>();
  /** The budget of the statements run now, and the pool whose connections enforce it when they run outside a transaction. */
  private readonly budgets = new ScopedStorage<{ ms: number; pool: pg.Pool | null }>();
  /** Pools of connections opened with `statement_timeout` set, by budget (`withBudget`). */
  private readonly budgetPools = new Map<number, pg.Pool>();
  /** The transactions whose `BEGIN` went out: with their first statement (`transactionOnce`). */
  private readonly begun = new WeakSet<TxContext<pg.PoolClient>>();

  private constructor(
    readonly pool: pg.Pool,
    private readonly options: PostgresOptions,
  ) {}

  /** Connects to the database at `options.url` and applies the committed migrations. */
  static async open(options: PostgresOptions, migrationsFolder: string): Promise<PostgresDatabase> {
    const pool = new pg.Pool({
      connectionString: options.url,
      // Two at least: a transaction must never wait for a second connection that it holds.
      max: Math.max(2, options.poolSize - budgetPoolSize(options.poolSize)),
      types,
      application_name: options.applicationName ?? 'carapace-control-plane',
    });
    // An idle connection the server drops (a restart, a terminated backend) is an event of
    // the pool, not a crash of the process: the pool replaces it.
    pool.on('error', () => undefined);
    try {
      // Replicas starting together migrate one after the other: the first applies what is
      // missing, the others then find nothing to do.
      const lock = await pool.connect();
      try {
        await lock.query('SELECT pg_advisory_lock(hashtext($1))', ['carapace_migrations']);
        await migrate(drizzle({ client: lock }), { migrationsFolder, migrationsSchema: 'public' });
      } finally {
        await lock.query('SELECT pg_advisory_unlock(hashtext($1))', ['carapace_migrations']).catch(() => undefined);
        lock.release();
      }
    } catch (e) {
      await pool.end();
      throw e;
    }
    return new PostgresDatabase(pool, options);
  }

  /** How to open a connection of its own to this database (the bus listens on one). */
  connectionOptions(): pg.ClientConfig {
    return { connectionString: this.options.url, types };
  }

  async all<T>(query: SQL): Promise<T[]> {
    return (await this.execute(query)).rows as T[];
  }

  async get<T>(query: SQL): Promise<T | undefined> {
    return (await this.execute(query)).rows[0] as T | undefined;
  }

  async run(query: SQL): Promise<number> {
    return (await this.execute(query)).rowCount ?? 0;
  }

  inTransaction(): boolean {
    return this.tx.inTransaction();
  }

  afterCommit(fn: () => void): void {
    this.tx.afterCommit(fn);
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    const outer = this.tx.current();
    if (outer) return this.tx.savepoint(outer, fn, (statement) => this.simple(outer, statement));
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.transactionOnce(fn);
      } catch (e) {
        if (attempt >= TRANSACTION_TRIES || !RETRYABLE.has(errorCode(e) ?? '')) throw e;
      }
    }
  }

  /**
   * Outside a transaction, each statement of `fn` runs on a connection of a pool opened with
   * `statement_timeout` set to the budget: one round trip, as a statement without a budget
   * (a list reads a page and its count: each has the budget). Inside one, the budget is set
   * for a savepoint (`set_config(…, true)`) and put back after it.
   */
  async withBudget<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    if (this.budgets.getStore()) return fn();
    const budget = Math.max(1, Math.floor(ms));
    if (!this.tx.current()) return this.budgets.run({ ms, pool: this.budgetPool(budget) }, fn);
    return this.budgets.run({ ms, pool: null }, () =>
      this.transaction(async () => {
        const previous = await this.get<{ v: string }>(sql`SELECT current_setting('statement_timeout') AS v`);
        await this.run(sql`SELECT set_config('statement_timeout', ${String(budget)}, true)`);
        const result = await fn();
        await this.run(sql`SELECT set_config('statement_timeout', ${previous?.v ?? '0'}, true)`);
        return result;
      }),
    );
  }

  isJsonError(_error: unknown): boolean {
    return false;
  }

  uniqueViolation(error: unknown): string | null {
    if (errorCode(error) !== UNIQUE_VIOLATION) return null;
    const { constraint, table } = error as pg.DatabaseError;
    if (!constraint || !table || !constraint.startsWith(`${table}_`)) return 'id';
    const field = constraint.slice(table.length + 1).replace(/_live$/, '');
    return ['id_version', 'latest', 'pkey'].includes(field) ? 'id' : field;
  }

  /**
   * Sends `pg_notify(channel, payload)` when the caller's transaction commits, with the
   * others it sends (in the round trip of its `COMMIT`); at once when there is none.
   */
  async notify(channel: string, payload: string): Promise<void> {
    const ctx = this.tx.current();
    if (ctx) ctx.notifications.push([channel, payload]);
    else await this.run(sql`SELECT pg_notify(${channel}, ${payload})`);
  }

  connections(): ConnectionCounts {
    let open = 0;
    let idle = 0;
    let waiting = 0;
    for (const pool of [this.pool, ...this.budgetPools.values()]) {
      open += pool.totalCount;
      idle += pool.idleCount;
      waiting += pool.waitingCount;
    }
    return { open, busy: open - idle, waiting };
  }

  async close(): Promise<void> {
    const pools = [this.pool, ...this.budgetPools.values()];
    this.budgetPools.clear();
    await Promise.all(pools.map((p) => p.end()));
  }

  private budgetPool(ms: number): pg.Pool {
    let pool = this.budgetPools.get(ms);
    if (!pool) {
      pool = new pg.Pool({
        connectionString: this.options.url,
        max: budgetPoolSize(this.options.poolSize),
        types,
        application_name: this.options.applicationName ?? 'carapace-control-plane',
        statement_timeout: ms,
      });
      pool.on('error', () => undefined);
      this.budgetPools.set(ms, pool);
    }
    return pool;
  }

  /**
   * One transaction on a connection of the pool. Its `BEGIN` goes out with its first
   * statement, in one round trip (`simple`), and its messages with its `COMMIT`, in another:
   * a transaction of n statements costs n + 1 round trips, not n + 2. One that ran no
   * statement sends no `BEGIN` and no `COMMIT`, only its messages.
   */
  private async transactionOnce<T>(fn: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const ctx = this.tx.begin(client);
    let result: T;
    try {
      result = await this.tx.run(ctx, fn);
      // The transaction's messages and its commit in one round trip (the simple protocol
      // takes several statements; the literals are escaped by the driver).
      const notifies = ctx.notifications.map(([channel, payload]) => `pg_notify(${client.escapeLiteral(channel)}, ${client.escapeLiteral(payload)})`);
      const select = notifies.length ? `SELECT ${notifies.join(', ')}` : null;
      if (this.begun.has(ctx)) await client.query(select ? `${select}; COMMIT` : 'COMMIT');
      else if (select) await client.query(select);
    } catch (e) {
      this.tx.end(ctx, false);
      try {
        if (this.begun.has(ctx)) await client.query('ROLLBACK');
        client.release();
      } catch (rollbackError) {
        client.release(rollbackError as Error);
      }
      throw e;
    }
    client.release();
    this.tx.end(ctx, true);
    return result;
  }

  /**
   * Sends `text` (the simple protocol, no parameters) on the transaction's connection, with
   * its `BEGIN` first when it is the transaction's first statement; the result is `text`'s.
   */
  private async simple(ctx: TxContext<pg.PoolClient>, text: string): Promise<pg.QueryResult> {
    if (this.begun.has(ctx)) return ctx.connection.query(text);
    this.begun.add(ctx);
    const results = (await ctx.connection.query(`BEGIN; ${text}`)) as unknown as pg.QueryResult[];
    return results[results.length - 1] as pg.QueryResult;
  }

  private async execute(query: SQL): Promise<pg.QueryResult> {
    const { sql: text, params } = this.dialectImpl.sqlToQuery(query);
    const ctx = this.tx.current();
    const target = ctx?.connection ?? this.budgets.getStore()?.pool ?? this.pool;
    try {
      const values = params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p));
      // A transaction's first statement goes with its BEGIN, its parameters written out.
      if (ctx && !this.begun.has(ctx)) return await this.simple(ctx, inlineParameters(text, values, ctx.connection));
      const name = statementName(text);
      return await target.query(name ? { name, text, values } : { text, values });
    } catch (e) {
      const budget = this.budgets.getStore();
      if (budget && errorCode(e) === QUERY_CANCELED) throw new QueryBudgetExceeded(budget.ms);
      if (errorCode(e) === INVALID_REGULAR_EXPRESSION) throw new RejectedPattern(`PostgreSQL refuses the pattern: ${(e as Error).message}`);
      throw e;
    }
  }
}
