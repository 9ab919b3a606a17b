// The round trips of PostgresDatabase (db/postgres.ts), on a real PostgreSQL: a transaction's
// BEGIN goes out with its first statement, that statement's parameters written out as
// literals (`inlineParameters`), which must mean to PostgreSQL exactly what the parameters
// meant; a transaction that runs nothing sends nothing but its messages.
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { testPostgresDatabase, type TestDatabase } from '@carapace/test-support/postgres';
import { inlineParameters, PostgresDatabase } from '../src/db/postgres.js';
import { migrationsFolder } from '../src/db/client.js';

/** Values whose literal must read back as the parameter does. */
const AWKWARD = [
  "it's",
  'back\\slash \\x00 and \\n',
  '$1 $2 -- not a comment /* nor this */',
  '"quoted" \'twice\'\'',
  'ünïcødé ✓',
  '',
];

describe('PostgreSQL round trips', { timeout: 60_000 }, () => {
  let database: TestDatabase;
  let db: PostgresDatabase;
  /** What was sent on connections since `spy` (`sent`). */
  let spied: { mock: { calls: unknown[][] } };
  /** Every text sent on a connection since `spy`, in order. */
  const sent = () => spied.mock.calls.map(([first]) => (typeof first === 'string' ? first : (first as { text: string }).text));

  beforeAll(async () => {
    database = await testPostgresDatabase();
    db = await PostgresDatabase.open({ url: database.url, poolSize: 4 }, migrationsFolder('postgres'));
    await db.run(sql`CREATE TABLE rt (k text PRIMARY KEY, n int8)`);
  });

  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  function spy(): void {
    spied = vi.spyOn(pg.Client.prototype, 'query');
  }

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('writes parameters out as literals that PostgreSQL reads as the parameters', async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const text = `SELECT $1::text AS a, $2 AS b, $3::int8 AS c, $4::text[] AS d, $5::text AS e, '$1' AS f, "k" AS "$2", $6 = 'x' AS g -- $1
        FROM (SELECT 1 AS k) AS "t$1" /* $3 */`;
      for (const value of AWKWARD) {
        const values = [value, value, 42, [value, null, 'b,c', '{x}'], null, 'x'];
        const bound = await client.query(text, values);
        const inlined = await client.query(inlineParameters(text, values, client));
        expect(inlined.rows).toEqual(bound.rows);
        expect(inlined.rows[0]).toMatchObject({ a: value, b: value, c: '42', d: [value, null, 'b,c', '{x}'], e: null, f: '$1', $2: 1, g: true });
      }
      expect(() => inlineParameters('SELECT $2', ['only one'], client)).toThrow(/no value for \$2/);
    } finally {
      await client.end();
    }
  });

  it('sends a transaction of n statements in n + 1 round trips, BEGIN with the first', async () => {
    spy();
    const times = await db.transaction(async () => {
      const first = await db.get<{ t: string }>(sql`INSERT INTO rt (k, n) VALUES (${'a'}, ${1}) RETURNING now()::text AS t`);
      const second = await db.get<{ t: string; n: number }>(sql`SELECT now()::text AS t, n FROM rt WHERE k = ${'a'}`);
      return [first?.t, second?.t, second?.n];
    });
    expect(sent()).toHaveLength(3);
    expect(sent()[0]).toMatch(/^BEGIN; INSERT INTO rt/);
    expect(sent()[0]).toContain("VALUES ('a', '1')");
    expect(sent()[2]).toBe('COMMIT');
    // One transaction: now() is its start, the same in both statements.
    expect(times[0]).toBe(times[1]);
    expect(times[2]).toBe(1);
    expect((await db.get<{ n: number }>(sql`SELECT n FROM rt WHERE k = ${'a'}`))?.n).toBe(1);
  });

  it('rolls back the first statement with the rest', async () => {
    spy();
    await expect(
      db.transaction(async () => {
        await db.run(sql`INSERT INTO rt (k, n) VALUES (${'gone'}, ${1})`);
        await db.run(sql`INSERT INTO rt (k, n) VALUES (${'gone'}, ${2})`);
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(sent().at(-1)).toBe('ROLLBACK');
    expect(await db.get(sql`SELECT n FROM rt WHERE k = ${'gone'}`)).toBeUndefined();

    // The first statement failing is the transaction failing.
    await expect(db.transaction(() => db.run(sql`INSERT INTO rt (k, n) VALUES (${'a'}, ${9})`))).rejects.toMatchObject({ code: '23505' });
    expect((await db.get<{ n: number }>(sql`SELECT n FROM rt WHERE k = ${'a'}`))?.n).toBe(1);
  });

  it('opens a savepoint first in a transaction, and rolls it back alone', async () => {
    await db.transaction(async () => {
      await expect(
        db.transaction(async () => {
          await db.run(sql`INSERT INTO rt (k, n) VALUES (${'inner'}, ${1})`);
          throw new Error('inner fails');
        }),
      ).rejects.toThrow('inner fails');
      await db.run(sql`INSERT INTO rt (k, n) VALUES (${'outer'}, ${1})`);
    });
    expect(await db.get(sql`SELECT n FROM rt WHERE k = ${'inner'}`)).toBeUndefined();
    expect(await db.get(sql`SELECT n FROM rt WHERE k = ${'outer'}`)).toEqual({ n: 1 });
  });

  it('sends nothing for a transaction that runs no statement, and only its messages if it has some', async () => {
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (m) => heard.push(m.payload ?? ''));
    await listener.query('LISTEN rt_channel');
    try {
      spy();
      const committed = vi.fn();
      await db.transaction(async () => db.afterCommit(committed));
      expect(sent()).toEqual([]);
      expect(committed).toHaveBeenCalledOnce();
      await db.transaction(async () => db.notify('rt_channel', "a 'message'"));
      expect(sent()).toEqual(["SELECT pg_notify('rt_channel', 'a ''message''')"]);
      await expect.poll(() => heard).toEqual(["a 'message'"]);
    } finally {
      await listener.end();
    }
  });
});
