import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@carapace/test-support/harness';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
interface Endpoint {
  readonly name: string;
  readonly method: Method;
  readonly needs: readonly string[];
  /** Makes a fresh target and returns the request to send. */
  readonly prepare: (h: Harness) => Promise<{ url: string; body?: unknown }>;
}

let counter = 0;
const unique = () => `m${++counter}`;

async function makeUser(h: Harness) {
  const login = unique();
  return (await h.request('POST', '/v1/user/', { token: await h.rootToken(), body: { login, email: `${login}@example.com` } })).json;
}
async function makeRole(h: Harness) {
  return (await h.request('POST', '/v1/role/', { token: await h.rootToken(), body: { name: unique(), permissions: [] } })).json;
}

/** The permission table of api-v1 §7 for the accounts API, one row per endpoint. */
const ENDPOINTS: Endpoint[] = [
  ...(['user', 'role'] as const).flatMap((model): Endpoint[] => {
    const make = model === 'user' ? makeUser : makeRole;
    const versions = model === 'user' ? 'view_user_versions' : 'view_role_versions';
    return [
      { name: `list ${model}`, method: 'GET', needs: [`view_${model}`], prepare: async () => ({ url: `/v1/${model}/` }) },
      { name: `get ${model}`, method: 'GET', needs: [`view_${model}`], prepare: async (h) => ({ url: `/v1/${model}/${(await make(h)).id}/` }) },
      {
        name: `versions of ${model}`,
        method: 'GET',
        needs: [`view_${model}`, versions],
        prepare: async (h) => ({ url: `/v1/${model}/${(await make(h)).id}/version/` }),
      },
      {
        name: `version of ${model}`,
        method: 'GET',
        needs: [`view_${model}`, versions],
        prepare: async (h) => ({ url: `/v1/${model}/${(await make(h)).id}/version/1/` }),
      },
      {
        name: `create ${model}`,
        method: 'POST',
        needs: [`view_${model}`, `create_${model}`],
        prepare: async () => {
          const n = unique();
          return { url: `/v1/${model}/`, body: model === 'user' ? { login: n, email: `${n}@example.com` } : { name: n, permissions: [] } };
        },
      },
      {
        name: `update ${model}`,
        method: 'PUT',
        needs: [`view_${model}`, `edit_${model}`],
        prepare: async (h) => {
          const m = await make(h);
          return { url: `/v1/${model}/${m.id}/`, body: { ...m, data: { ...m.data, ...(model === 'user' ? { full_name: 'X' } : { name: unique() }) } } };
        },
      },
      {
        name: `delete ${model}`,
        method: 'DELETE',
        needs: [`view_${model}`, `delete_${model}`],
        prepare: async (h) => ({ url: `/v1/${model}/${(await make(h)).id}/` }),
      },
    ];
  }),
  { name: 'permission list', method: 'GET', needs: ['view_role'], prepare: async () => ({ url: '/v1/permission/' }) },
  { name: 'playbook list', method: 'GET', needs: [], prepare: async () => ({ url: '/v1/playbook/' }) },
  { name: 'own user', method: 'GET', needs: [], prepare: async () => ({ url: '/v1/user/self/' }) },
  { name: 'logout', method: 'DELETE', needs: [], prepare: async () => ({ url: '/v1/auth/' }) },
];

describe('authorization matrix (api-v1 §7)', () => {
  let h: Harness;
  const tokens = new Map<string, string>();
  /** A token of a fresh user whose role holds exactly `permissions`. */
  async function tokenWith(permissions: readonly string[]): Promise<string> {
    const key = [...permissions].sort().join(',');
    let token = tokens.get(key);
    if (!token) {
      token = (await h.userWith(unique(), [...permissions])).token;
      tokens.set(key, token);
    }
    return token;
  }

  beforeAll(async () => {
    h = await Harness.start();
  });
  afterAll(() => h.stop());

  for (const endpoint of ENDPOINTS) {
    it(`${endpoint.name}: 401 without a token, 403 without each permission, allowed with exactly them`, async () => {
      const anonymous = await endpoint.prepare(h);
      const res401 = await h.request(endpoint.method, anonymous.url, { body: anonymous.body });
      expect(res401.status).toBe(401);
      expect(res401.json.error).toBe('Unauthorized');

      for (const missing of endpoint.needs) {
        const req = await endpoint.prepare(h);
        const token = await tokenWith(endpoint.needs.filter((p) => p !== missing));
        const res = await h.request(endpoint.method, req.url, { token, body: req.body });
        expect(res.status, `${endpoint.name} without ${missing}: ${res.body}`).toBe(403);
        expect(res.json).toMatchObject({ code: 403, error: 'Forbidden' });
        expect(res.json.description).toContain(missing);
      }

      const req = await endpoint.prepare(h);
      const token = endpoint.name === 'logout' ? (await h.userWith(unique(), [])).token : await tokenWith(endpoint.needs);
      const res = await h.request(endpoint.method, req.url, { token, body: req.body });
      expect(res.status, `${endpoint.name} with ${endpoint.needs.join(',')}: ${res.body}`).toBe(200);
    });
  }

  it('decides 401 before 403 and before validating the body', async () => {
    const res = await h.request('POST', '/v1/user/', { raw: '{broken' });
    expect(res.status).toBe(401);
    const token = await tokenWith([]);
    const forbidden = await h.request('POST', '/v1/user/', { token, raw: '{broken' });
    expect(forbidden.status).toBe(403);
  });
});
