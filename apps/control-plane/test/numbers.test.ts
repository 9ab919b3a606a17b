import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@carapace/test-support/harness';

// Numbers in paths and query strings are decimal digits; "0x10", "1e1", "1.5" and the like
// were taken by Value.Convert (16, 10, 1) and now answer 400.
const LENIENT = ['0x10', '1e1', '1.5', '1.0', '%205', '5%20', '%2B5', '-1', '0b11', 'Infinity', ''];

describe('numbers in paths and query strings', () => {
  let h: Harness;
  let root: string;
  let userId: string;
  let clusterId: string;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    userId = (await h.request('GET', '/v1/user/self/', { token: root })).json.id;
    clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'numbers' } })).json.id;
  });
  afterAll(() => h.stop());

  const expectBadRequest = (res: Awaited<ReturnType<Harness['request']>>, what: string, name: string) => {
    expect(res.status, `${what} → ${res.body}`).toBe(400);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.json).toMatchObject({ code: 400, error: 'BadRequest' });
    expect(res.json.description).toContain(`"${name}" must be a decimal integer`);
    expect(res.json.message).toBe(res.json.description);
  };

  it('answers 400 to page and per_page that are not decimal digits, on every kind of list', async () => {
    const lists = ['/v1/user/', '/v1/role/', '/v1/cluster/', '/v1/server/', '/v1/execution/', `/v1/user/${userId}/version/`, `/v1/cluster/${clusterId}/version/`];
    for (const list of lists) {
      for (const value of LENIENT) {
        for (const name of ['page', 'per_page']) {
          const url = `${list}?${name}=${value}`;
          expectBadRequest(await h.request('GET', url, { token: root }), url, name);
        }
      }
      const ok = await h.request('GET', `${list}?page=01&per_page=05`, { token: root });
      expect(ok.status, `${list} ${ok.body}`).toBe(200);
      expect(ok.json).toMatchObject({ page: 1, per_page: 5 });
    }
  });

  it('answers 400 to a version in the path that is not decimal digits, 404 to one that does not exist', async () => {
    for (const value of [...LENIENT.filter((v) => v !== ''), 'x']) {
      const url = `/v1/user/${userId}/version/${value}/`;
      expectBadRequest(await h.request('GET', url, { token: root }), url, 'version');
    }
    expect((await h.request('GET', `/v1/user/${userId}/version/1/`, { token: root })).json).toMatchObject({ id: userId, version: 1 });
    expect((await h.request('GET', `/v1/cluster/${clusterId}/version/01/`, { token: root })).json).toMatchObject({ id: clusterId, version: 1 });
    for (const value of ['0', '2', '99999999999']) {
      expect((await h.request('GET', `/v1/cluster/${clusterId}/version/${value}/`, { token: root })).status).toBe(404);
    }
    // a malformed id is still an unknown id
    expect((await h.request('GET', '/v1/cluster/1.5/version/1/', { token: root })).status).toBe(404);
    expect((await h.request('GET', '/v1/cluster/0x10/', { token: root })).status).toBe(404);
  });
});
