import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { afterAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { ENV_ENABLE, ENV_URL, missingPostgresError, TestPostgres, testPostgresDatabase, testPostgresServer, type TestDatabase } from '@carapace/test-support/postgres';
import { eventually } from '@carapace/test-support/eventually';

// The test PostgreSQL of test/support/postgres.ts: a real server, one per vitest run, a
// database of its own per test.

const databases: TestDatabase[] = [];
afterAll(async () => {
  for (const db of databases) await db.drop();
});

async function database(): Promise<TestDatabase> {
  const db = await testPostgresDatabase();
  databases.push(db);
  return db;
}

async function query<T extends pg.QueryResultRow = Record<string, unknown>>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

function uidOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Uid:'));
  return Number(line?.split(/\s+/)[1]);
}

function alive(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z');
  } catch {
    return false;
  }
}

function postgresUid(): number | undefined {
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((l) => l.split(':'))
    .find((f) => f[0] === 'postgres');
  return entry ? Number(entry[2]) : undefined;
}

describe('test PostgreSQL', () => {
  it('is the one server of the run: the global setup provides it to inject() and the environment alike', async () => {
    const provided = inject('carapacePostgres');
    if (process.env[ENV_ENABLE] === '0') {
      expect(provided).toBeNull();
      expect(process.env[ENV_URL]).toBeUndefined();
      return;
    }
    expect(provided?.url).toMatch(/^postgres:\/\/carapace:[0-9a-f]{36}@127\.0\.0\.1:\d+\/postgres$/);
    expect(process.env[ENV_URL]).toBe(provided?.url);
    expect(await testPostgresServer()).toBe(provided?.url);
  });

  it('gives each test a database of its own: a table written in one is absent from the other', async () => {
    const [a, b] = await Promise.all([database(), database()]);
    expect(a.url).not.toBe(b.url);
    expect(new URL(a.url).host).toBe(new URL(b.url).host);
    await query(a.url, 'CREATE TABLE t (id integer PRIMARY KEY, name text NOT NULL)');
    await query(a.url, "INSERT INTO t VALUES (1, 'one'), (2, 'two')");
    expect(await query(a.url, 'SELECT name FROM t ORDER BY id')).toEqual([{ name: 'one' }, { name: 'two' }]);
    expect(await query(b.url, "SELECT to_regclass('public.t') AS t")).toEqual([{ t: null }]);
    await expect(query(b.url, 'SELECT * FROM t')).rejects.toMatchObject({ code: '42P01' });
  });

  it('takes 50 connections at once', async () => {
    const db = await database();
    const pool = new pg.Pool({ connectionString: db.url, max: 50 });
    try {
      const clients = await Promise.all(Array.from({ length: 50 }, () => pool.connect()));
      const pids = await Promise.all(clients.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid));
      expect(new Set(pids).size).toBe(50);
      const [{ n }] = (await clients[0]!.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database()')).rows as [{ n: number }];
      expect(n).toBe(50);
      for (const c of clients) c.release();
    } finally {
      await pool.end();
    }
  });

  it('runs as an unprivileged user, on 127.0.0.1 only, with passwords and without durability', async () => {
    const db = await database();
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    onTestFinished(() => client.end());
    const [settings] = (
      await client.query(
        `SELECT pg_backend_pid() AS backend, current_setting('data_directory') AS data, current_setting('listen_addresses') AS listen,
              current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sync, current_setting('full_page_writes') AS fpw,
              current_setting('max_connections')::int AS max, current_setting('password_encryption') AS encryption,
              (SELECT rolname FROM pg_roles WHERE oid = 10) AS superuser`,
      )
    ).rows;
    expect(settings).toMatchObject({ listen: '127.0.0.1', fsync: 'off', sync: 'off', fpw: 'off', max: 200, encryption: 'scram-sha-256', superuser: 'carapace' });
    const data = settings!.data as string;
    const postmaster = Number(readFileSync(resolve(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    // The backend of `client` (alive while it is connected) and the postmaster.
    for (const pid of [postmaster, settings!.backend as number]) {
      if (process.getuid!() === 0) {
        expect(uidOf(pid)).not.toBe(0);
        expect(uidOf(pid)).toBe(postgresUid() ?? 65534);
      } else {
        expect(uidOf(pid)).toBe(process.getuid!());
      }
    }
    expect(statSync(data).uid).toBe(uidOf(postmaster));
    const wrong = new URL(db.url);
    wrong.password = 'wrong';
    await expect(query(wrong.toString(), 'SELECT 1')).rejects.toMatchObject({ code: '28P01' });
  });

  it('drops a database, even with connections open', async () => {
    const db = await testPostgresDatabase();
    const name = new URL(db.url).pathname.slice(1);
    const open = new pg.Client({ connectionString: db.url });
    open.on('error', () => undefined);
    await open.connect();
    await db.drop();
    await expect(query(db.url, 'SELECT 1')).rejects.toMatchObject({ code: '3D000' });
    const admin = await testPostgresServer();
    expect(await query(admin, 'SELECT datname FROM pg_database WHERE datname = $1', [name])).toEqual([]);
    await open.end().catch(() => undefined);
  });

  it('says how to install PostgreSQL where it is missing', () => {
    expect(missingPostgresError().message).toContain('bash scripts/install-system-deps.sh');
  });
});

// Each starts a server of its own (initdb: about a second, several on a loaded machine).
describe('a private TestPostgres', { timeout: 90_000 }, () => {
  it('starts, serves its databases, then stops and leaves no server and no directory', async () => {
    const server = await TestPostgres.start();
    const pid = server.pid!;
    expect(alive(pid)).toBe(true);
    expect(existsSync(server.dir)).toBe(true);
    const url = await server.createDatabase('private_one');
    expect(new URL(url).pathname).toBe('/private_one');
    expect(await query(url, 'SELECT current_database() AS db')).toEqual([{ db: 'private_one' }]);
    await server.dropDatabase(url);
    await server.stop();
    expect(alive(pid)).toBe(false);
    expect(existsSync(server.dir)).toBe(false);
    await expect(query(server.url, 'SELECT 1')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('stops cleanly when stopped while it starts', async () => {
    const server = await TestPostgres.launch();
    await server.stop();
    await expect(server.ready).rejects.toThrow(/stopped while starting/);
    expect(existsSync(server.dir)).toBe(false);
  });

  it('dies with the process that started it, even killed by SIGKILL; the next start removes its directory', async () => {
    const script = `const { TestPostgres } = await import(${JSON.stringify(resolve(import.meta.dirname, 'support/postgres.ts'))});
      const server = await TestPostgres.start();
      console.log(JSON.stringify({ pid: server.pid, dir: server.dir }));
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--conditions=@carapace/source', '--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await new Promise<string>((resolveLine, reject) => {
      createInterface({ input: child.stdout }).once('line', resolveLine);
      child.once('exit', (code) => reject(new Error(`the child exited (${code}) before its server started`)));
    });
    const { pid, dir } = JSON.parse(line) as { pid: number; dir: string };
    expect(alive(pid)).toBe(true);
    child.kill('SIGKILL');
    // Reaped, not a zombie whose /proc entry still names it as the directory's live owner.
    await eventually('the killed child is reaped', () => child.signalCode !== null);
    await eventually('the orphaned server ends', () => !alive(pid));
    expect(existsSync(dir)).toBe(true);
    const next = await TestPostgres.start();
    try {
      // Its sweep removes the directory; in a full run another test process may be sweeping
      // at the same moment and be the one still removing it (the sweep leaves a directory
      // without its owner file to whoever is at it): gone within moments either way.
      await eventually('the stale directory is removed', () => !existsSync(dir), 5_000);
    } finally {
      await next.stop();
    }
  });
});
