import { Client, ServiceApiError, TokenAuth, noAuth } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { recordingFetch } from '@carapace/test-support/recording-fetch';

async function revoke(cp: TestControlPlane, token: string | null): Promise<void> {
  const res = await fetch(`${cp.url}/v1/auth/`, { method: 'DELETE', headers: { authorization: token ?? '' } });
  expect(res.status).toBe(200);
}

describe('client: lazy, shared and renewed login', () => {
  let cp: TestControlPlane;
  beforeAll(async () => {
    cp = await TestControlPlane.start();
  });
  afterAll(() => cp.stop());

  it('does not log in on construction, even with a wrong password; the first call does and fails', async () => {
    const recorder = recordingFetch();
    const client = new Client({ url: cp.url, login: 'root', password: 'not-the-password', fetch: recorder.fetch });
    expect(recorder.sent).toHaveLength(0);
    expect(client.token).toBeNull();
    const err = await client.getClusters().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceApiError);
    expect(err).toMatchObject({ code: 401, error: 'Unauthorized' });
    expect(recorder.sent.map((r) => `${r.method} ${r.url.pathname}`)).toEqual(['POST /v1/auth/']);
  });

  it('shares one login among concurrent first calls', async () => {
    const recorder = recordingFetch();
    const client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD, fetch: recorder.fetch });
    const answers = await Promise.all([
      client.getUserSelf(),
      client.getClusters(),
      client.getRoles(),
      client.getPermissions(),
      client.getPlaybooks(),
      client.getServers(),
      client.getExecutions(),
      client.getRoleSelf(),
    ]);
    expect(answers).toHaveLength(8);
    expect(recorder.logins()).toBe(1);
    const tokens = new Set(recorder.sent.filter((r) => r.url.pathname !== '/v1/auth/').map((r) => r.headers.get('authorization')));
    expect([...tokens]).toEqual([client.token]);
  });

  it('logs in explicitly with login(): the token model is kept and used', async () => {
    const recorder = recordingFetch();
    const client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD, fetch: recorder.fetch });
    const token = await client.login();
    expect(token).toMatchObject({ model: 'token', data: { user: { data: { login: 'root' } } } });
    expect(token.data.expires_at).toBeGreaterThan(Date.now() / 1000);
    expect(client.token).toBe(token.id);
    expect(client.auth.tokenModel).toEqual(token);
    await client.getUserSelf();
    expect(recorder.logins()).toBe(1);
    expect(recorder.sent.at(-1)?.headers.get('authorization')).toBe(token.id);
  });

  it('logs in again, once, when the server refuses a revoked token, and retries the call', async () => {
    const recorder = recordingFetch();
    const client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD, fetch: recorder.fetch });
    await client.getUserSelf();
    const old = client.token;
    await revoke(cp, old);
    recorder.sent.length = 0;

    const answers = await Promise.all([client.getUserSelf(), client.getClusters(), client.getRoles(), client.getServers()]);
    expect(answers[0].data.login).toBe('root');
    expect(client.token).not.toBe(old);
    expect(recorder.logins()).toBe(1);
    const refused = recorder.sent.filter((r) => r.status === 401);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.every((r) => r.headers.get('authorization') === old)).toBe(true);
    expect(recorder.sent.filter((r) => r.status === 200 && r.url.pathname !== '/v1/auth/')).toHaveLength(4);
  });

  it('does not loop when the new login is refused too: the login error is raised', async () => {
    const root = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD });
    await root.createUser('carol', 'carol@example.com', 'Carol');
    const password = await cp.mail.passwordOf('carol@example.com');
    const recorder = recordingFetch();
    const carol = new Client({ url: cp.url, login: 'carol', password, fetch: recorder.fetch });
    await carol.getUserSelf();
    await root.deleteUser((await carol.getUserSelf()).id);
    const err = await carol.getUserSelf().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 401, error: 'Unauthorized', description: 'Invalid login or password.' });
    expect(recorder.sent.slice(-2).map((r) => `${r.method} ${r.url.pathname} ${r.status}`)).toEqual(['GET /v1/user/self/ 401', 'POST /v1/auth/ 401']);
  });

  it('does not retry a logout the server refuses, and forgets the token anyway', async () => {
    const recorder = recordingFetch();
    const client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD, fetch: recorder.fetch });
    await client.login();
    await revoke(cp, client.token);
    expect(await client.logout()).toEqual({});
    expect(client.token).toBeNull();
    expect(recorder.logins()).toBe(1);
    expect(recorder.sent.at(-1)).toMatchObject({ method: 'DELETE', status: 401 });
  });

  it('exposes the authentication providers: the token one can be reset, the no-op one sends nothing', async () => {
    const client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD });
    expect(client.auth).toBeInstanceOf(TokenAuth);
    expect(TokenAuth.AUTH_PATH).toBe('/v1/auth/');
    await client.getUserSelf();
    const first = client.token;
    client.auth.reset();
    expect(client.token).toBeNull();
    await client.getUserSelf();
    expect(client.token).not.toBe(first);
    const headers = new Headers();
    expect(await noAuth.authorize(headers)).toBeNull();
    expect(headers.has('authorization')).toBe(false);
    expect(noAuth.refused('x')).toBe(false);
  });
});

describe('client: re-login after the token expired', () => {
  let cp: TestControlPlane;
  beforeAll(async () => {
    cp = await TestControlPlane.start({ CARAPACE_TOKEN_TTL_S: '1' });
  });
  afterAll(() => cp.stop());

  it('logs in again when the token expired by the clock, and the call succeeds', async () => {
    const recorder = recordingFetch();
    const client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD, fetch: recorder.fetch });
    const token = await client.login();
    expect(token.data.expires_at - token.time_updated).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const expired = await fetch(`${cp.url}/v1/user/self/`, { headers: { authorization: token.id } });
    expect(expired.status).toBe(401);

    const self = await client.getUserSelf();
    expect(self.data.login).toBe('root');
    expect(recorder.logins()).toBe(2);
    expect(client.token).not.toBe(token.id);
    expect(recorder.sent.slice(-3).map((r) => `${r.method} ${r.url.pathname} ${r.status}`)).toEqual([
      'GET /v1/user/self/ 401',
      'POST /v1/auth/ 200',
      'GET /v1/user/self/ 200',
    ]);
  });
});
