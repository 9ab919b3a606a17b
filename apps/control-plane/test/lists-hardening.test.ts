import { randomBytes, randomUUID } from 'node:crypto';
import { get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MAX_DATA_DEPTH, type PlaybookConfigurationData, type ServerData, type ServerFacts } from '@carapace/models';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusters, playbookConfigurations, servers } from '../src/db/schema/index.js';
import { VersionedRepository } from '../src/db/versioned.repository.js';
import { ApiError } from '../src/errors.js';
import { addServer, makeFacts } from '@carapace/test-support/facts';
import { testDialect } from '@carapace/test-support/database';
import { Harness, type Answer } from '@carapace/test-support/harness';

// A garbage collection on demand, to measure the heap the answers hold, not what they left.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const BUDGET_MS = 100;
/** The issue's pattern: exponential for a backtracking engine on any UUID. */
const CATASTROPHIC = '^(([0-9a-f]|-)+)+Z$';
/**
 * Costly for any engine on large text (RE2 included), cheap to write. A counted repetition
 * of at most 255: PostgreSQL's engine refuses more (see the test of that refusal below).
 */
const COSTLY = '[aeiou0-9][\\s\\S]{250}[#@^]';
const BUILT_IN_NAMES = ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf'];

const q = (value: unknown) => encodeURIComponent(typeof value === 'string' ? value : JSON.stringify(value));

function expectError(res: Answer, status: number, error?: string): void {
  expect(res.status, res.body).toBe(status);
  expect(res.headers['content-type']).toBe('application/json');
  expect(res.json).toEqual({ code: status, error: error ?? expect.any(String), description: expect.any(String), message: res.json.description });
}

/** `levels` nested objects: `{"a": {"a": ... {}}}`. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

/** Facts of about 95 KB, random enough that no regexp engine can reuse its work between servers. */
function bulkyFacts(n: number): ServerFacts {
  const facts = makeFacts(`bulk${n}`, `10.9.${n >> 8}.${n & 255}`, { dataDisks: 400 });
  return { ...facts, disks: facts.disks.map((d) => ({ ...d, serial: randomBytes(8).toString('hex') })) };
}

describe('list hardening', () => {
  let h: Harness;
  let root: string;
  let base: string;
  let clusterId: string;

  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_LIST_QUERY_BUDGET_MS: String(BUDGET_MS) });
    root = await h.rootToken();
    clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'hardening' } })).json.id;
    await h.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => h.stop());

  /** A GET over real HTTP: status, body length, and how long it took. */
  function timedGet(path: string, token?: string, keepBody = false): Promise<{ status: number; bytes: number; ms: number; body: string }> {
    const start = performance.now();
    return new Promise((resolve, reject) => {
      const req = httpGet(`${base}${path}`, { headers: token ? { authorization: token } : {} }, (res) => {
        let bytes = 0;
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (keepBody) parts.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - start, body: Buffer.concat(parts).toString() }));
        res.on('error', reject);
      });
      req.on('error', reject);
    });
  }

  /** Asks `GET /v1/info/` every 20 ms while `work` runs; returns the longest answer time. */
  async function infoLatencyDuring(work: Promise<unknown>): Promise<number> {
    let done = false;
    const finished = work.finally(() => {
      done = true;
    });
    let longest = 0;
    while (!done) {
      const info = await timedGet('/v1/info/');
      expect(info.status).toBe(200);
      longest = Math.max(longest, info.ms);
      await new Promise((r) => setTimeout(r, 20));
    }
    await finished;
    return longest;
  }

  it('runs regexp filters with RE2: the pattern of the issue answers at once, even for a view_cluster holder', async () => {
    for (let i = 0; i < 50; i++) expect((await h.request('POST', '/v1/cluster/', { token: root, body: { name: `redos-${i}` } })).status).toBe(200);
    const viewer = await h.userWith('cluster-viewer', ['view_cluster']);
    const start = performance.now();
    const res = await h.request('GET', `/v1/cluster/?filter=${q({ id: { regexp: CATASTROPHIC } })}`, { token: viewer.token });
    expect(performance.now() - start).toBeLessThan(1000);
    expect(res.status, res.body).toBe(200);
    expect(res.json).toMatchObject({ items: [], total: 0 });
    const uuids = await h.request('GET', `/v1/cluster/?per_page=1&filter=${q({ id: { regexp: '^[0-9a-f]{8}-[0-9a-f]{4}-' } })}`, { token: viewer.token });
    expect(uuids.json.total).toBe(51);
    const named = await h.request('GET', `/v1/cluster/?all=1&filter=${q({ name: { regexp: '^redos-(1|2)\\d$' } })}`, { token: viewer.token });
    expect(named.json.items.map((c: { data: { name: string } }) => c.data.name).sort()).toEqual([...Array(10).keys()].map((i) => `redos-1${i}`).concat([...Array(10).keys()].map((i) => `redos-2${i}`)));
  });

  it('refuses with a 400 the patterns RE2 cannot run in linear time, too long or too complex ones', async () => {
    for (const pattern of ['(a)\\1', '(?=a)b', '(?!a)b', '(?<=a)b', '(?<!a)b', '[', 'a'.repeat(257), '[\\s\\S]{999}[\\s\\S]{999}']) {
      const res = await h.request('GET', `/v1/cluster/?filter=${q({ name: { regexp: pattern } })}`, { token: root });
      expectError(res, 400, 'BadRequest');
      expect(res.json.description).toMatch(/regexp/);
    }
    expectError(await h.request('GET', `/v1/cluster/?filter=${q({ name: { regexp: '(a)\\1' } })}`, { token: root }), 400, 'BadRequest');
    expect((await h.request('GET', `/v1/cluster/?filter=${q({ name: { regexp: '(a)\\1' } })}`, { token: root })).json.description).toMatch(/backreferences/);
  });

  it('answers a pattern RE2 takes but PostgreSQL refuses (a repetition over 255) with a 400 that says so, never a 500', async () => {
    const res = await h.request('GET', `/v1/cluster/?filter=${q({ name: { regexp: '^x[\\s\\S]{300}' } })}`, { token: root });
    if (testDialect() === 'sqlite') {
      expect(res.status, JSON.stringify(res.json)).toBe(200);
      return;
    }
    expectError(res, 400, 'BadRequest');
    expect(res.json.description).toMatch(/regexp.*PostgreSQL refuses the pattern/);
  });

  it('stops a costly list query at its time budget, and slow filters never delay GET /v1/info/', async () => {
    const repo = new VersionedRepository<ServerData>(h.db, servers, { data: ['name', 'facts'], defaultSort: [['name', 1]] });
    await repo.transaction(async () => {
      for (let n = 0; n < 150; n++) {
        const facts = bulkyFacts(n);
        await repo.create(
          { name: `bulk${n}`, fqdn: facts.fqdn, ip: facts.default_ipv4 ?? '', username: 'ansible', state: 'operational', cluster_id: null, facts, facts_error: null, ssh_host_key: null },
          null,
          1_700_000_000,
          randomUUID(),
        );
      }
    });
    const costly = `/v1/server/?filter=${q({ facts: { regexp: COSTLY } })}`;
    const catastrophic = `/v1/cluster/?all=yes&filter=${q({ id: { regexp: CATASTROPHIC } })}`;
    const sorted = `/v1/server/?sort_by=${q({ 'facts.disks': -1 })}&filter=${q({ 'facts.os.id': { regexp: 'deb' } })}`;
    const requests = [costly, catastrophic, costly, sorted, costly].map((path) => timedGet(path, root, true));
    const longest = await infoLatencyDuring(Promise.all(requests));
    // A bound, not a speed: five queries of at most the budget each, on a machine that may be
    // busy with other test files; unbounded, the catastrophic pattern alone takes minutes.
    expect(longest).toBeLessThan(3000);
    const [first, second] = await Promise.all(requests);
    expect(first?.status).toBe(400);
    expect(JSON.parse(first?.body ?? '')).toMatchObject({ code: 400, error: 'BadRequest', description: expect.stringMatching(new RegExp(`budget of ${BUDGET_MS} ms`)) });
    expect(first?.ms).toBeLessThan(3000);
    expect(second?.status).toBe(200);
    expect(JSON.parse(second?.body ?? '')).toMatchObject({ items: [], page: 1, per_page: 0, total: 0 });
  }, 60_000);

  it('streams all=yes answers: the exact list envelope, with a bounded heap, and other requests answered meanwhile', async () => {
    const server = await addServer(h);
    const created = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'big', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [server.id] },
    });
    expect(created.status, created.body).toBe(200);
    const id: string = created.json.id;
    const repo = new VersionedRepository<PlaybookConfigurationData>(h.db, playbookConfigurations, { data: ['name'], defaultSort: [['name', 1]] });
    const VERSIONS = 30;
    const BLOB = 500_000;
    await repo.transaction(async () => {
      for (let v = 2; v <= VERSIONS; v++) {
        const latest = await repo.get(id);
        if (!latest) throw new Error('missing');
        const configuration = { ...latest.data.configuration, global_vars: { blob: String(v % 10).repeat(BLOB), v } };
        await repo.append(latest, { data: { ...latest.data, configuration } }, null, latest.time_updated + 1);
      }
    });
    const path = `/v1/playbook_configuration/${id}/version/?all=1`;

    const whole = await h.request('GET', path, { token: root });
    expect(whole.status).toBe(200);
    expect(whole.headers['content-type']).toBe('application/json');
    expect(whole.json).toMatchObject({ page: 1, per_page: VERSIONS, total: VERSIONS });
    expect(whole.json.items.map((m: { version: number }) => m.version)).toEqual([...Array(VERSIONS).keys()].map((i) => VERSIONS - i));
    expect(whole.json.items[0]).toEqual((await h.request('GET', `/v1/playbook_configuration/${id}/version/${VERSIONS}/`, { token: root })).json);
    expect(whole.json.items[VERSIONS - 1]).toEqual(created.json);
    const totalBytes = whole.body.length;
    expect(totalBytes).toBeGreaterThan(VERSIONS * BLOB * 0.95);

    // The heap the answers hold (what a collection leaves), sampled while they are written.
    gc();
    const baseline = process.memoryUsage().heapUsed;
    let peak = baseline;
    const sampler = setInterval(() => {
      gc();
      peak = Math.max(peak, process.memoryUsage().heapUsed);
    }, 250);
    const answers = await Promise.all([...Array(4).keys()].map(() => timedGet(path, root)));
    clearInterval(sampler);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.bytes).toBe(totalBytes);
    }
    // Four answers of ~15 MB each: built whole, they would hold several times that at once.
    console.log(`all=1 answers: ${totalBytes} bytes each; live heap peak ${((peak - baseline) / 2 ** 20).toFixed(1)} MiB over the baseline`);
    expect(peak - baseline).toBeLessThan(totalBytes);
    // Other requests are answered between the batches of the answers.
    const longest = await infoLatencyDuring(Promise.all([...Array(4).keys()].map(() => timedGet(path, root))));
    console.log(`GET /v1/info/ during four all=1 answers: longest ${longest.toFixed(0)} ms`);
    expect(longest).toBeLessThan(1000);

    const paged = await h.request('GET', `/v1/playbook_configuration/${id}/version/?per_page=2&page=3`, { token: root });
    expect(paged.json).toMatchObject({ page: 3, per_page: 2, total: VERSIONS });
    expect(paged.json.items.map((m: { version: number }) => m.version)).toEqual([VERSIONS - 4, VERSIONS - 5]);
  }, 120_000);

  it('bounds the nesting depth of stored documents with a 400 that names the limit', async () => {
    const server = await addServer(h);
    const created = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'deep', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [server.id] },
    });
    expect(created.status, created.body).toBe(200);
    const put = (configuration: Record<string, unknown>, envelope = created.json) =>
      h.request('PUT', `/v1/playbook_configuration/${created.json.id}/`, { token: root, body: { ...envelope, data: { ...envelope.data, configuration } } });
    // data (1) > configuration (2) > global_vars (3) > the nested objects.
    const deepest = await put({ ...created.json.data.configuration, global_vars: nested(MAX_DATA_DEPTH - 2) });
    expect(deepest.status, deepest.body).toBe(200);
    const inventory = created.json.data.configuration.inventory;
    for (const configuration of [
      { global_vars: nested(MAX_DATA_DEPTH - 1), inventory },
      { global_vars: {}, inventory: { ...inventory, all: nested(MAX_DATA_DEPTH) } },
      { global_vars: { list: JSON.parse('['.repeat(100) + ']'.repeat(100)) as unknown }, inventory },
    ]) {
      const res = await put(configuration, deepest.json);
      expectError(res, 400, 'InvalidJSONError');
      expect(res.json.description).toContain(String(MAX_DATA_DEPTH));
    }
    const raw = `{"id":"${created.json.id}","model":"playbook_configuration","data":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    expect((await h.request('PUT', `/v1/playbook_configuration/${created.json.id}/`, { token: root, raw, headers: { 'content-type': 'application/json' } })).status).toBe(400);
    const hint = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'deep-hint', cluster_id: clusterId, playbook_id: 'cluster_deploy', server_ids: [server.id], hints: [{ id: 'dmcrypt', value: nested(500) }] },
    });
    expectError(hint, 400);
    expect((await h.request('GET', `/v1/playbook_configuration/${created.json.id}/`, { token: root })).json.version).toBe(2);
  });

  it('bounds the size of a stored model: 413 past the limit, which by default is the body limit', async () => {
    const small = new VersionedRepository(h.db, clusters, { data: ['name'], defaultSort: [['name', 1]] }, { limits: { queryBudgetMs: 1000, maxDataBytes: 2048 } });
    await expect(small.create({ name: 'x'.repeat(3000), configuration: {} }, null, 1)).rejects.toThrow(ApiError);
    try {
      await small.create({ name: 'é'.repeat(1100), configuration: {} }, null, 1);
      expect.unreachable();
    } catch (e) {
      expect(e).toMatchObject({ statusCode: 413, errorName: 'PayloadTooLarge' });
    }
    expect((await small.create({ name: 'fits', configuration: {} }, null, 1)).version).toBe(1);
    expect(h.config.http.bodyLimitBytes).toBe(1_048_576);
    const big = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'x'.repeat(1_100_000) } });
    expectError(big, 413, 'PayloadTooLarge');
  });

  it('keeps every list answering when a stored document is beyond what SQLite JSON functions read', async () => {
    const server = await addServer(h);
    const created = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'healthy', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [server.id] },
    });
    expect(created.status, created.body).toBe(200);
    // The API refuses such a document now; one stored before, written here directly.
    const poisonId = randomUUID();
    const data = { ...created.json.data, name: 'poisoned', configuration: { global_vars: { deep: nested(1100) }, inventory: {} } };
    await h.db.run(
      sql`INSERT INTO playbook_configurations (id, version, time_updated, time_deleted, initiator_id, is_latest, data) VALUES (${poisonId}, 1, 1, 0, NULL, 1, ${JSON.stringify(data)})`,
    );
    const archivedId = randomUUID();
    await h.db.run(
      sql`INSERT INTO playbook_configurations (id, version, time_updated, time_deleted, initiator_id, is_latest, data) VALUES (${archivedId}, 1, 1, 5, NULL, 1, ${JSON.stringify({ ...data, name: 'poisoned-archived' })})`,
    );
    // SQLite's JSON functions refuse such a document (PostgreSQL's read it: nothing to refuse there).
    // Only SQLite's JSON functions fail on a malformed document (PostgreSQL's jsonb refuses it at write): the test names the engine.
    if (h.db.dialect === 'sqlite') await expect(h.db.all(sql`SELECT json_extract(data, '$.name') FROM playbook_configurations`)).rejects.toThrow(/JSON/);

    const list = async (query: string) => {
      const res = await h.request('GET', `/v1/playbook_configuration/?${query}`, { token: root });
      expect(res.status, `${query}: ${res.body}`).toBe(200);
      return res.json as { items: { id: string; data: { name: string } }[]; total: number };
    };
    const names = (page: { items: { data: { name: string } }[] }) => page.items.map((i) => i.data.name);
    expect(names(await list('per_page=100'))).toContain('poisoned');
    expect(names(await list(`filter=${q({ name: 'healthy' })}`))).toEqual(['healthy']);
    expect(names(await list(`filter=${q({ name: { regexp: '^heal' } })}&all=1`))).toEqual(['healthy']);
    expect(names(await list(`filter=${q({ 'configuration.global_vars.port_number': { gte: 1 } })}&per_page=100`))).toContain('healthy');
    expect((await list(`sort_by=${q({ name: 1 })}&per_page=100`)).items.map((i) => i.id)).toEqual(expect.arrayContaining([poisonId, created.json.id]));
    expect((await list(`sort_by=${q({ name: -1 })}&all=yes`)).items.map((i) => i.id)).toEqual(expect.arrayContaining([poisonId, created.json.id]));
    expect((await list(`filter=${q({ time_deleted: { ne: 0 } })}&per_page=100`)).items.map((i) => i.id)).toContain(archivedId);
    expect((await list(`filter=${q({ time_deleted: { ne: 0 } })}&sort_by=${q({ name: 1 })}&all=1`)).items.map((i) => i.id)).toContain(archivedId);
    const versions = await h.request('GET', `/v1/playbook_configuration/${poisonId}/version/?filter=${q({ name: { ne: 'x' } })}&sort_by=${q({ name: 1 })}`, { token: root });
    expect(versions.status, versions.body).toBe(200);
    expect(versions.json.total).toBe(1);
  });

  it('answers 400 with the error body to built-in object names as fields, operators and sort keys on every list', async () => {
    const server = await addServer(h);
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'names', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [server.id] },
    });
    const execution = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: 1 } } });
    expect(execution.status, execution.body).toBe(200);
    const userId = (await h.request('GET', '/v1/user/?per_page=1', { token: root })).json.items[0].id;
    const roleId = (await h.request('GET', '/v1/role/?per_page=1', { token: root })).json.items[0].id;
    const lists = [
      '/v1/user/',
      '/v1/role/',
      '/v1/cluster/',
      '/v1/server/',
      '/v1/playbook_configuration/',
      '/v1/execution/',
      `/v1/execution/${execution.json.id}/steps/`,
      `/v1/user/${userId}/version/`,
      `/v1/role/${roleId}/version/`,
      `/v1/cluster/${clusterId}/version/`,
      `/v1/server/${server.id}/version/`,
      `/v1/playbook_configuration/${config.json.id}/version/`,
      `/v1/execution/${execution.json.id}/version/`,
    ];
    for (const path of lists) {
      for (const name of BUILT_IN_NAMES) {
        for (const query of [
          `filter=${q(`{"${name}":1}`)}`,
          `filter=${q(`{"${name}":{"eq":1}}`)}`,
          `filter=${q(`{"${name}.x":1}`)}`,
          `filter=${q(`{"id":{"${name}":1}}`)}`,
          `sort_by=${q(`{"${name}":1}`)}`,
          `sort_by=${q(`{"${name}":1}`)}&all=1`,
        ]) {
          const res = await h.request('GET', `${path}?${query}`, { token: root });
          expect(res.status, `${path}?${decodeURIComponent(query)}: ${res.body}`).toBe(400);
          expectError(res, 400, 'BadRequest');
        }
      }
    }
  });

  it('filters and sorts version lists like every collection: newest first by default, deleted versions included', async () => {
    const created = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'versioned' } });
    let latest = created.json;
    for (const name of ['renamed-1', 'renamed-2', 'renamed-3']) {
      latest = (await h.request('PUT', `/v1/cluster/${latest.id}/`, { token: root, body: { ...latest, data: { ...latest.data, name } } })).json;
    }
    expect((await h.request('DELETE', `/v1/cluster/${latest.id}/`, { token: root })).status).toBe(200);
    const id: string = created.json.id;
    const versions = async (query = '') => {
      const res = await h.request('GET', `/v1/cluster/${id}/version/?${query}`, { token: root });
      expect(res.status, res.body).toBe(200);
      return { ...(res.json as { page: number; per_page: number; total: number }), versions: (res.json.items as { version: number }[]).map((m) => m.version) };
    };
    expect(await versions()).toMatchObject({ versions: [5, 4, 3, 2, 1], total: 5 });
    expect((await versions(`filter=${q({ version: { gte: 3 } })}`)).versions).toEqual([5, 4, 3]);
    expect((await versions(`sort_by=${q({ version: 1 })}`)).versions).toEqual([1, 2, 3, 4, 5]);
    expect((await versions(`filter=${q({ name: 'renamed-3' })}`)).versions).toEqual([5, 4]);
    expect((await versions(`filter=${q({ name: { regexp: '^renamed-[12]$' } })}&sort_by=${q({ name: -1 })}`)).versions).toEqual([3, 2]);
    expect((await versions(`filter=${q({ time_deleted: { ne: 0 } })}`)).versions).toEqual([5]);
    expect(await versions(`filter=${q({ version: { lte: 4 } })}&per_page=2&page=2`)).toMatchObject({ versions: [2, 1], page: 2, per_page: 2, total: 4 });
    expect(await versions(`filter=${q({ version: { in: [1, 3] } })}&all=1`)).toMatchObject({ versions: [3, 1], page: 1, per_page: 2, total: 2 });
    expect(await versions(`filter=${q({ version: 99 })}`)).toMatchObject({ versions: [], total: 0 });
    expectError(await h.request('GET', `/v1/cluster/${randomUUID()}/version/?filter=${q({ version: 1 })}`, { token: root }), 404, 'NotFound');
    expectError(await h.request('GET', `/v1/cluster/${randomUUID()}/version/?all=1`, { token: root }), 404, 'NotFound');
    expectError(await h.request('GET', `/v1/cluster/${id}/version/?filter=${q({ nope: 1 })}`, { token: root }), 400, 'BadRequest');
  });
});
