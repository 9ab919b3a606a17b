import { ListQuerySchema, ListSchema, ServerSchema, type ListQuery, type ServerData, type ServerFacts } from '@carapace/models';
import Fastify from 'fastify';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listRequest, pageBody } from '../src/http/routes/versioned.routes.js';
import { decodeFactsResult } from '../src/grpc/runner.codec.js';
import { servers } from '../src/db/schema/index.js';
import { VersionedRepository } from '../src/db/versioned.repository.js';
import { cleanFacts, servedAsStored } from '../src/infrastructure/server.service.js';
import { addServer, makeFacts } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';

/** Facts with fields the schema does not define, at every level, as a newer runner might send. */
function factsWithExtras(hostname: string, ip: string): Record<string, unknown> {
  const facts = makeFacts(hostname, ip) as unknown as Record<string, any>;
  return {
    ...facts,
    bios: { vendor: 'SeaBIOS' },
    os: { ...facts.os, codename: 'bookworm' },
    cpu: { ...facts.cpu, flags: ['sse4_2'] },
    interfaces: facts.interfaces.map((i: Record<string, any>) => ({
      ...i,
      speed: 1000,
      addresses: i.addresses.map((a: object) => ({ ...a, scope: 'global' })),
    })),
    disks: facts.disks.map((d: Record<string, any>) => ({
      ...d,
      wwn: '0x5000c500a1b2c3d4',
      partitions: d.partitions.map((p: object) => ({ ...p, uuid: 'f00d' })),
    })),
  };
}

const EXTRA_KEYS = ['bios', 'codename', 'flags', 'speed', 'scope', 'wwn', 'uuid'];

describe('the server list', () => {
  let h: Harness;
  let root: string;
  const discovery = (): Record<string, string> => ({ authorization: h.config.discoveryTokens[0] ?? '' });
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
  });
  afterAll(() => h.stop());

  async function list(query = ''): Promise<any> {
    const res = await h.request('GET', `/v1/server/${query ? `?${query}` : ''}`, { token: root });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['cache-control']).toBe('private, no-store, no-cache');
    return res.json;
  }

  async function getOne(id: string): Promise<unknown> {
    const res = await h.request('GET', `/v1/server/${id}/`, { token: root });
    expect(res.status).toBe(200);
    return res.json;
  }

  it('stores the facts a runner sends cleaned of the fields the schema does not define', async () => {
    const id = '00000000-0000-4000-8000-0000000000e1';
    await h.request('POST', '/v1/server/', { headers: discovery(), body: { id, host: '10.30.0.1', username: 'ansible' } });
    const facts = h.container.services.facts;
    const [request] = await facts.take([{ name: 'r1', labels: {} }]);
    await facts.complete(
      'r1',
      decodeFactsResult('r1', {
        request_id: request?.request.requestId ?? '',
        server_id: id,
        facts_json: JSON.stringify(factsWithExtras('extra1', '10.30.0.1')),
        host_key: 'ssh-ed25519 AAAAextra',
        error: '',
      }),
    );
    const stored = await h.db.get<{ data: string }>(sql`SELECT data FROM servers WHERE id = ${id} AND is_latest = 1`);
    if (!stored) throw new Error('missing');
    const data = JSON.parse(stored.data) as ServerData;
    expect(data.state).toBe('operational');
    expect(data.facts).toEqual(makeFacts('extra1', '10.30.0.1'));
    for (const key of EXTRA_KEYS) expect(stored.data).not.toContain(`"${key}"`);
    expect(servedAsStored(data, stored.data)).toBe(true);
    expect(await getOne(id)).toMatchObject({ data: { facts: makeFacts('extra1', '10.30.0.1') } });
  });

  it('cleans facts at every level and leaves clean facts as they are', () => {
    const clean = makeFacts('n', '10.0.0.1');
    expect(cleanFacts(factsWithExtras('n', '10.0.0.1') as unknown as ServerFacts)).toEqual(clean);
    expect(JSON.stringify(cleanFacts(clean))).toBe(JSON.stringify(clean));
  });

  it('tells stored data served as it is from data the response schema would change', () => {
    const data: ServerData = {
      name: 'n',
      fqdn: 'n.example.com',
      ip: '10.0.0.1',
      username: 'ansible',
      state: 'operational',
      cluster_id: null,
      facts: makeFacts('n', '10.0.0.1'),
      facts_error: null,
      ssh_host_key: null,
    };
    const exact = (value: unknown) => servedAsStored(value, JSON.stringify(value));
    expect(exact(data)).toBe(true);
    expect(exact({ ...data, facts: {} })).toBe(true);
    expect(exact({ ...data, extra: 1 })).toBe(false);
    expect(exact({ ...data, facts: factsWithExtras('n', '10.0.0.1') })).toBe(false);
    expect(exact({ ...data, facts: { hostname: 'n' } })).toBe(false);
    expect(exact({ ...data, name: 5 })).toBe(false);
    expect(exact({ ...data, facts: { ...data.facts, cpu: { count: 1.5, model: 'x' } } })).toBe(false);
    // The same content written otherwise (spaces, key order) is not taken as it is either.
    expect(servedAsStored(data, JSON.stringify(data, null, 1))).toBe(false);
  });

  it('lists each server exactly as GET /v1/server/{id}/ serves it', async () => {
    const withFacts = [await addServer(h), await addServer(h, { dataDisks: 5 }), await addServer(h, { dataDisks: 0 })];
    const bare = '00000000-0000-4000-8000-0000000000e2';
    await h.request('POST', '/v1/server/', { headers: discovery(), body: { id: bare, host: 'bare.example.com', username: 'ansible' } });
    const renamed = withFacts[0];
    if (!renamed) throw new Error('no server');
    const put = await h.request('PUT', `/v1/server/${renamed.id}/`, { token: root, body: { ...renamed, data: { ...renamed.data, name: 'a-renamed-node' } } });
    expect(put.status).toBe(200);
    const page = await list('per_page=100');
    expect(page.total).toBe(page.items.length);
    expect(page).toMatchObject({ page: 1, per_page: 100 });
    const ids = page.items.map((s: { id: string }) => s.id);
    for (const id of [...withFacts.map((s) => s.id), bare]) expect(ids).toContain(id);
    for (const item of page.items) expect(item).toEqual(await getOne(item.id));
    // Twice: the second time every row is known exact.
    expect(await list('per_page=100')).toEqual(page);
  });

  it('serves a version stored with fields the schema does not define through the schema, as GET does', async () => {
    const server = await addServer(h);
    // A version as an earlier control plane, which did not clean facts, may have stored it.
    const repo = new VersionedRepository<ServerData>(h.db, servers, { data: ['name'], defaultSort: [['name', 1]] });
    await repo.transaction(async () => {
      const latest = await repo.get(server.id);
      if (!latest) throw new Error('missing');
      const data = { ...latest.data, facts: factsWithExtras((latest.data.facts as ServerFacts).hostname, latest.data.ip), legacy: true } as unknown as ServerData;
      await repo.append(latest, { data }, null, latest.time_updated + 1);
    });
    const raw = await h.db.get<{ data: string }>(sql`SELECT data FROM servers WHERE id = ${server.id} AND is_latest = 1`);
    expect(raw?.data).toContain('"wwn"');
    const res = await h.request('GET', '/v1/server/?per_page=100', { token: root });
    for (const key of [...EXTRA_KEYS, 'legacy']) expect(res.body).not.toContain(`"${key}"`);
    const item = res.json.items.find((s: { id: string }) => s.id === server.id);
    expect(item).toMatchObject({ version: 3, data: { facts: { hostname: (server.data.facts as ServerFacts).hostname } } });
    expect(item).toEqual(await getOne(server.id));
  });

  it('answers what serializing the parsed models through the list schema answers', async () => {
    // The list route as it was: parse every row, serialize the page through the schema.
    const before = Fastify({ routerOptions: { ignoreTrailingSlash: true } });
    before.get('/v1/server', { schema: { querystring: ListQuerySchema, response: { 200: ListSchema(ServerSchema) } } }, async (request) => {
      const list = listRequest(request.query as ListQuery, h.config);
      return pageBody(list, await h.container.services.servers.list(list), (stored) => ({ ...stored, model: 'server' }));
    });
    await before.ready();
    for (const query of ['', 'per_page=100', 'per_page=2&page=2', `sort_by=${encodeURIComponent('{"fqdn":-1}')}&all=yes`, `filter=${encodeURIComponent('{"time_deleted":{"gte":0}}')}`]) {
      const old = await before.inject(`/v1/server/?${query}`);
      expect(old.statusCode).toBe(200);
      expect(await list(query)).toEqual(old.json());
    }
    await before.close();
  });

  it('keeps filters, sort orders and pages', async () => {
    const all = (await list('all=yes')).items as { id: string; data: { name: string } }[];
    expect(all.length).toBeGreaterThan(5);
    const byName = [...all].sort((a, b) => (a.data.name < b.data.name ? -1 : a.data.name > b.data.name ? 1 : 0));
    expect(all.map((s) => s.id)).toEqual(byName.map((s) => s.id));
    const desc = await list(`sort_by=${encodeURIComponent('{"name":-1}')}&per_page=2&page=2`);
    expect(desc).toMatchObject({ page: 2, per_page: 2, total: all.length });
    expect(desc.items.map((s: { id: string }) => s.id)).toEqual([...byName].reverse().slice(2, 4).map((s) => s.id));
    const one = byName[1];
    if (!one) throw new Error('no server');
    const filtered = await list(`filter=${encodeURIComponent(JSON.stringify({ name: one.data.name }))}`);
    expect(filtered.total).toBe(1);
    expect(filtered.items).toEqual([await getOne(one.id)]);
    const regexp = await list(`filter=${encodeURIComponent(JSON.stringify({ 'facts.hostname': { regexp: '^node' } }))}&per_page=1000`);
    expect(regexp.total).toBeGreaterThan(0);
    for (const s of regexp.items) expect(s.data.facts.hostname).toMatch(/^node/);
    const none = await list(`filter=${encodeURIComponent('{"name":"no-such-server"}')}`);
    expect(none).toEqual({ items: [], page: 1, per_page: 25, total: 0 });
    const beyond = await list('per_page=3&page=1000');
    expect(beyond).toMatchObject({ items: [], page: 1000, per_page: 3, total: all.length });
    // Deleted servers only when the filter names time_deleted.
    const gone = all.find((s) => s.data.name === 'a-renamed-node');
    if (!gone) throw new Error('no renamed server');
    expect((await h.request('DELETE', `/v1/server/${gone.id}/`, { token: root })).status).toBe(200);
    expect((await list('all=1')).items.map((s: { id: string }) => s.id)).not.toContain(gone.id);
    const deleted = await list(`filter=${encodeURIComponent('{"time_deleted":{"ne":0}}')}`);
    expect(deleted.items).toEqual([await getOne(gone.id)]);
    const everything = await list('all=true');
    expect(everything).toMatchObject({ page: 1, per_page: everything.total, total: all.length - 1 });
    expect((await list('per_page=1000')).items).toEqual(everything.items);
  });
  it('counts every live server again only when one comes or goes, not when one changes', async () => {
    const total = async (query = ''): Promise<number> => (await list(`per_page=1${query}`)).total;
    const before = await total();
    const [one] = [await addServer(h)];
    if (!one) throw new Error('no server');
    expect(await total()).toBe(before + 1);
    // A row written past the repository, as nothing in Carapace does: the unfiltered total is
    // the kept count until a server comes or goes, a filtered list counts its rows.
    for (const n of [7, 8]) {
      const data = JSON.stringify({ ...one.data, name: 'stray-row' });
      await h.db.run(sql`INSERT INTO servers (id, version, time_updated, time_deleted, initiator_id, is_latest, data) VALUES (${`00000000-0000-4000-8000-0000000000f${n}`}, 1, 1, 0, NULL, 1, ${data})`);
    }
    expect(await total()).toBe(before + 1);
    expect(await total(`&filter=${encodeURIComponent('{"name":"stray-row"}')}`)).toBe(2);
    // New facts and a rename make versions, and create or delete no server.
    await h.container.services.servers.recordFacts(one.id, makeFacts('node-kept', '10.0.9.9'), null);
    const latest = await getOne(one.id) as { data: ServerData };
    expect((await h.request('PUT', `/v1/server/${one.id}/`, { token: root, body: { ...latest, data: { ...latest.data, name: 'counted-once' } } })).status).toBe(200);
    expect(await total()).toBe(before + 1);
    // A deletion is counted again, and so the stray rows with it.
    expect((await h.request('DELETE', `/v1/server/${one.id}/`, { token: root })).status).toBe(200);
    expect(await total()).toBe(before + 2);
    await addServer(h);
    expect(await total()).toBe(before + 3);
    expect((await list('all=true')).items).toHaveLength(before + 3);
  });
});
