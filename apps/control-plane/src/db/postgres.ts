import { AsyncLocalStorage } from 'node:async_hooks';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { QueryBudgetExceeded, RejectedPattern, Transactions, type Database } from './database.js';

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
  /** The most connections the pool opens. */
  readonly poolSize: number;
  /** Names this process in `pg_stat_activity`. */
  readonly applicationName?: string;
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
  private readonly dialectImpl = new PgDialect();
  private readonly tx = new Transactions<pg.PoolClient>();
  private readonly budgets = new AsyncLocalStorage<{ ms: number }>();

  private constructor(
    readonly pool: pg.Pool,
    private readonly url: string,
  ) {}

  /** Connects to the database at `options.url` and applies the committed migrations. */
  static async open(options: PostgresOptions, migrationsFolder: string): Promise<PostgresDatabase> {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize,
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
        await migrate(drizzle({ client: pool }), { migrationsFolder, migrationsSchema: 'public' });
      } finally {
        await lock.query('SELECT pg_advisory_unlock(hashtext($1))', ['carapace_migrations']).catch(() => undefined);
        lock.release();
      }
    } catch (e) {
      await pool.end();
      throw e;
    }
    return new PostgresDatabase(pool, options.url);
  }

  /** How to open a connection of its own to this database (the bus listens on one). */
  connectionOptions(): pg.ClientConfig {
    return { connectionString: this.url, types };
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
    if (outer) return this.tx.savepoint(outer, fn, (statement) => outer.connection.query(statement));
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.transactionOnce(fn);
      } catch (e) {
        if (attempt >= TRANSACTION_TRIES || !RETRYABLE.has(errorCode(e) ?? '')) throw e;
      }
    }
  }

  async withBudget<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    if (this.budgets.getStore()) return fn();
    return this.budgets.run({ ms }, () =>
      this.transaction(async () => {
        const previous = await this.get<{ v: string }>(sql`SELECT current_setting('statement_timeout') AS v`);
        await this.run(sql`SELECT set_config('statement_timeout', ${String(Math.max(1, Math.floor(ms)))}, true)`);
        const result = await fn();
        await this.run(sql`SELECT set_config('statement_timeout', ${previous?.v ?? '0'}, true)`);
        return result;
      }),
    );
  }

  uniqueViolation(error: unknown): string | null {
    if (errorCode(error) !== UNIQUE_VIOLATION) return null;
    const { constraint, table } = error as pg.DatabaseError;
    if (!constraint || !table || !constraint.startsWith(`${table}_`)) return 'id';
    const field = constraint.slice(table.length + 1).replace(/_live$/, '');
    return ['id_version', 'latest', 'pkey'].includes(field) ? 'id' : field;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async transactionOnce<T>(fn: () => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const ctx = this.tx.begin(client);
    let result: T;
    try {
      await client.query('BEGIN');
      result = await this.tx.run(ctx, fn);
      await client.query('COMMIT');
    } catch (e) {
      this.tx.end(ctx, false);
      try {
        await client.query('ROLLBACK');
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

  private async execute(query: SQL): Promise<pg.QueryResult> {
    const { sql: text, params } = this.dialectImpl.sqlToQuery(query);
    const target = this.tx.current()?.connection ?? this.pool;
    try {
      return await target.query(text, params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p)));
    } catch (e) {
      const budget = this.budgets.getStore();
      if (budget && errorCode(e) === QUERY_CANCELED) throw new QueryBudgetExceeded(budget.ms);
      if (errorCode(e) === INVALID_REGULAR_EXPRESSION) throw new RejectedPattern(`PostgreSQL refuses the pattern: ${(e as Error).message}`);
      throw e;
    }
  }
}
