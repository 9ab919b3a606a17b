import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterFileRepository } from '../src/db/cluster-file.repository.js';
import { Harness } from '@carapace/test-support/harness';
import { addServer } from '@carapace/test-support/facts';

const DISCOVERY = 'discovery-token-for-tests-0123456789';
const ROTATED = 'discovery-token-rotated-abcdefghijk';

describe('clusters and servers', () => {
  let h: Harness;
  let root: string;
  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_DISCOVERY_TOKEN: `${DISCOVERY},${ROTATED}` });
    root = await h.rootToken();
  });
  afterAll(() => h.stop());

  it('creates, renames, versions and deletes clusters with unique names', async () => {
    const created = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'ceph1' } });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ model: 'cluster', version: 1, data: { name: 'ceph1', configuration: {} } });
    expect((await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'ceph1' } })).json.error).toBe('ImpossibleToCreateSuchModel');
    const renamed = await h.request('PUT', `/v1/cluster/${created.json.id}/`, {
      token: root,
      body: { ...created.json, data: { ...created.json.data, name: 'ceph-one', configuration: { mons: [] } } },
    });
    expect(renamed.json.data).toEqual({ name: 'ceph-one', configuration: {} });
    expect((await h.request('GET', `/v1/cluster/${created.json.id}/version/`, { token: root })).json.total).toBe(2);
    expect((await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'bad name!' } })).status).toBe(400);
    expect((await h.request('DELETE', `/v1/cluster/${created.json.id}/`, { token: root })).status).toBe(200);
  });

  it('registers servers with any of the discovery tokens, idempotently per id', async () => {
    const id = '4c4c4544-0042-3510-8052-b3c04f4e4d32';
    const first = await h.request('POST', '/v1/server/', { headers: { authorization: DISCOVERY }, body: { id, host: '10.0.5.1', username: 'ansible' } });
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ id, model: 'server', version: 1, initiator_id: null });
    expect(first.json.data).toMatchObject({ ip: '10.0.5.1', username: 'ansible', state: 'gathering_facts', cluster_id: null, facts: {} });
    const again = await h.request('POST', '/v1/server/', {
      headers: { authorization: `Bearer ${ROTATED}` },
      body: { server_id: id.toUpperCase(), host: '10.0.5.2', username: 'deploy' },
    });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ id, version: 2, data: { ip: '10.0.5.2', username: 'deploy' } });
    const list = await h.request('GET', `/v1/server/?filter=${encodeURIComponent(JSON.stringify({ id }))}`, { token: root });
    expect(list.json.total).toBe(1);
  });

  it('refuses a wrong discovery token and registers nothing', async () => {
    const id = '4c4c4544-0042-3510-8052-b3c04f4e0000';
    for (const authorization of ['wrong-token-wrong-token', DISCOVERY.slice(0, -1), '']) {
      const res = await h.request('POST', '/v1/server/', { headers: { authorization }, body: { id, host: '10.0.5.9', username: 'ansible' } });
      expect(res.status).toBe(401);
    }
    expect((await h.request('GET', `/v1/server/${id}/`, { token: root })).status).toBe(404);
  });

  it('lets a user with create_server alone register a server, and no one else', async () => {
    const { token } = await h.userWith('registrar', ['create_server']);
    const ok = await h.request('POST', '/v1/server/', { token, body: { id: '4c4c4544-0042-3510-8052-000000000001', host: 'node-x.example.com', username: 'ansible' } });
    expect(ok.status).toBe(200);
    expect(ok.json.data).toMatchObject({ fqdn: 'node-x.example.com', ip: '' });
    const { token: other } = await h.userWith('not-registrar', ['view_server']);
    const no = await h.request('POST', '/v1/server/', { token: other, body: { id: '4c4c4544-0042-3510-8052-000000000002', host: 'h', username: 'ansible' } });
    expect(no.status).toBe(403);
  });

  it('validates registrations', async () => {
    const headers = { authorization: DISCOVERY };
    for (const body of [
      { host: '10.0.0.1', username: 'ansible' },
      { id: 'not-a-uuid', host: '10.0.0.1', username: 'ansible' },
      { id: '4c4c4544-0042-3510-8052-000000000003', host: 'a b', username: 'ansible' },
      { id: '4c4c4544-0042-3510-8052-000000000003', host: '10.0.0.1', username: 'Root; rm' },
      { id: '4c4c4544-0042-3510-8052-000000000003', server_id: '4c4c4544-0042-3510-8052-000000000004', host: '10.0.0.1', username: 'a' },
    ]) {
      expect((await h.request('POST', '/v1/server/', { headers, body })).status).toBe(400);
    }
  });

  it('records facts as a new version and becomes operational; renames keep facts', async () => {
    const server = await addServer(h);
    expect(server.version).toBe(2);
    expect(server.data.state).toBe('operational');
    expect(server.data.name).toMatch(/^node\d+$/);
    expect(server.data.fqdn).toMatch(/\.lab\.example\.com$/);
    const renamed = await h.request('PUT', `/v1/server/${server.id}/`, {
      token: root,
      body: { ...server, data: { ...server.data, name: 'rack1-node', state: 'off', cluster_id: 'x' } },
    });
    expect(renamed.status).toBe(200);
    expect(renamed.json.data).toMatchObject({ name: 'rack1-node', state: 'operational', cluster_id: null });
    expect(renamed.json.data.facts.disks).toHaveLength(3);
  });

  it('refuses to delete a server in a cluster or a cluster with servers', async () => {
    const server = await addServer(h);
    const cluster = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'guarded' } });
    await h.container.services.servers.setCluster(server.id, cluster.json.id, 1);
    const delServer = await h.request('DELETE', `/v1/server/${server.id}/`, { token: root });
    expect(delServer.status).toBe(409);
    expect(delServer.json.error).toBe('CannotDeleteServer');
    const delCluster = await h.request('DELETE', `/v1/cluster/${cluster.json.id}/`, { token: root });
    expect(delCluster.status).toBe(409);
    expect(delCluster.json.error).toBe('CannotDeleteClusterWithServers');
    await h.container.services.servers.setCluster(server.id, null, 2);
    expect((await h.request('DELETE', `/v1/server/${server.id}/`, { token: root })).status).toBe(200);
    expect((await h.request('DELETE', `/v1/cluster/${cluster.json.id}/`, { token: root })).status).toBe(200);
  });

  it('loses and duplicates no version under 500 concurrent writers of one server', async () => {
    const server = await addServer(h);
    const id = server.id;
    const results = await Promise.all(
      Array.from({ length: 500 }, async (_, n) => {
        const read = await h.request('GET', `/v1/server/${id}/`, { token: root });
        return h.request('PUT', `/v1/server/${id}/`, { token: root, body: { ...read.json, data: { ...read.json.data, name: `w${n}` } } });
      }),
    );
    const won = results.filter((r) => r.status === 200).map((r) => r.json.version as number);
    expect(results.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    const versions = await h.request('GET', `/v1/server/${id}/version/?all=1`, { token: root });
    const numbers = (versions.json.items as { version: number }[]).map((v) => v.version).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: server.version + won.length }, (_, i) => i + 1));
    expect(new Set(won).size).toBe(won.length);
  });

  it('serves the cinder integration files of a cluster under root, 404 before there are any', async () => {
    const cluster = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'openstack' } });
    const id = cluster.json.id as string;
    const none = await h.request('GET', `/v1/cinder_integration/${id}/`, { token: root });
    expect(none.status).toBe(404);
    const files = new ClusterFileRepository(h.db, h.container.secretBox);
    await files.put(id, 'ceph.conf', '[global]\nfsid = x\n', 1);
    await files.put(id, 'ceph.client.cinder.keyring', '[client.cinder]\nkey = y\n', 1);
    const byDefault = await h.request('GET', `/v1/cinder_integration/${id}/`, { token: root });
    expect(byDefault.json).toEqual({ '/etc/ceph/ceph.conf': '[global]\nfsid = x\n', '/etc/ceph/ceph.client.cinder.keyring': '[client.cinder]\nkey = y\n' });
    const rooted = await h.request('GET', `/v1/cinder_integration/${id}/?root=/srv/ceph/`, { token: root });
    expect(Object.keys(rooted.json).sort()).toEqual(['/srv/ceph/ceph.client.cinder.keyring', '/srv/ceph/ceph.conf']);
    for (const bad of ['relative', '/etc/../root', '']) {
      expect((await h.request('GET', `/v1/cinder_integration/${id}/?root=${encodeURIComponent(bad)}`, { token: root })).status).toBe(400);
    }
    const { token } = await h.userWith('no-cinder', ['view_cluster']);
    expect((await h.request('GET', `/v1/cinder_integration/${id}/`, { token })).status).toBe(403);
  });
});
