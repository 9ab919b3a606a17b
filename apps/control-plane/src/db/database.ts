import type { SQL } from 'drizzle-orm';
import type { SqlEngine } from './engine.js';
import { ScopedStorage } from './scoped-storage.js';

/** Which database engine holds the control plane's tables. */
export type Dialect = 'sqlite' | 'postgres';

/**
 * The control plane's database, whichever engine holds it: statements are Drizzle `sql`
 * templates, rendered for the engine, and every call is asynchronous.
 *
 * Transactions follow the caller through its `await`s (AsyncLocalStorage, enabled only while one is open: `ScopedStorage`): any statement
 * run while a `transaction` callback is under way, by whichever repository, belongs to that
 * transaction, and a `transaction` opened inside another is a savepoint of it. So a service
 * writes `await db.transaction(async () => { await a.x(); await b.y(); })` and both writes
 * commit or roll back together, as they did when the database was synchronous.
 *
 * Work that must not see uncommitted state (waking a follower, handing out work) is queued
 * with `afterCommit`.
 */
export interface Database {
  /**
   * Which engine this is, for tests and diagnostics only: what differs between the engines is
   * asked of `engine` (a lint rule keeps the control plane's code from reading this).
   */
  readonly dialect: Dialect;
  /** The SQL, and what else, in which this engine differs from the other (see `SqlEngine`). */
  readonly engine: SqlEngine;
  /**
   * Whether several control plane replicas may share this database (PostgreSQL): what they
   * must agree on (login and reset throttles) is then counted in it, not in memory.
   */
  readonly sharedByReplicas: boolean;
  /** Every row the statement returns. */
  all<T>(query: SQL): Promise<T[]>;
  /** The first row, or undefined. */
  get<T>(query: SQL): Promise<T | undefined>;
  /** Runs a statement; returns how many rows it changed. */
  run(query: SQL): Promise<number>;
  /**
   * Runs `fn` in a transaction (a savepoint when one is open already): committed when `fn`
   * resolves, rolled back when it throws.
   */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /** Whether the caller runs inside a transaction (what it reads may yet be rolled back). */
  inTransaction(): boolean;
  /** Runs `fn` once the caller's transaction commits (at once when there is none); dropped on rollback. */
  afterCommit(fn: () => void): void;
  /**
   * Runs the statements of `fn` under a wall-clock budget of `ms`: a statement still running
   * then is stopped and `QueryBudgetExceeded` thrown.
   */
  withBudget<T>(ms: number, fn: () => Promise<T>): Promise<T>;
  /**
   * The column a unique constraint that `error` reports stands for (`id` for the primary
   * key of a versioned table, the field of an expression index), or null when `error` is
   * no unique violation.
   */
  uniqueViolation(error: unknown): string | null;
  /**
   * Whether `error` is the engine's JSON functions failing on a stored document they cannot
   * read (SQLite's on a malformed text; never on PostgreSQL, whose `jsonb` is always valid).
   */
  isJsonError(error: unknown): boolean;
  /**
   * This replica's connections now: how many are open, how many of those are busy (a
   * statement or a transaction holds them), and how many callers wait for one. A pool that
   * is always busy with callers waiting is too small (`database.poolSize`).
   */
  connections(): ConnectionCounts;
  /** Closes the connections. */
  close(): Promise<void>;
}

/** See `Database.connections`. */
export interface ConnectionCounts {
  readonly open: number;
  readonly busy: number;
  readonly waiting: number;
}

/** A query run under `withBudget` went past its deadline and was stopped. */
export class QueryBudgetExceeded extends Error {
  constructor(readonly budgetMs: number) {
    super(`query stopped after its budget of ${budgetMs} ms`);
  }
}

/**
 * The database's own regular expression engine refused a `regexp` filter that RE2 took
 * (PostgreSQL's: a counted repetition over 255, a class it does not know).
 */
export class RejectedPattern extends Error {}

/** The state of one open transaction, carried by AsyncLocalStorage. */
export interface TxContext<C> {
  /** The connection the transaction runs on. */
  readonly connection: C;
  /** Until commit or rollback: a task started inside the transaction and still running after it must not join it. */
  open: boolean;
  /** Savepoints open inside it. */
  depth: number;
  readonly afterCommit: (() => void)[];
  /**
   * Messages the engine sends at commit, with it (PostgreSQL's `pg_notify`, `[channel,
   * payload]`): one round trip for all of a transaction's messages, and none if it rolls back.
   */
  readonly notifications: (readonly [channel: string, payload: string])[];
}

/**
 * The transactions of one database as they follow their callers (AsyncLocalStorage): which
 * one the caller is in, what runs after its commit, and its savepoints. Both engines' ports
 * keep theirs here; only how a statement reaches the connection differs.
 */
export class Transactions<C> {
  private readonly store = new ScopedStorage<TxContext<C>>();

  /** The caller's open transaction, if any (one that ended is none, even to a task it started). */
  current(): TxContext<C> | undefined {
    const ctx = this.store.getStore();
    return ctx?.open ? ctx : undefined;
  }

  inTransaction(): boolean {
    return this.current() !== undefined;
  }

  afterCommit(fn: () => void): void {
    const ctx = this.current();
    if (ctx) ctx.afterCommit.push(fn);
    else fn();
  }

  /** A new open transaction on `connection`, for `run`. */
  begin(connection: C): TxContext<C> {
    return { connection, open: true, depth: 0, afterCommit: [], notifications: [] };
  }

  /** Runs `fn` as the transaction `ctx` (opened by the caller, which commits or rolls it back). */
  run<T>(ctx: TxContext<C>, fn: () => Promise<T>): Promise<T> {
    return this.store.run(ctx, fn);
  }

  /** Ends `ctx`; after a commit, runs what waited for it (one callback's failure does not stop the others). */
  end(ctx: TxContext<C>, committed: boolean): void {
    ctx.open = false;
    if (!committed) return;
    for (const fn of ctx.afterCommit) {
      try {
        fn();
      } catch {
        // A callback's failure is its own: the transaction is committed.
      }
    }
  }

  /**
   * Runs `fn` in a savepoint of `ctx`, `exec` sending its statements to the connection. What
   * the savepoint queued for the commit (`afterCommit`, notifications) goes if it rolls back.
   */
  async savepoint<T>(ctx: TxContext<C>, fn: () => Promise<T>, exec: (statement: string) => unknown): Promise<T> {
    const name = `sp${++ctx.depth}`;
    const queued = { afterCommit: ctx.afterCommit.length, notifications: ctx.notifications.length };
    await exec(`SAVEPOINT ${name}`);
    try {
      const result = await fn();
      await exec(`RELEASE SAVEPOINT ${name}`);
      return result;
    } catch (e) {
      await exec(`ROLLBACK TO SAVEPOINT ${name}`);
      await exec(`RELEASE SAVEPOINT ${name}`);
      ctx.afterCommit.length = queued.afterCommit;
      ctx.notifications.length = queued.notifications;
      throw e;
    } finally {
      ctx.depth -= 1;
    }
  }
}

/** Runs `fn` in the caller's transaction, or in a transaction of its own when there is none (never a savepoint). */
export function atomically<T>(db: Database, fn: () => Promise<T>): Promise<T> {
  return db.inTransaction() ? fn() : db.transaction(fn);
}
