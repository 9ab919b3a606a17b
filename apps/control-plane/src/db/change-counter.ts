import { sql } from 'drizzle-orm';
import { Batcher } from '../batcher.js';
import { textList, type Database } from './database.js';

/**
 * Counts the writes to tables, so that what is read from them can be cached and known stale
 * exactly: a cache takes the count before it reads, keeps what it read under that count, and
 * any later write changes it.
 *
 * Every repository writing a table bumps its counter (`bump`) with each write that can change
 * what a cache of the table holds (a write that cannot, such as the insert of a token under a
 * new key, which no cache has read, need not: `AuthRepository.addToken`). What is read inside
 * a transaction must not be cached (it may be rolled back): see `Database.inTransaction`.
 *
 * On SQLite the control plane is the only process writing its database, and the counts live
 * in memory (a write rolled back still bumps: a needless refill, never a stale answer). On
 * PostgreSQL several replicas share the database, so the counts are rows of
 * `change_counters`, bumped in the writer's transaction: a replica reads them before it trusts
 * its cache, and a change committed through another replica is seen by the next request.
 */
export interface ChangeCounters {
  /** A number that changes whenever one of `tables` is written. */
  read(tables: readonly string[]): Promise<number>;
  /** Records a write to `table` (in the caller's transaction, if one is open). */
  bump(table: string): Promise<void>;
}

class MemoryCounters implements ChangeCounters {
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

class SharedCounters implements ChangeCounters {
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
      sql`SELECT name, value FROM change_counters WHERE name IN (${textList(this.db.dialect, names)})`,
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
 * the latest-version caches users and roles. A write to any other table counts nothing (on
 * PostgreSQL a count is a row every writer of the table would otherwise queue on).
 */
export const COUNTED_TABLES: ReadonlySet<string> = new Set(['tokens', 'users', 'roles']);

const counters = new WeakMap<Database, ChangeCounters>();

/** The change counters of a database: one set, whichever repository writes a table. */
export function changeCounters(db: Database): ChangeCounters {
  let found = counters.get(db);
  if (!found) {
    found = db.dialect === 'postgres' ? new SharedCounters(db) : new MemoryCounters();
    counters.set(db, found);
  }
  return found;
}
