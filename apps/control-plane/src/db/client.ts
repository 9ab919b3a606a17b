import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { RE2JS, RE2JSException } from 're2js';
import * as schema from './schema/index.js';

/** The Drizzle database of the control plane. */
export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

const MIGRATIONS = resolve(dirname(fileURLToPath(import.meta.url)), '../../drizzle');
/** The longest `regexp` filter pattern taken. */
export const MAX_REGEXP_LENGTH = 256;
/** The largest RE2 program a pattern may compile to: matching costs up to program size × text length. */
export const MAX_REGEXP_INSTRUCTIONS = 1000;
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

/** A query run under `withQueryBudget` went past its deadline and was stopped. */
export class QueryBudgetExceeded extends Error {
  constructor(readonly budgetMs: number) {
    super(`query stopped after its budget of ${budgetMs} ms`);
  }
}

/**
 * The deadline (in `performance.now()` time) of the budgeted query running on a database,
 * and the patterns compiled for it.
 */
interface Budget {
  deadline: number;
  ms: number;
  readonly patterns: Map<string, Pattern>;
}
interface Pattern {
  readonly re: RE2JS;
  readonly instructions: number;
}
const budgets = new WeakMap<Database.Database, Budget>();

function checkBudget(budget: Budget, costMs = 0): void {
  if (performance.now() + costMs > budget.deadline) throw new QueryBudgetExceeded(budget.ms);
}

/**
 * Runs `fn` (synchronous statements) with a wall-clock budget: the `regexp` function and
 * `budget_check()` (which the list queries evaluate on every row they scan) throw
 * `QueryBudgetExceeded` once `ms` have passed, which aborts the statement. A statement
 * runs on the event loop, so this bounds how long one list query can hold every other
 * request.
 */
export function withQueryBudget<T>(db: Db, ms: number, fn: () => T): T {
  const budget = budgets.get(db.$client);
  if (!budget) return fn();
  const outer = { deadline: budget.deadline, ms: budget.ms };
  const deadline = performance.now() + ms;
  if (deadline < budget.deadline) {
    budget.deadline = deadline;
    budget.ms = ms;
  }
  try {
    return fn();
  } finally {
    budget.deadline = outer.deadline;
    budget.ms = outer.ms;
    if (outer.deadline === Infinity) budget.patterns.clear();
  }
}

/**
 * Opens (creating if needed) the SQLite database at `path` (`:memory:` for tests), sets
 * WAL, foreign keys and a busy timeout, registers the `regexp` and `budget_check`
 * functions and applies the committed migrations.
 */
export function openDatabase(path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new Database(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const budget: Budget = { deadline: Infinity, ms: 0, patterns: new Map() };
  budgets.set(sqlite, budget);
  sqlite.function('regexp', { deterministic: true }, (pattern: unknown, value: unknown) => {
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
  sqlite.function('budget_check', { deterministic: false, varargs: true }, () => {
    checkBudget(budget);
    return 1;
  });
  const db: Db = drizzle({ client: sqlite, schema });
  migrate(db, { migrationsFolder: MIGRATIONS });
  return db;
}

/**
 * Compiles a user-given regular expression with RE2 (re2js, a port of RE2): matching takes
 * time linear in the text, whatever the pattern. Throws an `Error` saying why a pattern is
 * refused: too long, not valid, or using what RE2 cannot run in linear time (backreferences,
 * lookaround).
 */
export function compileRegexp(pattern: string): RE2JS {
  if (pattern.length > MAX_REGEXP_LENGTH) throw new Error(`the pattern is longer than ${MAX_REGEXP_LENGTH} characters`);
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (e) {
    if (e instanceof RE2JSException) {
      throw new Error(`${e.message} (RE2 syntax: no backreferences nor lookaround)`, { cause: e });
    }
    throw e;
  }
  if (programSize(re) > MAX_REGEXP_INSTRUCTIONS) {
    throw new Error(`the pattern is too complex: it compiles to more than ${MAX_REGEXP_INSTRUCTIONS} RE2 instructions`);
  }
  return re;
}

function programSize(re: RE2JS): number {
  // re2js types the count as `any`; it is the size of RE2's compiled program.
  return Number(re.re2().numberOfInstructions());
}
