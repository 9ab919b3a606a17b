import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@carapace/test-support/harness';

describe('transport and errors (api-v1 §1, §2)', () => {
  let h: Harness;
  let root: string;
  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_HTTP_BODY_LIMIT_BYTES: '65536' });
    root = await h.rootToken();
  });
  afterAll(() => h.stop());

  it('answers exactly application/json with no-store caching, with and without a trailing slash', async () => {
    for (const url of ['/v1/info', '/v1/info/', '/v1/user', '/v1/user/']) {
      const res = await h.request('GET', url, { token: root });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.headers['cache-control']).toBe('private, no-store, no-cache');
      expect(res.headers.location).toBeUndefined();
    }
  });

  it('parses the body as JSON whatever its content type says', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
      const res = await h.request('POST', '/v1/auth/', {
        raw: JSON.stringify({ username: 'root', password: 'root-password-for-tests' }),
        headers: type ? { 'content-type': type } : {},
      });
      expect(res.status).toBe(200);
    }
  });

  it('answers 404 and 405 in the error envelope', async () => {
    const missing = await h.request('GET', '/v1/nothing/');
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ code: 404, error: 'NotFound' });
    expect(missing.json.message).toBe(missing.json.description);
    const wrong = await h.request('PATCH', '/v1/user/', { token: root });
    expect(wrong.status).toBe(405);
    expect(wrong.json).toMatchObject({ code: 405, error: 'MethodNotAllowed' });
    expect((await h.request('PUT', '/v1/info/')).status).toBe(405);
    const unknownId = await h.request('GET', '/v1/user/3f1e1b4c-1111-4222-8333-444455556666/', { token: root });
    expect(unknownId.status).toBe(404);
    expect(unknownId.json.error).toBe('NotFound');
  });

  it('answers malformed input of every kind with a 4xx error and changes nothing', async () => {
    const users = (await h.request('GET', '/v1/user/?all=1', { token: root })).json.total as number;
    const cases: { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string; raw?: string; body?: unknown; status: number; error?: string }[] = [
      { method: 'POST', url: '/v1/user/', raw: '{"login": "x",', status: 400, error: 'InvalidJSONError' },
      { method: 'POST', url: '/v1/user/', raw: '', status: 400, error: 'InvalidJSONError' },
      { method: 'POST', url: '/v1/user/', raw: 'null', status: 400, error: 'InvalidJSONError' },
      { method: 'POST', url: '/v1/user/', raw: '[1,2]', status: 400, error: 'InvalidJSONError' },
      { method: 'POST', url: '/v1/user/', body: { login: 5, email: 'a@example.com' }, status: 400, error: 'InvalidJSONError' },
      { method: 'POST', url: '/v1/user/', body: { login: 'a b', email: 'a@example.com' }, status: 400 },
      { method: 'POST', url: '/v1/user/', body: { login: 'ab', email: 'not-an-email' }, status: 400 },
      { method: 'POST', url: '/v1/user/', body: { login: 'ab', email: 'a@example.com', role_id: 'nope' }, status: 400 },
      { method: 'POST', url: '/v1/user/', body: { login: 'x'.repeat(1000), email: 'a@example.com' }, status: 400 },
      { method: 'POST', url: '/v1/role/', body: { name: 'r', permissions: 'all' }, status: 400 },
      { method: 'POST', url: '/v1/role/', body: { name: 'r', permissions: [{ name: 'api' }] }, status: 400 },
      { method: 'GET', url: '/v1/user/not-a-uuid/', status: 404 },
      { method: 'GET', url: `/v1/user/${'a'.repeat(300)}/`, status: 404 },
      { method: 'GET', url: '/v1/user/3f1e1b4c-1111-4222-8333-444455556666/version/x/', status: 400, error: 'BadRequest' },
      { method: 'GET', url: '/v1/user/3f1e1b4c-1111-4222-8333-444455556666/version/0/', status: 404 },
      { method: 'PUT', url: '/v1/user/not-a-uuid/', body: {}, status: 404 },
      { method: 'DELETE', url: '/v1/role/not-a-uuid/', status: 404 },
      { method: 'PUT', url: '/v1/user/3f1e1b4c-1111-4222-8333-444455556666/', body: { data: {} }, status: 400 },
      { method: 'GET', url: '/v1/user/?page=0', status: 400 },
      { method: 'GET', url: '/v1/user/?page=abc', status: 400 },
      { method: 'GET', url: '/v1/user/?per_page=-1', status: 400 },
      { method: 'GET', url: '/v1/user/?all=maybe', status: 400 },
      { method: 'GET', url: '/v1/user/?unknown=1', status: 400 },
      { method: 'GET', url: '/v1/user/?filter=notjson', status: 400 },
      { method: 'GET', url: `/v1/user/?filter=${encodeURIComponent('[1]')}`, status: 400 },
      { method: 'GET', url: `/v1/user/?filter=${encodeURIComponent('{"password":"x"}')}`, status: 400 },
      { method: 'GET', url: `/v1/user/?filter=${encodeURIComponent('{"login":{"like":"x"}}')}`, status: 400 },
      { method: 'GET', url: `/v1/user/?filter=${encodeURIComponent('{"login":{"eq":{"a":1}}}')}`, status: 400 },
      { method: 'GET', url: `/v1/user/?filter=${encodeURIComponent('{"login":{"in":"x"}}')}`, status: 400 },
      { method: 'GET', url: `/v1/user/?filter=${encodeURIComponent('{"login":{"regexp":"("}}')}`, status: 400 },
      { method: 'GET', url: `/v1/user/?filter=${encodeURIComponent('{"login\'); DROP TABLE users; --":1}')}`, status: 400 },
      { method: 'GET', url: `/v1/user/?filter=${encodeURIComponent('{"login.x\'y":1}')}`, status: 400 },
      { method: 'GET', url: `/v1/user/?sort_by=${encodeURIComponent('{"login":2}')}`, status: 400 },
      { method: 'GET', url: `/v1/user/?sort_by=${encodeURIComponent('{"nope":1}')}`, status: 400 },
      { method: 'GET', url: '/v1/user/?sort_by=[', status: 400 },
      { method: 'POST', url: '/v1/auth/', body: { username: '', password: 'x' }, status: 400 },
      { method: 'POST', url: '/v1/password_reset/', body: { login: ['root'] }, status: 400 },
    ];
    for (const c of cases) {
      const res = await h.request(c.method, c.url, { token: root, ...(c.raw !== undefined ? { raw: c.raw } : {}), ...(c.body !== undefined ? { body: c.body } : {}) });
      expect(res.status, `${c.method} ${c.url} ${c.raw ?? JSON.stringify(c.body)} → ${res.body}`).toBe(c.status);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.json.code).toBe(c.status);
      expect(typeof res.json.description).toBe('string');
      if (c.error) expect(res.json.error).toBe(c.error);
    }
    expect((await h.request('GET', '/v1/user/?all=1', { token: root })).json.total).toBe(users);
  });

  it('answers 413 to a body over the limit', async () => {
    const res = await h.request('POST', '/v1/user/', {
      token: root,
      body: { login: 'big', email: 'big@example.com', full_name: 'x'.repeat(70_000) },
    });
    expect(res.status).toBe(413);
    expect(res.json.error).toBe('PayloadTooLarge');
  });

  it('serves the OpenAPI document generated from the route schemas', async () => {
    const res = await h.request('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.json.openapi).toMatch(/^3\./);
    expect(Object.keys(res.json.paths)).toEqual(expect.arrayContaining(['/v1/user/{id}', '/v1/auth', '/v1/password_reset/{token}']));
    expect(res.json.paths['/v1/user'].post.requestBody).toBeDefined();
  });
});

describe('lists (api-v1 §4)', () => {
  let h: Harness;
  let root: string;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    const names = ['Zed', 'amy', 'Bea', 'Cal', 'dan', 'Eve', 'Fay'];
    for (const [i, name] of names.entries()) {
      const res = await h.request('POST', '/v1/user/', {
        token: root,
        body: { login: `u${i}`, email: `u${i}@example.com`, full_name: name },
      });
      expect(res.status).toBe(200);
    }
  });
  afterAll(() => h.stop());

  const list = async (query: string) => (await h.request('GET', `/v1/user/?${query}`, { token: root })).json;

  it('pages with page and per_page, and returns everything with all', async () => {
    const first = await list('per_page=3');
    expect(first).toMatchObject({ page: 1, per_page: 3, total: 8 });
    expect(first.items).toHaveLength(3);
    const third = await list('per_page=3&page=3');
    expect(third.items).toHaveLength(2);
    const beyond = await list('per_page=3&page=9');
    expect(beyond.items).toHaveLength(0);
    const all = await list('all=true&per_page=2');
    expect(all).toMatchObject({ page: 1, per_page: 8, total: 8 });
    expect(all.items).toHaveLength(8);
    expect((await list('per_page=100000')).per_page).toBe(h.config.list.maxPerPage);
  });

  it('sorts by full name by default, and by sort_by', async () => {
    const names = (await list('all=1')).items.map((u: { data: { full_name: string } }) => u.data.full_name);
    expect(names).toEqual([...names].sort());
    const byLoginDesc = (await list(`all=1&sort_by=${encodeURIComponent('{"login":-1}')}`)).items.map((u: { data: { login: string } }) => u.data.login);
    expect(byLoginDesc).toEqual([...byLoginDesc].sort().reverse());
  });

  it('filters by equality and by every operator', async () => {
    const f = async (filter: unknown) =>
      (await list(`all=1&filter=${encodeURIComponent(JSON.stringify(filter))}`)).items.map((u: { data: { login: string } }) => u.data.login).sort();
    expect(await f({ login: 'u1' })).toEqual(['u1']);
    expect(await f({ login: { ne: 'u1' }, full_name: { regexp: '^[a-z]' } })).toEqual(['u4']);
    expect(await f({ login: { in: ['u0', 'u2', 'nobody'] } })).toEqual(['u0', 'u2']);
    expect(await f({ login: { gte: 'u5' } })).toEqual(['u5', 'u6']);
    expect(await f({ login: { gt: 'u5', lt: 'u7' } })).toEqual(['u6']);
    expect(await f({ login: { lte: 'u0' } })).toEqual(['root', 'u0']);
    expect(await f({ role_id: null })).toEqual(['u0', 'u1', 'u2', 'u3', 'u4', 'u5', 'u6']);
    expect(await f({ version: 1, time_deleted: 0 })).toHaveLength(8);
    expect(await f({ login: { in: [] } })).toEqual([]);
  });
});
