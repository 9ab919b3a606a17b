import { sql } from 'drizzle-orm';
import { Batcher } from '../batcher.js';
import type { Database } from './database.js';
import type { ChangeCounters } from './ports.js';

export type { ChangeCounters } from './ports.js';

/** The counts of a database only this process writes (SQLite), in memory. */
export class MemoryCounters implements ChangeCounters {
  private readonly counts = new Map<string, number>();

  async read(tables: readonly string[]): Promise<number> {
    let sum = 0;
    for (const table of tables) sum += this.counts.get(table) ?? 0;
    return sum;
  }

  async bump(table: string): Promise<void> {
    if (!COUNTED_TABLES.has(table)) return;
    this.counts.set(table, (this.counts.get(table) ?? 0) + 1);
  }
}

/** The most reads of the counts answered by one statement (`SharedCounters`). */
const READ_GROUP_MAX = 256;

/** The counts of a database replicas share (PostgreSQL), rows of `change_counters`. */
export class SharedCounters implements ChangeCounters {
  /**
   * Reads that come while one is under way go together, in one statement sent after they
   * all came: each still sees every write committed before it asked (so the caches stay
   * exact), and a burst of requests costs one round trip instead of one each.
   */
  private readonly reads = new Batcher<readonly string[], number>((groups) => this.readGroups(groups), { maxItems: READ_GROUP_MAX });

  constructor(private readonly db: Database) {}

  async read(tables: readonly string[]): Promise<number> {
    // Inside a transaction, on its connection (what it wrote counts): alone.
    if (this.db.inTransaction()) return (await this.readGroups([tables]))[0] ?? 0;
    return this.reads.add(tables);
  }

  private async readGroups(groups: readonly (readonly string[])[]): Promise<number[]> {
    const names = [...new Set(groups.flat())];
    const rows = await this.db.all<{ name: string; value: number }>(
      sql`SELECT name, value FROM change_counters WHERE name IN (${this.db.engine.textList(names)})`,
    );
    const values = new Map(rows.map((r) => [r.name, r.value]));
    return groups.map((tables) => tables.reduce((sum, t) => sum + (values.get(t) ?? 0), 0));
  }

  async bump(table: string): Promise<void> {
    if (!COUNTED_TABLES.has(table)) return;
    await this.db.run(
      sql`INSERT INTO change_counters (name, value) VALUES (${table}, 1) ON CONFLICT (name) DO UPDATE SET value = change_counters.value + 1`,
    );
  }
}

/**
 * The tables whose counts anyone reads: the principal cache reads tokens, users and roles,
 * the latest-version caches users and roles, the servers list's total its live count. A write to any other table counts nothing (on
 * PostgreSQL a count is a row every writer of the table would otherwise queue on).
 */
export const COUNTED_TABLES: ReadonlySet<string> = new Set(['tokens', 'users', 'roles', liveCountKey('servers')]);

/**
 * The count of a table's models created or deleted (not of its writes): what the cached
 * total of its unfiltered list is read at (`VersionedRepository`, `options.cacheLiveCount`).
 */
export function liveCountKey(table: string): string {
  return `${table}:live`;
}

const counters = new WeakMap<Database, ChangeCounters>();

/** The change counters of a database: one set, whichever repository writes a table (its engine's kind, `SqlEngine.changeCounters`). */
export function changeCounters(db: Database): ChangeCounters {
  let found = counters.get(db);
  if (!found) {
    found = db.engine.changeCounters();
    counters.set(db, found);
  }
  return found;
}
