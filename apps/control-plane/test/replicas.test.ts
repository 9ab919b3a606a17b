// Two (and more) control-plane replicas on one PostgreSQL database, in this process, with
// runners speaking the real protocol (SimulatedRunner): whatever goes through one replica is
// seen through the other, work reaches runners wherever they are connected, a replica's death
// loses nothing, and concurrent dispatch never hands one execution or one server out twice.
import { sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { changeCounters } from '../src/db/change-counter.js';
import { makeFacts } from '@carapace/test-support/facts';

import { MailSink } from '@carapace/test-support/mail-sink';
import { testPostgresDatabase, type TestDatabase } from '@carapace/test-support/postgres';
import { Replica, REPLICA_DISCOVERY_TOKEN } from '@carapace/test-support/replica';
import { SimulatedRunner } from '@carapace/test-support/simulated-runner';
import { eventually } from '@carapace/test-support/eventually';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Whether a statement reads the change counts (`db/change-counter.ts`). */
const readsCounts = (query: SQL) => new PgDialect().sqlToQuery(query).sql.includes('FROM change_counters');

describe('replicas on one PostgreSQL database', { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let a: Replica;
  let b: Replica;
  let token: string;
  let clusterId: string;
  let serverCount = 0;
  const mail = new MailSink();

  /** Registers a server through `via` and records its facts, as a runner would. */
  async function addServer(via: Replica): Promise<string> {
    const n = ++serverCount;
    const id = `00000000-0000-4000-9000-${String(n).padStart(12, '0')}`;
    const ip = `10.9.${Math.floor(n / 250)}.${(n % 250) + 2}`;
    const res = await via.api('POST', '/v1/server/', { id, host: ip, username: 'ansible' }, REPLICA_DISCOVERY_TOKEN);
    expect(res.status).toBe(200);
    await via.container.services.servers.recordFacts(id, makeFacts(`replica${n}`, ip), null);
    return id;
  }

  /** Creates a hello_world configuration of these servers and runs it through `via`; returns the execution id. */
  async function run(via: Replica, serverIds: string[]): Promise<string> {
    const config = await via.api('POST', '/v1/playbook_configuration/', { name: 'hello', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: serverIds }, token);
    expect(config.status, JSON.stringify(config.json)).toBe(200);
    const execution = await via.api('POST', '/v1/execution/', { playbook_configuration: { id: config.json.id, version: config.json.version } }, token);
    expect(execution.status, JSON.stringify(execution.json)).toBe(200);
    return execution.json.id as string;
  }

  async function state(via: Replica, id: string): Promise<string> {
    return (await via.api('GET', `/v1/execution/${id}/`, undefined, token)).json.data.state as string;
  }

  async function runnerToken(via: Replica, name: string): Promise<string> {
    const res = await via.api('POST', '/v1/runner/', { name }, token);
    expect(res.status).toBe(200);
    return res.json.token as string;
  }

  async function heldLeases(): Promise<number> {
    return (await a.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM server_locks`))?.n ?? 0;
  }

  beforeAll(async () => {
    database = await testPostgresDatabase();
    const smtp = { CARAPACE_SMTP_HOST: '127.0.0.1', CARAPACE_SMTP_PORT: String(await mail.start()) };
    const leases = { CARAPACE_RUNNER_LEASE_TIMEOUT_MS: '6000', CARAPACE_RUNNER_HEARTBEAT_INTERVAL_MS: '1000' };
    // Both start at once: one creates the first user, the other finds it.
    [a, b] = await Promise.all([Replica.start(database.url, { ...leases, ...smtp }), Replica.start(database.url, { ...leases, ...smtp })]);
    token = await a.login();
    clusterId = (await a.api('POST', '/v1/cluster/', { name: 'replicated' }, token)).json.id as string;
  });

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await database?.drop();
    await mail.stop();
  });

  it('count the servers through B again after one came or went through A (the kept total of the list)', async () => {
    const total = async (via: Replica): Promise<number> => (await via.api('GET', '/v1/server/?per_page=1', undefined, token)).json.total as number;
    const before = await total(b);
    expect(await total(a)).toBe(before);
    const id = await addServer(a);
    expect(await total(b)).toBe(before + 1);
    expect((await b.api('DELETE', `/v1/server/${id}/`, undefined, token)).status).toBe(200);
    expect(await total(a)).toBe(before);
    expect(await total(b)).toBe(before);
  });

  it('serve one installation: a token, a user, a role change and a logout through A apply to the next request through B', async () => {
    const login = await b.api('POST', '/v1/auth/', { username: 'root', password: 'root-password-for-tests' });
    expect(login.status).toBe(200);
    const rootB = login.json.id as string;
    expect((await a.api('GET', '/v1/user/self/', undefined, rootB)).status).toBe(200);
    // A role that may view users, given to a new user through A; its token used through B.
    const role = await a.api('POST', '/v1/role/', { name: 'viewers', permissions: [{ name: 'api', permissions: ['view_user'] }, { name: 'playbook', permissions: [] }] }, token);
    const user = await a.api('POST', '/v1/user/', { login: 'viewer', email: 'viewer@example.com', full_name: 'Viewer', role_id: role.json.id }, token);
    expect(user.status).toBe(200);
    // Its password comes by mail, sent once by whichever replica took it from the outbox.
    const welcome = await mail.waitFor('viewer@example.com', 'account');
    const password = /Password: (\S+)/.exec(welcome.text)?.[1] ?? '';
    await sleep(300);
    expect(mail.mails.filter((m) => m.to.includes('viewer@example.com'))).toHaveLength(1);
    const viewer = await b.api('POST', '/v1/auth/', { username: 'viewer', password });
    expect(viewer.status, JSON.stringify(viewer.json)).toBe(200);
    const viewerToken = viewer.json.id as string;
    expect((await b.api('GET', '/v1/user/', undefined, viewerToken)).status).toBe(200);
    // B has the principal cached now; the role loses the permission through A.
    const latest = (await a.api('GET', `/v1/role/${role.json.id}/`, undefined, token)).json;
    const changed = await a.api('PUT', `/v1/role/${role.json.id}/`, { ...latest, data: { ...latest.data, permissions: [{ name: 'api', permissions: [] }, { name: 'playbook', permissions: [] }] } }, token);
    expect(changed.status, JSON.stringify(changed.json)).toBe(200);
    expect((await b.api('GET', '/v1/user/', undefined, viewerToken)).status).toBe(403);
    // A logout through A ends the token through B at once.
    expect((await b.api('GET', '/v1/user/self/', undefined, rootB)).status).toBe(200);
    expect((await a.api('DELETE', '/v1/auth/', undefined, rootB)).status).toBe(200);
    expect((await b.api('GET', '/v1/user/self/', undefined, rootB)).status).toBe(401);
  });

  it('read the change counts of a burst of requests together, each still seeing every write committed before it asked', async () => {
    const counters = changeCounters(b.db);
    const statements = vi.spyOn(b.db, 'all');
    try {
      const first = counters.read(['users', 'roles']);
      // Asked while the first read is under way: these go together, after it.
      const burst = Array.from({ length: 40 }, (_, i) => counters.read(i % 2 ? ['users'] : ['users', 'roles']));
      const values = await Promise.all([first, ...burst]);
      // B's own background work (outboxes, sweeps) may read meanwhile: only reads of the counts count.
      expect(statements.mock.calls.filter(([query]) => readsCounts(query)).length).toBeLessThanOrEqual(2);
      const both = values[0];
      expect(values.filter((_, i) => i === 0 || i % 2 === 1)).toEqual(Array(21).fill(both));

      // A write committed through A while B's read is under way (its answer held back after
      // PostgreSQL gave it): whatever B is asked after the commit counts the write.
      statements.mockRestore();
      const all = b.db.all.bind(b.db);
      let answered!: () => void;
      let release!: () => void;
      const read = new Promise<void>((r) => (answered = r));
      const gate = new Promise<void>((r) => (release = r));
      let held = false;
      vi.spyOn(b.db, 'all').mockImplementation(async (query) => {
        const rows = await all(query);
        if (held || !readsCounts(query)) return rows;
        held = true;
        answered();
        await gate;
        return rows;
      });
      const inFlight = counters.read(['roles']);
      await read;
      await a.db.transaction(() => changeCounters(a.db).bump('roles'));
      const later = [counters.read(['roles']), counters.read(['roles'])];
      release();
      const earlier = await inFlight;
      expect(await Promise.all(later)).toEqual([earlier + 1, earlier + 1]);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('count failed logins across replicas: spreading them over A and B gains nothing', async () => {
    const [c] = [await Replica.start(database.url, { CARAPACE_THROTTLE_LOGIN_FAILURES_PER_USER: '4' })];
    try {
      const statuses: number[] = [];
      for (const via of [a, c, a, c, a, c]) {
        statuses.push((await via.api('POST', '/v1/auth/', { username: 'ghost', password: 'wrong' }, undefined)).status);
      }
      // This replica's limit is 4 failures per login and address, whichever replica saw them.
      expect(statuses.slice(0, 4).every((s) => s === 401)).toBe(true);
      expect((await c.api('POST', '/v1/auth/', { username: 'ghost', password: 'wrong' })).status).toBe(429);
    } finally {
      await c.stop();
    }
  });

  it('hand work created through B to a runner connected to A at once, and list that runner through B', async () => {
    const server = await addServer(a);
    const runner = new SimulatedRunner({ name: 'on-a', token: await runnerToken(a, 'on-a'), addresses: [a.grpcAddress], slots: 1 });
    await runner.start();
    try {
      const listed = await eventually('the runner listed through B', async () => {
        const items = (await b.api('GET', '/v1/runner/', undefined, token)).json.items as { name: string; state: string }[];
        return items.find((r) => r.name === 'on-a' && r.state === 'connected');
      });
      expect(listed).toBeDefined();
      const started = performance.now();
      const id = await run(b, [server]);
      await runner.until(() => runner.runs.has(id), 5000, 'the assignment');
      // Told by a notification, not found by a sweep (every lease timeout / 3 = 2 s here).
      expect(performance.now() - started).toBeLessThan(1500);
      await eventually('completed', async () => ((await state(b, id)) === 'completed' ? true : undefined));
      expect(await heldLeases()).toBe(0);
    } finally {
      runner.close();
    }
  });

  it('look at the queue after work another replica announced, unless a look began after the announcement', async () => {
    const engine = b.container.services.engine;
    let emitted = 0;
    const off = engine.workAvailable.on(() => (emitted += 1));
    /** A's announcement, once B has heard it (its engine's handler, subscribed first, has run). */
    const announce = () =>
      new Promise<void>((resolve) => {
        const stop = b.container.bus.subscribe('work', (_payload, from) => {
          if (from !== 'elsewhere') return;
          stop();
          resolve();
        });
        void a.container.services.engine.queued();
      });
    try {
      await announce();
      await sleep(150);
      // Nothing looked at the queue on B since: it looks once, a moment later.
      expect(emitted).toBe(1);
      await announce();
      // A look begun after the announcement (its own runners' work, under load) has seen it.
      await engine.claimFor([['nobody', 1]]);
      await sleep(150);
      expect(emitted).toBe(1);
    } finally {
      off();
    }
  });

  it('follow a log through B while the runner reports to A; kill A midway: the runner goes on through B, nothing lost or doubled', async () => {
    const server = await addServer(a);
    const c = await Replica.start(database.url, { CARAPACE_RUNNER_LEASE_TIMEOUT_MS: '6000', CARAPACE_RUNNER_HEARTBEAT_INTERVAL_MS: '1000' });
    const runner = new SimulatedRunner({
      name: 'mover',
      token: await runnerToken(a, 'mover'),
      addresses: [c.grpcAddress, b.grpcAddress],
      slots: 1,
      logChunks: 40,
      logEveryMs: 50,
    });
    await runner.start();
    try {
      const id = await run(b, [server]);
      // Followed through B from the start.
      const followed = fetch(`${b.url}/v1/execution/${id}/log/?follow=yes`, { headers: { authorization: token } }).then((r) => r.text());
      await runner.until(() => runner.runs.has(id), 5000, 'the assignment');
      await sleep(600);
      expect(runner.connects).toBe(1);
      await c.crash();
      await eventually('completed', async () => ((await state(b, id)) === 'completed' ? true : undefined), 30_000);
      expect(runner.connects).toBeGreaterThan(1);
      const expected = Array.from({ length: 40 }, (_, i) => `TASK [simulated : step ${i}] ok: [${server}]\n`).join('');
      const stored = (await b.api('GET', `/v1/execution/${id}/log/`, undefined, token)).json;
      expect(stored.data).toBe(expected);
      expect(await followed).toBe(expected);
      const steps = (await b.api('GET', `/v1/execution/${id}/steps/?all=yes`, undefined, token)).json;
      expect(steps.total).toBe(1);
      expect(await heldLeases()).toBe(0);
      await runner.until(() => runner.settled(), 5000, 'every event acknowledged');
    } finally {
      runner.close();
      await c.stop();
    }
  });

  it('never hand one execution or one server to two runners, with both replicas dispatching at once', async () => {
    const servers = await Promise.all(Array.from({ length: 8 }, (_, i) => addServer(i % 2 ? a : b)));
    const runners: SimulatedRunner[] = [];
    for (let i = 0; i < 8; i++) {
      const via = i % 2 ? a : b;
      const name = `stress-${i}`;
      runners.push(new SimulatedRunner({ name, token: await runnerToken(via, name), addresses: [via.grpcAddress], slots: 2, runMs: () => 5 + Math.floor(Math.random() * 25) }));
    }
    await Promise.all(runners.map((r) => r.start()));
    try {
      const ids: string[] = [];
      // 60 executions of two servers each, created through A and B in turns, all at once.
      const created = await Promise.all(
        Array.from({ length: 60 }, (_, n) => {
          const first = servers[n % servers.length] as string;
          const second = servers[(n * 3 + 1) % servers.length] as string;
          return run(n % 2 ? a : b, first === second ? [first] : [first, second]);
        }),
      );
      ids.push(...created);
      await eventually(
        'every execution completed',
        async () => {
          const states = await Promise.all(ids.map((id) => state(a, id)));
          return states.every((s) => s === 'completed') ? true : undefined;
        },
        60_000,
      );
      const runs = runners.flatMap((r) => [...r.runs.values()]);
      expect(runners.flatMap((r) => r.duplicates)).toEqual([]);
      // Each execution ran once, on one runner.
      expect(runs.map((r) => r.executionId).sort()).toEqual([...ids].sort());
      // Each execution was started once (one `started` version).
      for (const id of ids) {
        const versions = (await b.api('GET', `/v1/execution/${id}/version/?all=yes`, undefined, token)).json.items as { data: { state: string } }[];
        expect(versions.filter((v) => v.data.state === 'started')).toHaveLength(1);
      }
      // No server ran two executions at once.
      for (const server of servers) {
        const onServer = runs.filter((r) => r.serverIds.includes(server)).sort((x, y) => x.assignedAt - y.assignedAt);
        for (let i = 1; i < onServer.length; i++) {
          expect(onServer[i]?.assignedAt).toBeGreaterThanOrEqual(onServer[i - 1]?.finishedAt ?? Infinity);
        }
      }
      // Both replicas handed work out.
      expect(new Set(runs.map((r) => Number(r.runner.split('-')[1]) % 2)).size).toBe(2);
      expect(await heldLeases()).toBe(0);
    } finally {
      for (const r of runners) r.close();
    }
  });
});
