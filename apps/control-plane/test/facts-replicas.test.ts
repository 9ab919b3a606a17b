// Facts requests across replicas on one PostgreSQL database (the requests are rows of
// facts_requests, claimed by one replica at a time): a registered server is gathered by one
// runner in all, whichever replicas its runners are connected to; a request whose replica
// died is asked again by another replica after its answer's deadline; an answer is recorded
// by whichever replica receives it.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeFacts } from '@carapace/test-support/facts';

import { testPostgresDatabase, type TestDatabase } from '@carapace/test-support/postgres';
import { Replica, REPLICA_DISCOVERY_TOKEN } from '@carapace/test-support/replica';
import { SimulatedRunner } from '@carapace/test-support/simulated-runner';
import { eventually } from '@carapace/test-support/eventually';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('facts requests across replicas on one PostgreSQL database', { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let a: Replica;
  let b: Replica;
  let token: string;
  let serverCount = 0;
  const runners: SimulatedRunner[] = [];
  const replicas: Replica[] = [];

  const facts = (address: string) => makeFacts(`host-${address.replaceAll('.', '-')}`, address);

  async function runner(name: string, via: Replica[], options: { factsMs?: number } = {}): Promise<SimulatedRunner> {
    const issued = await a.api('POST', '/v1/runner/', { name }, token);
    expect(issued.status).toBe(200);
    const r = new SimulatedRunner({ name, token: issued.json.token as string, addresses: via.map((v) => v.grpcAddress), facts, ...options });
    runners.push(r);
    await r.start();
    return r;
  }

  /** Registers a new server through `via`; returns its id. */
  async function register(via: Replica): Promise<string> {
    const n = ++serverCount;
    const id = `00000000-0000-4000-a000-${String(n).padStart(12, '0')}`;
    const res = await via.api('POST', '/v1/server/', { id, host: `10.7.0.${n + 1}`, username: 'ansible' }, REPLICA_DISCOVERY_TOKEN);
    expect(res.status).toBe(200);
    return id;
  }

  async function server(id: string): Promise<{ version: number; data: { state: string; name: string } }> {
    return (await a.api('GET', `/v1/server/${id}/`, undefined, token)).json;
  }

  const asked = (id: string) => runners.flatMap((r) => r.factsRequests.filter((f) => f.serverId === id).map((f) => ({ runner: r.name, ...f })));
  const stored = async () => (await a.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM facts_requests`))?.n ?? 0;

  beforeAll(async () => {
    database = await testPostgresDatabase();
    const env = { CARAPACE_RUNNER_HEARTBEAT_INTERVAL_MS: '1000' };
    [a, b] = await Promise.all([Replica.start(database.url, env), Replica.start(database.url, env)]);
    replicas.push(a, b);
    token = await a.login();
  });

  afterAll(async () => {
    for (const r of runners) r.close();
    for (const replica of replicas) await replica.stop();
    await database?.drop();
  });

  it('hand each registered server to one runner in all, with runners on both replicas, and record the answers', async () => {
    const onA = await runner('facts-on-a', [a]);
    const onB = await runner('facts-on-b', [b]);
    // Registered through both replicas at once: every replica hears of every one (the bus).
    const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => register(i % 2 ? b : a)));
    for (const id of ids) {
      await eventually(`the facts of ${id}`, async () => ((await server(id)).data.state === 'operational' ? true : undefined));
    }
    await sleep(500);
    for (const id of ids) expect(asked(id), id).toHaveLength(1);
    expect(await stored()).toBe(0);
    expect(await b.container.services.facts.count()).toBe(0);
    // One request per server in all, over the runners of both replicas.
    expect(onA.factsRequests.length + onB.factsRequests.length).toBe(ids.length);
    // Recorded once: registration (1), facts (2).
    for (const id of ids) expect((await server(id)).version).toBe(2);
    onA.close();
    onB.close();
  });

  it('ask again through another replica once the answer of a request handed out by a dead replica is overdue', async () => {
    const c = await Replica.start(database.url, { CARAPACE_RUNNER_HEARTBEAT_INTERVAL_MS: '1000' }, { factsAnswerTimeoutMs: 1500 });
    replicas.push(c);
    const silent = await runner('facts-silent', [c], { factsMs: Infinity });
    const id = await register(a);
    const first = await eventually('the request reaching the runner on C', () => silent.factsRequests.find((f) => f.serverId === id));
    const row = await a.db.get<{ runner: string; request_id: string }>(sql`SELECT runner, request_id FROM facts_requests WHERE server_id = ${id}`);
    expect(row).toEqual({ runner: 'facts-silent', request_id: first.requestId });
    await c.crash();
    silent.close();
    // A runner on B: B never heard of the request from C, only from the database.
    const onB = await runner('facts-after-c', [b]);
    await eventually('the facts gathered through B', async () => ((await server(id)).data.state === 'operational' ? true : undefined));
    const again = asked(id).filter((f) => f.runner === 'facts-after-c');
    expect(again).toHaveLength(1);
    // Not before the deadline C gave the answer (1.5 s after it was sent).
    expect((again[0]?.at ?? 0) - first.at).toBeGreaterThanOrEqual(1400);
    expect(again[0]?.requestId).not.toBe(first.requestId);
    // The silent runner's answer, should it come now, is for a request nobody waits for.
    const before = (await server(id)).version;
    await b.container.services.facts.complete('facts-silent', { requestId: first.requestId, serverId: id, ok: false, error: 'late' });
    expect((await server(id)).version).toBe(before);
    expect(await stored()).toBe(0);
    onB.close();
  });

  it('record an answer through the replica that receives it, not the one that asked', async () => {
    const d = await Replica.start(database.url, { CARAPACE_RUNNER_HEARTBEAT_INTERVAL_MS: '1000' });
    replicas.push(d);
    // Asked through D, answers 2.5 s later: through B by then.
    const moving = await runner('facts-moving', [d, b], { factsMs: 2500 });
    const id = await register(b);
    const request = await eventually('the request reaching the runner on D', () => moving.factsRequests.find((f) => f.serverId === id));
    await d.crash();
    await eventually('the facts recorded through B', async () => ((await server(id)).data.state === 'operational' ? true : undefined));
    expect(asked(id)).toEqual([expect.objectContaining({ runner: 'facts-moving', requestId: request.requestId })]);
    expect(moving.connects).toBeGreaterThanOrEqual(2);
    expect(await stored()).toBe(0);
    moving.close();
  });
});
