// The bus between replicas (db/bus.ts) on the test's engine: in memory on SQLite; on
// PostgreSQL, NOTIFYs heard by a second replica's bus on the same database. A message sent in
// a transaction goes out with its commit, never after a rollback, and a savepoint rolled back
// takes its own messages with it; messages sent outside a transaction go out merged.
import { sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '@carapace/control-plane';
import { openTestDatabase } from '@carapace/test-support/database';
import { eventually } from '@carapace/test-support/eventually';
import { openBus, type Bus, type BusOrigin } from '../src/db/bus.js';
import { createLogger } from '../src/logger.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What a bus delivered on the `work` channel, in order. */
function record(bus: Bus): { payload: string; from: BusOrigin }[] {
  const got: { payload: string; from: BusOrigin }[] = [];
  bus.subscribe('work', (payload, from) => got.push({ payload, from }));
  return got;
}

describe('the bus between replicas', () => {
  let opened: Awaited<ReturnType<typeof openTestDatabase>>;
  let db: Database;
  let bus: Bus;
  /** A second replica's database and bus (PostgreSQL only). */
  let other: { db: Database; bus: Bus } | null = null;
  const log = createLogger('silent');

  beforeEach(async () => {
    opened = await openTestDatabase();
    db = opened.db;
    bus = await openBus(db, log);
    if (opened.url) {
      const otherDb = await openDatabase(opened.url, { poolSize: 2 });
      other = { db: otherDb, bus: await openBus(otherDb, log) };
    }
  });
  afterEach(async () => {
    await bus.close();
    await db.close();
    if (other) {
      await other.bus.close();
      await other.db.close();
      other = null;
    }
    await opened.drop();
  });

  /** Waits until the other replica heard `n` messages (at once on SQLite, which has none). */
  async function heard(got: unknown[], n: number): Promise<void> {
    if (other) await eventually(`the other replica to hear ${n} messages (it heard ${got.length})`, () => got.length >= n, 5000);
  }

  it('sends what a transaction published with its commit, nothing of a rollback or of a savepoint rolled back', async () => {
    const here = record(bus);
    const there = other ? record(other.bus) : [];
    await db.transaction(async () => {
      await bus.publish('work', 'kept-1');
      await db.transaction(async () => {
        await bus.publish('work', 'kept-2');
      });
      await expect(
        db.transaction(async () => {
          await bus.publish('work', 'dropped-with-its-savepoint');
          throw new Error('undone');
        }),
      ).rejects.toThrow('undone');
      await db.run(sql`SELECT 1`);
      // Nothing leaves before the commit.
      expect(here).toEqual([]);
      await bus.publish('work', 'kept-3');
    });
    await expect(
      db.transaction(async () => {
        await bus.publish('work', 'dropped-with-its-transaction');
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await heard(there, 3);
    await sleep(other ? 200 : 0); // anything more would have come by now
    const payloads = ['kept-1', 'kept-2', 'kept-3'];
    expect(here).toEqual(payloads.map((payload) => ({ payload, from: 'here' })));
    if (other) expect(there).toEqual(payloads.map((payload) => ({ payload, from: 'elsewhere' })));
  });

  it('merges a burst of messages sent outside a transaction; each replica hears each message once', async () => {
    const here = record(bus);
    const there = other ? record(other.bus) : [];
    for (let i = 0; i < 50; i++) await bus.publish('work', i % 2 === 0 ? 'even' : 'odd');
    // Delivered here at once, one by one.
    expect(here).toHaveLength(50);
    expect(here.every((m) => m.from === 'here')).toBe(true);
    await heard(there, 2);
    await sleep(other ? 200 : 0);
    if (other) expect(there.map((m) => m.payload).sort()).toEqual(['even', 'odd']);
    if (other) expect(there.every((m) => m.from === 'elsewhere')).toBe(true);
  });
});
