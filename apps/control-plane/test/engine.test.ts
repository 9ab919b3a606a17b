import { sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { SQLiteSyncDialect } from 'drizzle-orm/sqlite-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Harness } from '@carapace/test-support/harness';
import type { ExecutionData } from '@carapace/models';
import { LockRepository } from '../src/db/lock.repository.js';
import { executions } from '../src/db/schema/index.js';
import { VersionedRepository } from '../src/db/versioned.repository.js';
import { RunnerSessionRepository } from '../src/db/runner-session.repository.js';
import { addServer } from '@carapace/test-support/facts';

describe('execution engine: queue, locks and leases', () => {
  let h: Harness;
  let root: string;
  let clusterId: string;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'engine' } })).json.id;
  });
  afterAll(() => h.stop());

  const engine = () => h.container.services.engine;

  async function queue(serverIds: string[]): Promise<string> {
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'q', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: serverIds },
    });
    expect(config.status, config.body).toBe(200);
    const execution = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: 1 } } });
    h.clock.advance(1);
    return execution.json.id as string;
  }

  /** The statements `act` reads with (`db.all`). */
  async function readsOf(act: () => Promise<void>): Promise<SQL[]> {
    const statements: SQL[] = [];
    const all = h.db.all.bind(h.db);
    const spy = vi.spyOn(h.db, 'all').mockImplementation((query: SQL) => {
      statements.push(query);
      return all(query);
    });
    try {
      await act();
    } finally {
      spy.mockRestore();
    }
    return statements;
  }

  const state = async (id: string) => (await h.request('GET', `/v1/execution/${id}/`, { token: root })).json.data.state as string;

  it('never runs two executions sharing a server together; runs disjoint ones at once', async () => {
    const [s1, s2, s3] = [await addServer(h), await addServer(h), await addServer(h)];
    const a = await queue([s1.id, s2.id]);
    const b = await queue([s2.id, s3.id]);
    const c = await queue([s3.id]);
    const first = (await engine().claim('r1', 10)).map((x) => x.execution.id);
    // b waits for s2; c shares s3 with the older b, so it waits behind it.
    expect(first).toEqual([a]);
    expect(await state(b)).toBe('created');
    expect(await state(c)).toBe('created');
    expect(await engine().claim('r1', 10)).toEqual([]);
    await engine().finish(a, 'completed', null);
    expect((await engine().claim('r2', 10)).map((x) => x.execution.id)).toEqual([b]);
    await engine().finish(b, 'failed', 'boom');
    expect((await engine().claim('r2', 10)).map((x) => x.execution.id)).toEqual([c]);
    await engine().finish(c, 'completed', null);
  });

  it('hands out no more than the free slots, oldest first', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await queue([(await addServer(h)).id]));
    expect(await engine().claim('r3', 0)).toEqual([]);
    const got = (await engine().claim('r3', 2)).map((x) => x.execution.id);
    expect(got).toEqual(ids.slice(0, 2));
    const assignment = (await engine().claim('r3', 5))[0];
    expect(assignment?.execution.id).toBe(ids[2]);
    expect(assignment?.playbookId).toBe('hello_world');
    expect(Object.values(assignment?.serverIds ?? {})).toHaveLength(1);
    for (const id of ids) await engine().finish(id, 'completed', null);
  });

  it('records a run its runner stopped on its own (drain out of grace) as failed, and a canceled one as canceled', async () => {
    const [own, asked] = [await queue([(await addServer(h)).id]), await queue([(await addServer(h)).id])];
    expect((await engine().claim('r-drain', 2)).map((x) => x.execution.id)).toEqual([own, asked]);
    const stopped = await engine().finish(own, 'canceled', 'the runner is shutting down');
    expect(stopped?.data.state).toBe('failed');
    expect(stopped?.data.reason).toBe('runner r-drain stopped the run: the runner is shutting down');
    expect((await engine().requestCancel(asked, 'user'))?.data.state).toBe('canceling');
    const canceled = await engine().finish(asked, 'canceled', 'canceled by a user');
    expect(canceled?.data.state).toBe('canceled');
    expect(canceled?.data.reason).toBe('canceled by a user');
  });

  it('fails the executions of a runner whose lease expired, frees their servers, and runs the next', async () => {
    const s = await addServer(h);
    const lost = await queue([s.id]);
    const next = await queue([s.id]);
    expect((await engine().claim('vanishing', 5)).map((x) => x.execution.id)).toEqual([lost]);
    h.clock.advance(20);
    await engine().heartbeat('vanishing');
    h.clock.advance(20);
    expect(await engine().sweep()).toEqual([]);
    expect(await state(lost)).toBe('started');
    const del = await h.request('DELETE', `/v1/server/${s.id}/`, { token: root });
    expect(del.json.error).toBe('CannotDeleteServer');
    h.clock.advance(31);
    expect(await engine().sweep()).toEqual([lost]);
    const failed = (await h.request('GET', `/v1/execution/${lost}/`, { token: root })).json.data;
    expect(failed.state).toBe('failed');
    expect(failed.reason).toContain('vanishing');
    expect((await engine().claim('healthy', 5)).map((x) => x.execution.id)).toEqual([next]);
    await engine().finish(next, 'completed', null);
    expect(await engine().finish(lost, 'completed', null)).toBeNull();
  });

  it('names the running executions of each runner, whatever its name, and none that ended or wait', async () => {
    const [a, b, c] = [await addServer(h), await addServer(h), await addServer(h)];
    const odd = "runner 'o\"dd";
    const running = await queue([a.id]);
    const canceling = await queue([b.id]);
    const ended = await queue([c.id]);
    expect((await engine().claim(odd, 2)).map((x) => x.execution.id).sort()).toEqual([running, canceling].sort());
    expect((await engine().claim('other', 1)).map((x) => x.execution.id)).toEqual([ended]);
    await engine().finish(ended, 'completed', null);
    const waiting = await queue([a.id]);
    expect((await h.request('DELETE', `/v1/execution/${canceling}/`, { token: root })).json.data.state).toBe('canceling');
    expect((await engine().runningOn(odd)).map((e) => e.id).sort()).toEqual([running, canceling].sort());
    expect(await engine().runningOn('other')).toEqual([]);
    const byRunner = await engine().runningByRunner();
    expect([...(byRunner.get(odd) ?? [])].sort()).toEqual([running, canceling].sort());
    expect(byRunner.has('other')).toBe(false);
    expect([...byRunner.values()].flat()).not.toContain(waiting);
    for (const id of [running, canceling]) await engine().finish(id, 'completed', null);
    await engine().finish(waiting, 'canceled', null);
  });

  it('keeps a server whose lease expired until the sweep has failed its run, so that run is never lost', async () => {
    const s = await addServer(h);
    const lost = await queue([s.id]);
    const next = await queue([s.id]);
    expect((await engine().claim('gone', 1)).map((x) => x.execution.id)).toEqual([lost]);
    h.clock.advance(31);
    // The lease is over, but the sweep has not run: the server is not taken from the run.
    expect(await engine().claim('taker', 5)).toEqual([]);
    expect(await state(next)).toBe('created');
    expect(await engine().sweep()).toEqual([lost]);
    expect(await state(lost)).toBe('failed');
    expect((await engine().claim('taker', 5)).map((x) => x.execution.id)).toEqual([next]);
    await engine().finish(next, 'completed', null);
  });

  it('starts a page of executions for many runners at once: each on its own runner, in turn, one version each', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await queue([(await addServer(h)).id]));
    const got = await engine().claimFor([
      ['batch-a', 2],
      ['batch-b', 1],
      ['batch-c', 2],
    ]);
    expect(got.map((x) => x.assignment.execution.id)).toEqual(ids.slice(0, 5));
    expect(got.map((x) => x.runner)).toEqual(['batch-a', 'batch-b', 'batch-c', 'batch-a', 'batch-c']);
    for (const { runner, assignment } of got) {
      expect(assignment.execution.version).toBe(2);
      expect(assignment.execution.data.runner_id).toBe(runner);
      expect(Object.values(assignment.serverIds)).toEqual(assignment.execution.data.server_ids);
      const versions = (await h.request('GET', `/v1/execution/${assignment.execution.id}/version/`, { token: root })).json;
      expect(versions.items.map((v: { version: number; data: { state: string } }) => [v.version, v.data.state])).toEqual([
        [2, 'started'],
        [1, 'created'],
      ]);
    }
    expect(await state(ids[5] as string)).toBe('created');
    for (const { assignment } of got) await engine().finish(assignment.execution.id, 'completed', null);
    expect((await engine().claim('batch-a', 1)).map((x) => x.execution.id)).toEqual([ids[5]]);
    await engine().finish(ids[5] as string, 'completed', null);
  });

  it('stores the ends of runs reported together in one go, each once; one that cannot be stored fails alone', async () => {
    const servers = [];
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      servers.push((await addServer(h)).id);
      ids.push(await queue([servers[i] as string]));
    }
    expect((await engine().claim('ender', 6)).map((x) => x.execution.id)).toEqual(ids);
    // The effects of this one cannot be applied: its stored playbook is unknown.
    const bad = ids[2] as string;
    const row = await h.db.get<{ data: string }>(sql`SELECT data FROM executions WHERE id = ${bad} AND is_latest = 1`);
    const data = JSON.parse(row?.data ?? '{}') as { playbook_configuration: { playbook_name: string } };
    data.playbook_configuration.playbook_name = 'no_such_playbook';
    await h.db.run(sql`UPDATE executions SET data = ${JSON.stringify(data)} WHERE id = ${bad} AND is_latest = 1`);
    const results = await Promise.allSettled([...ids.map((id) => engine().finish(id, 'completed', null)), engine().finish(ids[0] as string, 'failed', 'again')]);
    for (const [i, result] of results.entries()) {
      if (i === 2) expect(result.status).toBe('rejected');
      else if (i === ids.length) expect(result).toEqual({ status: 'fulfilled', value: null });
      else expect(result.status === 'fulfilled' && result.value?.data.state).toBe('completed');
    }
    expect(await state(bad)).toBe('started');
    expect(await new LockRepository(h.db).lockedAmong(servers)).toEqual([servers[2]]);
    expect((await engine().finish(bad, 'failed', 'its playbook is gone'))?.data.state).toBe('failed');
    expect(await new LockRepository(h.db).lockedAmong(servers)).toEqual([]);
  });

  it('locks each execution all its servers or none, leaving nothing of a refused one', async () => {
    const locks = new LockRepository(h.db);
    const [s1, s2, s3, s4] = [await addServer(h), await addServer(h), await addServer(h), await addServer(h)];
    const expires = h.clock.nowMs() + 30_000;
    // s2 is held (even once expired, until the sweep frees it).
    expect(await locks.lockEach([{ executionId: 'holder', serverIds: [s2.id], owner: 'r' }], h.clock.nowMs() - 1)).toEqual(new Set(['holder']));
    const locked = await h.db.transaction(() =>
      locks.lockEach(
        [
          { executionId: 'x1', serverIds: [s1.id, s2.id], owner: 'r' },
          { executionId: 'x2', serverIds: [s3.id, s4.id], owner: 'r' },
          { executionId: 'x3', serverIds: [], owner: 'r' },
        ],
        expires,
      ),
    );
    expect(locked).toEqual(new Set(['x2', 'x3']));
    expect((await locks.lockOf(s1.id, h.clock.nowMs()))?.executionId).toBeUndefined();
    expect((await locks.lockOf(s3.id, h.clock.nowMs()))?.executionId).toBe('x2');
    expect((await locks.lockOf(s4.id, h.clock.nowMs()))?.expiresAt).toBe(expires);
    expect((await locks.lockedAmong([s1.id, s2.id, s3.id, s4.id])).sort()).toEqual([s2.id, s3.id, s4.id].sort());
    await expect(locks.lockEach([{ executionId: 'x4', serverIds: [s1.id, s1.id], owner: 'r' }], expires)).rejects.toThrow(/twice/);
    await locks.release(['holder', 'x2']);
  });

  it('locks, in the statement that reads them, only the servers of executions still queued', async () => {
    const locks = new LockRepository(h.db);
    const repo = new VersionedRepository<ExecutionData>(h.db, executions, { data: ['state', 'server_ids'], defaultSort: [['time_created', -1]] });
    const [s1, s2, s3, s4, s5] = [await addServer(h), await addServer(h), await addServer(h), await addServer(h), await addServer(h)];
    const started = await queue([s1.id]);
    expect((await engine().claim('r-and', 1)).map((x) => x.execution.id)).toEqual([started]);
    await locks.release([started]);
    const queued = await queue([s2.id, s3.id]);
    const partly = await queue([s4.id, s5.id]);
    await locks.lockEach([{ executionId: 'holder', serverIds: [s5.id], owner: 'r' }], h.clock.nowMs() + 30_000);
    const requests = [
      { executionId: started, serverIds: [s1.id], owner: 'r-and' },
      { executionId: queued, serverIds: [s2.id, s3.id], owner: 'r-and' },
      { executionId: partly, serverIds: [s4.id, s5.id], owner: 'r-and' },
      { executionId: 'unknown', serverIds: [(await addServer(h)).id], owner: 'r-and' },
    ];
    const locked = await h.db.transaction(async () => {
      const { models, written } = await repo.tryGetManyForUpdateAnd<{ executionId: string }>(
        requests.map((r) => r.executionId),
        repo.fieldEquals('state', 'created'),
        (queued) => locks.lockStatement(requests, h.clock.nowMs() + 30_000, queued),
      );
      expect([...models.keys()].sort()).toEqual([started, queued, partly].sort());
      expect(models.get(started)?.data.state).toBe('started');
      // The started one locks nothing, even with its server free; the unknown one neither.
      expect(written.map((w) => w.executionId).sort()).toEqual([queued, queued, partly].sort());
      return locks.settle(requests.filter((r) => models.get(r.executionId)?.data.state === 'created'), written);
    });
    expect(locked).toEqual(new Set([queued]));
    expect(await locks.lockedAmong([s1.id, s2.id, s3.id, s4.id, s5.id])).toEqual(expect.arrayContaining([s2.id, s3.id, s5.id]));
    expect(await locks.lockedAmong([s1.id, s4.id])).toEqual([]);
    expect(await repo.tryGetManyForUpdateAnd([queued], repo.fieldEquals('state', 'created'), () => null)).toMatchObject({ written: [] });
    await locks.release(['holder', queued]);
    await engine().finish(started, 'completed', null);
    expect((await engine().claim('r-and', 5)).map((x) => x.execution.id).sort()).toEqual([queued, partly].sort());
    await engine().finish(queued, 'completed', null);
    await engine().finish(partly, 'completed', null);
  });

  it('reads the model of a queued execution once while it waits, and again at a new version', async () => {
    const s = (await addServer(h)).id;
    const [a, b, c] = [await queue([s]), await queue([s]), await queue([s])];
    expect((await engine().claim('r-seen', 1)).map((x) => x.execution.id)).toEqual([a]);
    // The test reads the engine's own SQL text and query plan (EXPLAIN differs): it names the engine, as no src/ code does.
    const dialect = h.db.dialect === 'postgres' ? new PgDialect() : new SQLiteSyncDialect();
    /** The ids among `ids` that the statements of a pass name. */
    const named = async (ids: string[]): Promise<string[]> => {
      const statements = await readsOf(async () => expect(await engine().claim('r-seen', 1)).toEqual([]));
      const texts = statements.map((q) => JSON.stringify(dialect.sqlToQuery(q).params));
      return ids.filter((id) => texts.some((t) => t.includes(id)));
    };
    // b and c wait for a's server: the pass lists them, and reads neither again.
    expect(await named([b, c])).toEqual([]);
    // A new version of c (its data the same; stored last, it stays last): read again, b not.
    const row = await h.db.get<{ version: number; data: string }>(sql`SELECT version, data FROM executions WHERE id = ${c} AND is_latest = 1`);
    await h.db.run(sql`UPDATE executions SET is_latest = 0 WHERE id = ${c} AND is_latest = 1`);
    await h.db.run(sql`INSERT INTO executions (id, version, time_updated, time_deleted, initiator_id, is_latest, data)
      VALUES (${c}, ${(row?.version ?? 0) + 1}, 0, 0, NULL, 1, ${row?.data ?? '{}'})`);
    expect(await named([b, c])).toEqual([c]);
    await engine().finish(a, 'completed', null);
    expect((await engine().claim('r-seen', 1)).map((x) => x.execution.id)).toEqual([b]);
    await engine().finish(b, 'completed', null);
    expect((await engine().claim('r-seen', 1)).map((x) => x.execution.id)).toEqual([c]);
    await engine().finish(c, 'completed', null);
  });

  it('reads a page of the queue through its own index, in its order, however many executions have ended or wait, before any statistics', async () => {
    // Many ended executions, and many queued behind one server, written straight to the
    // table: no ANALYZE has seen them.
    const ended = JSON.stringify({ state: 'completed', server_ids: [], time_created: 1, playbook_configuration: { id: 'x', version: 1 } });
    const rows = (prefix: string, n: number, data: (i: number) => string) =>
      Array.from({ length: n }, (_, i) => [`${prefix}-${i}`, 1, 0, 0, null, 1, data(i)] as (string | number | null)[]);
    const insert = (values: (string | number | null)[][]) =>
      h.db.run(sql`INSERT INTO executions (id, version, time_updated, time_deleted, initiator_id, is_latest, data)
        ${h.db.engine.rowSource(values, ['text', 'int8', 'int8', 'int8', 'text', 'int2', 'text'])}`);
    await insert(rows('ended', 3000, () => ended));
    const server = (await addServer(h)).id;
    const first = await queue([server]);
    const firstData = JSON.parse((await h.db.get<{ data: string }>(sql`SELECT data FROM executions WHERE id = ${first} AND is_latest = 1`))?.data ?? '{}');
    await insert(rows('waiting', 600, (i) => JSON.stringify({ ...firstData, id: `waiting-${i}`, time_created: firstData.time_created + 1 + i })));
    const statements = await readsOf(async () => expect((await engine().claim('r-index', 1)).map((x) => x.execution.id)).toEqual([first]));
    // The test reads the engine's own SQL text and query plan (EXPLAIN differs): it names the engine, as no src/ code does.
    const dialect = h.db.dialect === 'postgres' ? new PgDialect() : new SQLiteSyncDialect();
    const read = statements.find((q) => /ORDER BY/.test(dialect.sqlToQuery(q).sql) && /FROM "executions"/.test(dialect.sqlToQuery(q).sql));
    expect(read, 'the queue read').toBeDefined();
    const plan = h.db.dialect === 'postgres'
      ? (await h.db.all<{ 'QUERY PLAN': string }>(sql`EXPLAIN (VERBOSE) ${read}`)).map((r) => r['QUERY PLAN'])
      : (await h.db.all<{ detail: string }>(sql`EXPLAIN QUERY PLAN ${read}`)).map((r) => r.detail);
    // Only queued executions are read, through the queue's index (PostgreSQL's choice,
    // SQLite's by INDEXED BY), not the ended ones; in the index's order, not all of them
    // sorted for a page (PostgreSQL's Sort, SQLite's temporary B-tree for the whole order);
    // and nothing is computed from a row's JSON, to output, order or filter (PostgreSQL parses
    // it for any expression of `data` a node outputs, an order's included, even one the index
    // gives).
    expect(plan.join('\n')).toMatch(/executions_queued/);
    expect(plan.filter((l) => /(^|->)\s*Sort\s+\(/.test(l) || l === 'USE TEMP B-TREE FOR ORDER BY'), plan.join('\n')).toEqual([]);
    if (h.db.dialect === 'postgres') expect(plan.filter((l) => /\bdata\b/.test(l)), plan.join('\n')).toEqual([]);
    // A pass walks the queue page after page (18 rows a page for one free slot) to a runnable
    // execution stored behind all 600 that wait.
    const last = await queue([(await addServer(h)).id]);
    expect((await engine().claim('r-index', 1)).map((x) => x.execution.id)).toEqual([last]);
    await h.db.run(sql`DELETE FROM executions WHERE id LIKE 'ended-%' OR id LIKE 'waiting-%'`);
    await engine().finish(first, 'completed', null);
    await engine().finish(last, 'completed', null);
  });

  it('gives every lease a full timeout again at start, so a control-plane outage fails no run', async () => {
    const s = await addServer(h);
    const running = await queue([s.id]);
    expect((await engine().claim('patient', 5)).map((x) => x.execution.id)).toEqual([running]);
    // The control plane was down for longer than the lease: nobody could renew it.
    h.clock.advance(45);
    expect(await engine().extendLeasesAtStart('this-replica', 5000)).toBe(1);
    expect(await engine().sweep()).toEqual([]);
    expect(await state(running)).toBe('started');
    // A runner that does not come back still loses its leases.
    h.clock.advance(31);
    expect(await engine().sweep()).toEqual([running]);
    expect(await state(running)).toBe('failed');
  });

  it('at start, leaves alone the leases of runners another replica hears from', async () => {
    const [s1, s2] = [await addServer(h), await addServer(h)];
    const orphan = await queue([s1.id]);
    const elsewhere = await queue([s2.id]);
    expect((await engine().claim('orphaned', 1)).map((x) => x.execution.id)).toEqual([orphan]);
    expect((await engine().claim('connected-elsewhere', 1)).map((x) => x.execution.id)).toEqual([elsewhere]);
    h.clock.advance(20);
    // Another replica holds the stream of one runner, and heard its last heartbeat just now;
    // a session this replica's predecessor held, silent for longer, counts for nothing.
    const sessions = new RunnerSessionRepository(h.db);
    const session = { sessionId: 's', version: 'test', labels: {}, slots: 1, connectedAtMs: 0, peer: 'p', sshPublicKey: '' };
    await sessions.put({ ...session, name: 'connected-elsewhere', replica: 'other-replica', lastHeartbeatMs: h.clock.nowMs() });
    await sessions.put({ ...session, name: 'orphaned', replica: 'dead-replica', lastHeartbeatMs: h.clock.nowMs() - 11_000 });
    expect(await engine().extendLeasesAtStart('this-replica', 5000)).toBe(1);
    // 35 s after the claims: the lease the other replica renews (it does not here) ran out;
    // the orphan's has another 15 s.
    h.clock.advance(15);
    expect(await engine().sweep()).toEqual([elsewhere]);
    expect(await state(orphan)).toBe('started');
    h.clock.advance(16);
    expect(await engine().sweep()).toEqual([orphan]);
    await sessions.remove('connected-elsewhere', 's');
    await sessions.remove('orphaned', 's');
  });

  it('keeps the lock invariants over many random executions and servers', async () => {
    const servers = [];
    for (let i = 0; i < 8; i++) servers.push((await addServer(h)).id);
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const queued: { id: string; servers: string[] }[] = [];
    for (let i = 0; i < 40; i++) {
      const pick = servers.filter(() => random() < 0.3);
      const chosen = pick.length ? pick : [servers[Math.floor(random() * servers.length)] ?? ''];
      queued.push({ id: await queue(chosen), servers: chosen });
    }
    const running = new Map<string, string[]>();
    const finished = new Set<string>();
    const order: string[] = [];
    for (let round = 0; round < 400 && finished.size < queued.length; round++) {
      for (const a of await engine().claim(`r${round % 3}`, 1 + Math.floor(random() * 3))) {
        const servers = queued.find((q) => q.id === a.execution.id)?.servers ?? [];
        for (const other of running.values()) expect(other.some((s) => servers.includes(s))).toBe(false);
        running.set(a.execution.id, servers);
        order.push(a.execution.id);
      }
      for (const id of [...running.keys()]) {
        if (random() < 0.5) {
          await engine().finish(id, random() < 0.8 ? 'completed' : 'failed', null);
          running.delete(id);
          finished.add(id);
        }
      }
    }
    expect(finished.size).toBe(queued.length);
    // Two executions sharing a server start in the order they were queued.
    for (const [i, a] of queued.entries()) {
      for (const b of queued.slice(i + 1)) {
        if (a.servers.some((s) => b.servers.includes(s))) expect(order.indexOf(a.id)).toBeLessThan(order.indexOf(b.id));
      }
    }
  });
});

describe('steps and logs', () => {
  let h: Harness;
  let root: string;
  let executionId: string;
  let serverId: string;
  let serverIp: string;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    const clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'logs' } })).json.id;
    const s = await addServer(h);
    serverId = s.id;
    serverIp = s.data.ip;
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'l', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [s.id] },
    });
    executionId = (await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: 1 } } })).json.id;
    await h.container.services.engine.claim('r', 1);
  });
  afterAll(() => h.stop());

  const TEXT = Array.from({ length: 50 }, (_, i) => `TASK [hello_world : step ${i}] ${'*'.repeat(i % 7)}\nok: [10.0.0.1] ü\n`).join('');

  it('rebuilds the exact text from chunks out of order, duplicated, and missing then resent', async () => {
    const engine = h.container.services.engine;
    const chunks: { offset: number; text: string }[] = [];
    for (let offset = 0; offset < TEXT.length; offset += 97) chunks.push({ offset, text: TEXT.slice(offset, offset + 97) });
    const shuffled = [...chunks].reverse();
    const missing = shuffled.splice(3, 1)[0];
    // Reported together, they are stored together (one statement), each counted once.
    expect(await Promise.all(shuffled.map((c) => engine.appendLog(executionId, c.offset, c.text)))).toEqual(shuffled.map(() => true));
    for (const c of shuffled.slice(0, 5)) expect(await engine.appendLog(executionId, c.offset, c.text)).toBe(false);
    const partial = await h.request('GET', `/v1/execution/${executionId}/log/`, { token: root, headers: { accept: 'application/json' } });
    expect(TEXT.startsWith(partial.json.data)).toBe(true);
    expect(partial.json.data.length).toBeLessThan(TEXT.length);
    if (missing) {
      // The first report goes alone; the two after it, the same chunk twice, go together: stored once, counted once.
      const first = shuffled[0] as { offset: number; text: string };
      const sent = [first, missing, missing].map((c) => engine.appendLog(executionId, c.offset, c.text));
      expect(await Promise.all(sent)).toEqual([false, true, false]);
    }
    const whole = await h.request('GET', `/v1/execution/${executionId}/log/`, { token: root, headers: { 'content-type': 'application/json' } });
    expect(whole.headers['content-type']).toBe('application/json');
    expect(whole.json).toEqual({ data: TEXT });
    const plain = await h.request('GET', `/v1/execution/${executionId}/log/`, { token: root });
    expect(plain.headers['content-type']).toMatch(/^text\/plain/);
    expect(plain.body).toBe(TEXT);
    const download = await h.request('GET', `/v1/execution/${executionId}/log/?download=yes`, { token: root });
    expect(download.headers['content-disposition']).toBe(`attachment; filename=${executionId}.log`);
    expect(download.body).toBe(TEXT);
  });

  it('stores each step once and lists them by finish time', async () => {
    const engine = h.container.services.engine;
    const step = (n: number) => ({
      role: 'hello_world',
      name: `task ${n}`,
      result: n === 2 ? 'error' : 'ok',
      error: n === 2 ? { msg: 'failed', rc: 1 } : {},
      host: serverId,
      timeStarted: 100 + n,
      timeFinished: 110 + (5 - n),
    });
    for (const n of [0, 1, 2, 3, 4]) expect(await engine.recordStep(executionId, n, step(n))).toBe(true);
    expect(await engine.recordStep(executionId, 2, step(2))).toBe(false);
    const steps = await h.request('GET', `/v1/execution/${executionId}/steps/`, { token: root });
    expect(steps.status, steps.body).toBe(200);
    expect(steps.json.total).toBe(5);
    expect(steps.json.items.map((s: { data: { name: string } }) => s.data.name)).toEqual(['task 4', 'task 3', 'task 2', 'task 1', 'task 0']);
    expect(steps.json.items[2]).toMatchObject({ model: 'execution_step', version: 1, data: { execution_id: executionId, result: 'error', error: { msg: 'failed', rc: 1 }, server_id: serverId } });
    const errors = await h.request('GET', `/v1/execution/${executionId}/steps/?filter=${encodeURIComponent('{"result":"error"}')}`, { token: root });
    expect(errors.json.total).toBe(1);
    expect((await h.request('GET', `/v1/execution/${executionId}/steps/?filter=${encodeURIComponent('{"nope":1}')}`, { token: root })).status).toBe(400);
  });

  it('streams all=yes step lists in batches: the same steps and envelope as the paged list', async () => {
    const engine = h.container.services.engine;
    const big = 'x'.repeat(8 * 1024);
    for (let n = 10; n < 610; n++) {
      await engine.recordStep(executionId, n, { role: 'r', name: `bulk ${n}`, result: 'error', error: { msg: big }, host: serverId, timeStarted: 1000 + n, timeFinished: 2000 + n });
    }
    const filter = encodeURIComponent('{"name":{"regexp":"^bulk"}}');
    const all = await h.request('GET', `/v1/execution/${executionId}/steps/?all=yes&filter=${filter}`, { token: root });
    expect(all.status, all.body.slice(0, 200)).toBe(200);
    expect(all.headers['content-type']).toBe('application/json');
    // Streamed: written batch by batch, so no length is known up front.
    expect(all.headers['content-length']).toBeUndefined();
    expect(all.json).toMatchObject({ page: 1, per_page: 600, total: 600 });
    expect(all.json.items).toHaveLength(600);
    const paged = await h.request('GET', `/v1/execution/${executionId}/steps/?per_page=1000&filter=${filter}`, { token: root });
    expect(all.json.items).toEqual(paged.json.items);
    expect(all.json.items[599]).toMatchObject({ model: 'execution_step', data: { name: 'bulk 609', error: { msg: big } } });
    const none = await h.request('GET', `/v1/execution/${executionId}/steps/?all=1&filter=${encodeURIComponent('{"name":"nothing"}')}`, { token: root });
    expect(none.json).toEqual({ items: [], page: 1, per_page: 0, total: 0 });
  });

  it('follows the log live until the execution ends', async () => {
    const address = await h.app.listen({ host: '127.0.0.1', port: 0 });
    const engine = h.container.services.engine;
    const res = await fetch(`${address}/v1/execution/${executionId}/log/?follow=yes`, { headers: { authorization: root } });
    expect(res.status).toBe(200);
    const reader = res.body?.getReader();
    if (!reader) throw new Error('no body');
    const decoder = new TextDecoder();
    let received = '';
    const readUntil = async (needle: string) => {
      while (!received.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${needle}`);
        received += decoder.decode(value, { stream: true });
      }
    };
    await readUntil('step 49');
    expect(received).toBe(TEXT);
    await engine.appendLog(executionId, TEXT.length, 'PLAY RECAP *****\n');
    await readUntil('PLAY RECAP');
    await engine.finish(executionId, 'completed', null);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      received += decoder.decode(value, { stream: true });
    }
    expect(received).toBe(`${TEXT}PLAY RECAP *****\n`);
  });

  it('maps a step host, the server IP or id, to the server, also once the run is over; the run belongs to its runner', async () => {
    const engine = h.container.services.engine;
    const step = { role: 'r', result: 'ok', error: {}, timeStarted: 1, timeFinished: 1 };
    await engine.recordStep(executionId, 700, { ...step, name: 'by ip', host: serverIp });
    await engine.recordStep(executionId, 701, { ...step, name: 'by id', host: serverId });
    await engine.recordStep(executionId, 702, { ...step, name: 'elsewhere', host: '192.0.2.1' });
    const filter = encodeURIComponent('{"name":{"in":["by ip","by id","elsewhere"]}}');
    const steps = await h.request('GET', `/v1/execution/${executionId}/steps/?filter=${filter}`, { token: root });
    const byName = Object.fromEntries(steps.json.items.map((x: { data: { name: string; server_id: string | null } }) => [x.data.name, x.data.server_id]));
    expect(byName).toEqual({ 'by ip': serverId, 'by id': serverId, elsewhere: null });
    expect(await engine.holds('r', executionId)).toBe(true);
    expect(await engine.holds('someone-else', executionId)).toBe(false);
  });

  it('answers 404 for the steps and log of an unknown execution', async () => {
    for (const what of ['steps', 'log']) {
      expect((await h.request('GET', `/v1/execution/3f1e1b4c-1111-4222-8333-444455556666/${what}/`, { token: root })).status).toBe(404);
    }
  });
});
