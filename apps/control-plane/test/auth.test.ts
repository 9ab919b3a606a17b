import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, ROOT_PASSWORD } from '@carapace/test-support/harness';

describe('information, login and logout', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_TOKEN_TTL_S: '600' });
  });
  afterAll(() => h.stop());

  it('serves the information endpoint without login', async () => {
    const res = await h.request('GET', '/v1/info/');
    expect(res.status).toBe(200);
    expect(res.json.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(res.json.time.utc).toMatch(/Z$/);
    expect(res.json.time.local).not.toMatch(/Z$|[+-]\d\d:\d\d$/);
    expect(Math.abs(res.json.time.unix - Date.now() / 1000)).toBeLessThan(5);
  });

  it('logs in with username and password and returns a token model', async () => {
    const res = await h.request('POST', '/v1/auth/', { body: { username: 'root', password: ROOT_PASSWORD } });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ model: 'token', version: 1, time_deleted: 0 });
    expect(res.json.id.split('.')).toHaveLength(3);
    expect(res.json.data.user).toMatchObject({ model: 'user', data: { login: 'root' } });
    expect(res.json.initiator_id).toBe(res.json.data.user.id);
    expect(res.json.data.expires_at - res.json.time_updated).toBe(600);
    expect(res.body).not.toContain(ROOT_PASSWORD);
  });

  it('refuses a bad password, an unknown login and a missing field', async () => {
    for (const body of [
      { username: 'root', password: 'wrong-password' },
      { username: 'nobody', password: ROOT_PASSWORD },
    ]) {
      const res = await h.request('POST', '/v1/auth/', { body });
      expect(res.status).toBe(401);
      expect(res.json).toMatchObject({ code: 401, error: 'Unauthorized' });
      expect(res.headers['www-authenticate']).toBe('Token realm="Application"');
    }
    const res = await h.request('POST', '/v1/auth/', { body: { username: 'root' } });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('InvalidJSONError');
  });

  it('accepts the token raw or as Bearer (the scheme in any case), and says when it expires', async () => {
    const token = await h.login('root', ROOT_PASSWORD);
    for (const header of [token, `Bearer ${token}`, `bearer ${token}`, `BEARER ${token}`, `bEaReR \t${token} `]) {
      const res = await h.request('GET', '/v1/user/self/', { headers: { authorization: header } });
      expect(res.status).toBe(200);
      expect(res.json.data.login).toBe('root');
      expect(Number(res.headers['x-token-expires'])).toBeGreaterThan(Date.now() / 1000);
    }
  });

  it('answers 401 without a token or with a forged one', async () => {
    const token = await h.login('root', ROOT_PASSWORD);
    const [head, payload] = token.split('.');
    for (const header of [undefined, 'garbage', `${head}.${payload}.AAAA`, `Bearer `]) {
      const res = await h.request('GET', '/v1/user/', header === undefined ? {} : { headers: { authorization: header } });
      expect(res.status).toBe(401);
      expect(res.json.error).toBe('Unauthorized');
    }
  });

  it('revokes the token at logout', async () => {
    const token = await h.login('root', ROOT_PASSWORD);
    const out = await h.request('DELETE', '/v1/auth/', { token });
    expect(out.status).toBe(200);
    expect(out.json).toEqual({});
    expect((await h.request('GET', '/v1/user/self/', { token })).status).toBe(401);
    expect((await h.request('DELETE', '/v1/auth/', { token })).status).toBe(401);
  });

  it('expires tokens after their lifetime', async () => {
    const token = await h.login('root', ROOT_PASSWORD);
    h.clock.advance(599);
    expect((await h.request('GET', '/v1/user/self/', { token })).status).toBe(200);
    h.clock.advance(2);
    expect((await h.request('GET', '/v1/user/self/', { token })).status).toBe(401);
  });

  it('serves the caller own role and the catalogs', async () => {
    const token = await h.rootToken();
    const role = await h.request('GET', '/v1/role/self/', { token });
    expect(role.status).toBe(200);
    expect(role.json.data.name).toBe('wheel');
    const permissions = await h.request('GET', '/v1/permission/', { token });
    expect(permissions.json.items.map((g: { name: string }) => g.name)).toEqual(['api', 'playbook']);
    expect(permissions.json.items[0].permissions).toContain('view_user_versions');
    expect(permissions.json.items[0].permissions).toContain('view_cinder');
    const playbooks = await h.request('GET', '/v1/playbook/', { token });
    expect(playbooks.json.items.map((p: { id: string }) => p.id).sort()).toEqual([
      'add_mon',
      'add_osd',
      'add_pool',
      'cinder_integration',
      'cluster_deploy',
      'hello_world',
      'maintenance_enter',
      'maintenance_exit',
      'purge_cluster',
      'remove_mon',
      'remove_osd',
      'remove_pool',
      'replace_mon',
      'replace_osd',
      'restart_services',
      'update_ceph_configuration',
      'upgrade_ceph',
    ]);
    const deploy = playbooks.json.items.find((p: { id: string }) => p.id === 'cluster_deploy');
    expect(deploy.hints).toContainEqual(expect.objectContaining({ id: 'dmcrypt', type: 'boolean', default_value: false }));
    expect(deploy.required_server_list).toBe(true);
  });

  it('answers 404 for /v1/role/self/ when the caller has no role', async () => {
    const created = await h.request('POST', '/v1/user/', {
      token: await h.rootToken(),
      body: { login: 'norole', email: 'norole@example.com' },
    });
    expect(created.json.data).toMatchObject({ full_name: '', role_id: null });
    const mail = await h.mail.waitFor('norole@example.com', 'account');
    const token = await h.login('norole', /Password: (\S+)/.exec(mail.text)?.[1] ?? '');
    expect((await h.request('GET', '/v1/role/self/', { token })).status).toBe(404);
    expect((await h.request('GET', '/v1/playbook/', { token })).status).toBe(200);
    expect((await h.request('GET', '/v1/permission/', { token })).status).toBe(403);
  });
});

describe('login throttling', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_THROTTLE_LOGIN_DELAY_BASE_MS: '25', CARAPACE_THROTTLE_LOGIN_DELAY_MAX_MS: '300', CARAPACE_THROTTLE_LOGIN_FAILURES_PER_ADDRESS: '25' });
  });
  afterAll(() => h.stop());

  /** A login from a client address; answers status, body, Retry-After and how long it took. */
  async function loginFrom(address: string, username: string, password: string) {
    const started = performance.now();
    const res = await h.app.inject({ method: 'POST', url: '/v1/auth/', remoteAddress: address, payload: { username, password } });
    return { status: res.statusCode, json: res.json(), retryAfter: Number(res.headers['retry-after']), ms: performance.now() - started };
  }

  it('answers 429 after too many failures for one login, and lets it in again later', async () => {
    const limit = h.config.throttle.loginFailuresPerUser;
    for (let i = 0; i < limit; i++) {
      expect((await h.request('POST', '/v1/auth/', { body: { username: 'root', password: `bad-${i}` } })).status).toBe(401);
    }
    const blocked = await h.request('POST', '/v1/auth/', { body: { username: 'root', password: ROOT_PASSWORD } });
    expect(blocked.status).toBe(429);
    expect(blocked.json.error).toBe('TooManyRequests');
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    h.clock.advance(h.config.throttle.windowS + 1);
    expect((await h.request('POST', '/v1/auth/', { body: { username: 'root', password: ROOT_PASSWORD } })).status).toBe(200);
  });

  it('does not let failures from one address lock a login out of another: they only slow it down, for a bounded time', async () => {
    const attacker = '203.0.113.7';
    const owner = '198.51.100.20';
    const limit = h.config.throttle.loginFailuresPerUser;
    for (let i = 0; i < limit + 2; i++) {
      const res = await loginFrom(attacker, 'root', `guess-${i}`);
      expect(res.status).toBe(i < limit ? 401 : 429);
    }
    // The owner, from another address: in at the first try, held at most the capped delay.
    const owned = await loginFrom(owner, 'root', ROOT_PASSWORD);
    expect(owned.status).toBe(200);
    expect(owned.ms).toBeGreaterThanOrEqual(h.config.throttle.loginDelayMaxMs * 0.9);
    expect(owned.ms).toBeLessThan(h.config.throttle.loginDelayMaxMs + 2000);
    // The attacker's address stays refused for that login, right password or not.
    const refused = await loginFrom(attacker, 'root', `guess-${limit + 2}`);
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({ code: 429, error: 'TooManyRequests', description: expect.any(String), message: expect.any(String) });
    expect(refused.retryAfter).toBeGreaterThan(0);
    expect((await loginFrom(attacker, 'root', ROOT_PASSWORD)).status).toBe(429);
    // Another login from the attacker's address is not refused for root's failures.
    expect((await loginFrom(attacker, 'nobody-else', 'x')).status).toBe(401);
    // Once the window has slid past the failures, root gets in from that address too.
    h.clock.advance(refused.retryAfter + 1);
    expect((await loginFrom(attacker, 'root', ROOT_PASSWORD)).status).toBe(200);
  });

  it('still bounds the failures of one address across logins', async () => {
    const sprayer = '192.0.2.99';
    const limit = h.config.throttle.loginFailuresPerAddress;
    for (let i = 0; i < limit; i++) expect((await loginFrom(sprayer, `user-${i}`, 'password')).status).toBe(401);
    expect((await loginFrom(sprayer, 'root', ROOT_PASSWORD)).status).toBe(429);
    expect((await loginFrom('192.0.2.100', 'root', ROOT_PASSWORD)).status).toBe(200);
  });
});
