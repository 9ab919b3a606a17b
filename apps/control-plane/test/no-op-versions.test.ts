import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonEqual } from '@carapace/models';
import { addServer } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';

describe('a write that changes nothing stores no version', () => {
  let h: Harness;
  let root: string;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
  });
  afterAll(() => h.stop());

  const versionCount = async (model: string, id: string) =>
    (await h.request('GET', `/v1/${model}/${id}/version/`, { token: root })).json.total as number;

  it('compares data as JSON: key order and undefined keys do not count', () => {
    expect(jsonEqual({ a: 1, b: { c: [1, { d: 'x' }] } }, { b: { c: [1, { d: 'x' }] }, a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(jsonEqual({ a: null }, { a: undefined })).toBe(false);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual({ a: [] }, { a: {} })).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
  });

  it('answers a PUT of unchanged data with the current version, 200, and stores nothing', async () => {
    const created = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'same' } });
    const put = await h.request('PUT', `/v1/cluster/${created.json.id}/`, { token: root, body: created.json });
    expect(put.status).toBe(200);
    expect(put.json).toEqual(created.json);
    expect(await versionCount('cluster', created.json.id)).toBe(1);
    // The answer is the envelope to send next: a real change after it succeeds.
    const renamed = await h.request('PUT', `/v1/cluster/${created.json.id}/`, { token: root, body: { ...put.json, data: { ...put.json.data, name: 'other' } } });
    expect(renamed.json).toMatchObject({ version: 2, data: { name: 'other' } });
  });

  it('takes data with its keys in another order, or changing only fields a PUT ignores, as unchanged', async () => {
    const user = (await h.request('GET', '/v1/user/self/', { token: root })).json;
    const reordered = Object.fromEntries(Object.entries(user.data as Record<string, unknown>).reverse());
    const put = await h.request('PUT', `/v1/user/${user.id}/`, { token: root, body: { ...user, data: reordered } });
    expect(put.status).toBe(200);
    expect(put.json.version).toBe(user.version);
    const server = await addServer(h);
    const ignored = await h.request('PUT', `/v1/server/${server.id}/`, { token: root, body: { ...server, data: { ...server.data, state: 'off' } } });
    expect(ignored.json).toMatchObject({ version: server.version, data: { state: 'operational' } });
    expect(await versionCount('server', server.id)).toBe(server.version);
  });

  it('still checks the envelope and the permissions of a PUT that changes nothing', async () => {
    const created = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'guarded' } });
    const stale = await h.request('PUT', `/v1/cluster/${created.json.id}/`, { token: root, body: { ...created.json, version: 7 } });
    expect(stale.status).toBe(409);
    const viewer = await h.userWith('viewer-of-clusters', ['view_cluster']);
    expect((await h.request('PUT', `/v1/cluster/${created.json.id}/`, { token: viewer.token, body: created.json })).status).toBe(403);
  });
});
