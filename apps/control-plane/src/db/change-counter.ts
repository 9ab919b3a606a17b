import type { Db } from './client.js';

/**
 * Counts the writes to a table, so that what is read from it can be cached and known stale
 * exactly: a cache remembers the value it was filled at, and any later write bumps it.
 *
 * Every repository writing a table bumps its counter (`tableChanges`) before each write
 * that can change what a cache of the table holds (a write that cannot, such as the insert
 * of a token under a new key, which no cache has read, need not: `AuthRepository.addToken`);
 * the control plane is the only process writing its database, and writes synchronously
 * (better-sqlite3), so no write can fall between a read and the caching of what was read.
 * A write rolled back still bumps: a needless refill, never a stale answer. What is read
 * inside a transaction must not be cached (it may be rolled back): see `Db.$client.inTransaction`.
 */
export class ChangeCounter {
  private count = 0;

  /** The number of writes so far. */
  get value(): number {
    return this.count;
  }

  /** Records a write. */
  bump(): void {
    this.count += 1;
  }
}

const counters = new WeakMap<Db['$client'], Map<string, ChangeCounter>>();

/** The change counter of a table of a database: one per table, whichever repository writes it. */
export function tableChanges(db: Db, table: string): ChangeCounter {
  let tables = counters.get(db.$client);
  if (!tables) {
    tables = new Map();
    counters.set(db.$client, tables);
  }
  let counter = tables.get(table);
  if (!counter) {
    counter = new ChangeCounter();
    tables.set(table, counter);
  }
  return counter;
}
