import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3, { SqliteError } from 'better-sqlite3';
import type { SQL } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core';
import { QueryBudgetExceeded, Transactions, type ConnectionCounts, type Database } from './database.js';
import { compileRegexp, programSize, type CompiledPattern } from './regexp.js';
import { ScopedStorage } from './scoped-storage.js';
import type { SqlEngine } from './engine.js';
import { SqliteEngine } from './sqlite-engine.js';

/**
 * A bound on the cost of matching one character of text: re2js is linear, but on text that
 * keeps its DFA building states it was measured at up to about 20 µs a character, plus
 * about 15 ns per program instruction. A match whose bound does not fit in the budget left
 * is not started (the query stops as out of budget), so that one call cannot overrun it.
 */
const MATCH_NS_PER_CHAR = 20_000;
const MATCH_NS_PER_INSTRUCTION_CHAR = 20;
/** Compiled patterns kept while a budgeted query runs (each holds an RE2 DFA cache). */
const REGEXP_CACHE_MAX = 16;
/** Prepared statements kept, by SQL text. */
const STATEMENT_CACHE_MAX = 512;

type Statement = BetterSqlite3.Statement<unknown[], unknown>;
type Param = string | number | bigint | Buffer | null;

/** The budget of the statement running now (statements run one at a time, synchronously). */
interface Budget {
  deadline: number;
  ms: number;
  readonly patterns: Map<string, CompiledPattern>;
}

function checkBudget(budget: Budget, costMs = 0): void {
  if (performance.now() + costMs > budget.deadline) throw new QueryBudgetExceeded(budget.ms);
}

function param(value: unknown): Param {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint' || Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value);
  return JSON.stringify(value);
}

/**
 * The control plane's database on SQLite (better-sqlite3): one connection, WAL, foreign keys.
 *
 * better-sqlite3 runs each statement synchronously, so a statement outside any transaction
 * runs at once. A transaction holds the connection across `await`s: it takes a lock that
 * statements from outside it wait for, so nothing else joins it; inside it, statements run at
 * once. `regexp()` (RE2) and `budget_check()` enforce the budget of `withBudget`.
 */
export class SqliteDatabase implements Database {
  readonly dialect = 'sqlite';
  readonly engine: SqlEngine = new SqliteEngine(this);
  /** The embedded file of one control plane: replicas share PostgreSQL, never it. */
  readonly sharedByReplicas = false;
  private readonly dialectImpl = new SQLiteSyncDialect();
  private readonly statements = new Map<string, Statement>();
  private readonly tx = new Transactions<null>();
  private readonly budgets = new ScopedStorage<{ deadline: number; ms: number }>();
  private readonly budget: Budget = { deadline: Infinity, ms: 0, patterns: new Map() };
  /** Whether a transaction (or a statement waiting behind one) holds the connection, and who waits for it. */
  private locked = false;
  private readonly waiting: (() => void)[] = [];

  private constructor(readonly connection: BetterSqlite3.Database) {
    const budget = this.budget;
    connection.function('regexp', { deterministic: true }, (pattern: unknown, value: unknown) => {
      checkBudget(budget);
      if (typeof pattern !== 'string' || value === null || value === undefined) return 0;
      let compiled = budget.patterns.get(pattern);
      if (!compiled) {
        const re = compileRegexp(pattern);
        compiled = { re, instructions: programSize(re) };
        if (budget.patterns.size >= REGEXP_CACHE_MAX) budget.patterns.clear();
        budget.patterns.set(pattern, compiled);
      }
      const text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'bigint' ? value.toString() : '';
      checkBudget(budget, (text.length * (MATCH_NS_PER_CHAR + compiled.instructions * MATCH_NS_PER_INSTRUCTION_CHAR)) / 1e6);
      return compiled.re.test(text) ? 1 : 0;
    });
    // Always 1; called on each row a budgeted list query scans, so that it stops in time.
    connection.function('budget_check', { deterministic: false, varargs: true }, () => {
      checkBudget(budget);
      return 1;
    });
  }

  /**
   * Opens (creating if needed) the SQLite database at `path` (`:memory:` for tests), sets
   * WAL, foreign keys and a busy timeout, and applies the committed migrations.
   */
  static open(path: string, migrationsFolder: string, options: { readonly?: boolean } = {}): SqliteDatabase {
    // Read only: an existing file, as it is (no migration, no change of journal mode).
    if (options.readonly) return new SqliteDatabase(new BetterSqlite3(path, { readonly: true, fileMustExist: true }));
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const connection = new BetterSqlite3(path);
    connection.pragma('journal_mode = WAL');
    connection.pragma('synchronous = NORMAL');
    connection.pragma('foreign_keys = ON');
    connection.pragma('busy_timeout = 5000');
    migrate(drizzle({ client: connection }), { migrationsFolder });
    return new SqliteDatabase(connection);
  }

  all<T>(query: SQL): Promise<T[]> {
    return this.execute(query, (s, p) => s.all(...p) as T[]);
  }

  get<T>(query: SQL): Promise<T | undefined> {
    return this.execute(query, (s, p) => s.get(...p) as T | undefined);
  }

  run(query: SQL): Promise<number> {
    return this.execute(query, (s, p) => s.run(...p).changes);
  }

  inTransaction(): boolean {
    return this.tx.inTransaction();
  }

  afterCommit(fn: () => void): void {
    this.tx.afterCommit(fn);
  }

  async transaction<T>(fn: () => Promise<T>): Promise<T> {
    const outer = this.tx.current();
    if (outer) return this.tx.savepoint(outer, fn, (statement) => this.connection.exec(statement));
    await this.acquire();
    const ctx = this.tx.begin(null);
    let result: T;
    try {
      this.connection.exec('BEGIN IMMEDIATE');
      result = await this.tx.run(ctx, fn);
      this.connection.exec('COMMIT');
    } catch (e) {
      if (this.connection.inTransaction) this.connection.exec('ROLLBACK');
      this.tx.end(ctx, false);
      this.release();
      throw e;
    }
    this.release();
    this.tx.end(ctx, true);
    return result;
  }

  async withBudget<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    const outer = this.budgets.getStore();
    const deadline = performance.now() + ms;
    if (outer && outer.deadline <= deadline) return fn();
    try {
      return await this.budgets.run({ deadline, ms }, fn);
    } finally {
      if (!outer) this.budget.patterns.clear();
    }
  }

  uniqueViolation(error: unknown): string | null {
    if (!(error instanceof SqliteError)) return null;
    if (error.code !== 'SQLITE_CONSTRAINT_UNIQUE' && error.code !== 'SQLITE_CONSTRAINT_PRIMARYKEY') return null;
    const field = /json_extract\(data, '\$\.(\w+)'\)|\.(\w+)$/.exec(error.message);
    return field?.[1] ?? field?.[2] ?? 'id';
  }

  isJsonError(error: unknown): boolean {
    return error instanceof SqliteError && /JSON/.test(error.message);
  }

  connections(): ConnectionCounts {
    return { open: 1, busy: this.locked ? 1 : 0, waiting: this.waiting.length };
  }

  async close(): Promise<void> {
    this.connection.close();
  }

  /** Takes the connection: at once when it is free, else after those who asked before. */
  private acquire(): Promise<void> {
    if (!this.locked) {
      this.locked = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands the connection to the next waiter, or frees it. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.locked = false;
  }

  private async execute<R>(query: SQL, run: (statement: Statement, params: Param[]) => R): Promise<R> {
    if (!this.tx.current() && this.locked) {
      await this.acquire();
      try {
        return this.executeNow(query, run);
      } finally {
        this.release();
      }
    }
    return this.executeNow(query, run);
  }

  private executeNow<R>(query: SQL, run: (statement: Statement, params: Param[]) => R): R {
    const { sql: text, params } = this.dialectImpl.sqlToQuery(query);
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.connection.prepare(text);
      if (this.statements.size >= STATEMENT_CACHE_MAX) {
        const oldest = this.statements.keys().next();
        if (!oldest.done) this.statements.delete(oldest.value);
      }
      this.statements.set(text, statement);
    }
    const budget = this.budgets.getStore();
    this.budget.deadline = budget?.deadline ?? Infinity;
    this.budget.ms = budget?.ms ?? 0;
    try {
      return run(statement, params.map(param));
    } finally {
      this.budget.deadline = Infinity;
    }
  }
}
