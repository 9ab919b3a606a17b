import type { UserData } from '@carapace/models';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { AuthRepository } from '../src/db/auth.repository.js';
import { openDatabase } from '../src/db/client.js';
import { users } from '../src/db/schema/index.js';
import { VersionedRepository } from '../src/db/versioned.repository.js';
import { Harness } from '@carapace/test-support/harness';

/**
 * The authenticated principal of a token is cached (AuthService), and so are the latest
 * versions of users and roles (VersionedRepository): every test here first makes sure the
 * token's principal is cached (two requests), then checks that a change is seen by the
 * very next request.
 */
describe('cached principals and models', () => {
  let h: Harness;
  let root: string;
  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_TOKEN_TTL_S: '600' });
    root = await h.rootToken();
  });
  afterAll(() => h.stop());
  afterEach(() => vi.restoreAllMocks());

  async function status(method: 'GET' | 'DELETE', url: string, token: string): Promise<number> {
    return (await h.request(method, url, { token })).status;
  }

  /** Two requests: the second is answered from the cache. */
  async function warm(token: string, url = '/v1/user/self/'): Promise<void> {
    expect(await status('GET', url, token)).toBe(200);
    expect(await status('GET', url, token)).toBe(200);
  }

  it('reads the session once for repeated requests with one token, and again after a write', async () => {
    const { token } = await h.userWith('alma', ['view_user']);
    const session = vi.spyOn(AuthRepository.prototype, 'session');
    for (let i = 0; i < 5; i++) expect(await status('GET', '/v1/user/', token)).toBe(200);
    expect(session).toHaveBeenCalledTimes(1);
    // Bearer or raw: another header, read once too.
    expect((await h.request('GET', '/v1/user/', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect(session).toHaveBeenCalledTimes(2);
    // A write that can change a session (here: a logout, a revocation) empties the cache.
    const other = await h.login('root', 'root-password-for-tests');
    expect(await status('DELETE', '/v1/auth/', other)).toBe(200);
    expect(await status('GET', '/v1/user/', token)).toBe(200);
    expect(session).toHaveBeenCalledTimes(4);
  });

  it("keeps every other user's cached principal through logins", async () => {
    const { token } = await h.userWith('ansel', ['view_user']);
    const other = await h.userWith('berit', ['view_user']);
    await warm(token);
    await warm(other.token);
    const session = vi.spyOn(AuthRepository.prototype, 'session');
    for (let i = 0; i < 3; i++) {
      await h.login('root', 'root-password-for-tests');
      expect(await status('GET', '/v1/user/self/', token)).toBe(200);
      expect(await status('GET', '/v1/user/self/', other.token)).toBe(200);
    }
    expect(session).not.toHaveBeenCalled();
    // The new tokens themselves work at once (read once, then cached too).
    const fresh = await h.login('root', 'root-password-for-tests');
    await warm(fresh);
    expect(session).toHaveBeenCalledTimes(1);
  });

  it('applies a change of the role permissions on the next request', async () => {
    const { id, token } = await h.userWith('boris', ['view_user']);
    await warm(token, '/v1/user/');
    const user = await h.request('GET', `/v1/user/${id}/`, { token: root });
    const role = await h.request('GET', `/v1/role/${user.json.data.role_id}/`, { token: root });
    const revoke = await h.request('PUT', `/v1/role/${role.json.id}/`, {
      token: root,
      body: { ...role.json, data: { ...role.json.data, permissions: [{ name: 'api', permissions: ['view_role'] }] } },
    });
    expect(revoke.status).toBe(200);
    expect(await status('GET', '/v1/user/', token)).toBe(403);
    expect(await status('GET', '/v1/role/', token)).toBe(200);
    const grant = await h.request('PUT', `/v1/role/${role.json.id}/`, {
      token: root,
      body: { ...revoke.json, data: { ...revoke.json.data, permissions: [{ name: 'api', permissions: ['view_user'] }] } },
    });
    expect(grant.status).toBe(200);
    expect(await status('GET', '/v1/user/', token)).toBe(200);
    expect(await status('GET', '/v1/role/', token)).toBe(403);
  });

  it("applies a change of the user's role on the next request", async () => {
    const { id, token } = await h.userWith('cora', ['view_user']);
    const other = await h.createRole('role-without-view-user', ['view_role']);
    await warm(token, '/v1/user/');
    const user = await h.request('GET', `/v1/user/${id}/`, { token: root });
    const moved = await h.request('PUT', `/v1/user/${id}/`, { token: root, body: { ...user.json, data: { ...user.json.data, role_id: other } } });
    expect(moved.status).toBe(200);
    expect(await status('GET', '/v1/user/', token)).toBe(403);
    expect((await h.request('GET', '/v1/user/self/', { token })).json.data.role_id).toBe(other);
  });

  it('refuses a cached token at once after logout', async () => {
    const { token } = await h.userWith('dora', ['view_user']);
    await warm(token);
    expect(await status('DELETE', '/v1/auth/', token)).toBe(200);
    expect(await status('GET', '/v1/user/self/', token)).toBe(401);
  });

  it('refuses the cached tokens of a deleted user at once', async () => {
    const { id, token } = await h.userWith('emil', ['view_user']);
    await warm(token);
    expect(await status('DELETE', `/v1/user/${id}/`, root)).toBe(200);
    expect(await status('GET', '/v1/user/self/', token)).toBe(401);
  });

  it('refuses the cached tokens of a user at once after a password reset', async () => {
    const { token } = await h.userWith('fred', ['view_user']);
    await warm(token);
    const before = h.mail.mails.length;
    expect((await h.request('POST', '/v1/password_reset/', { body: { login: 'fred' } })).status).toBe(200);
    let mail;
    for (let i = 0; i < 200 && !mail; i++) {
      mail = h.mail.mails.slice(before).find((m) => m.to.includes('fred@example.com') && m.subject.includes('password reset'));
      if (!mail) await new Promise((r) => setTimeout(r, 20));
    }
    const reset = /reset token: (\S+)/.exec(mail?.text ?? '')?.[1] ?? '';
    expect((await h.request('POST', `/v1/password_reset/${reset}/`, { body: { password: 'fred-new-password' } })).status).toBe(200);
    expect(await status('GET', '/v1/user/self/', token)).toBe(401);
  });

  it('checks the expiry of a cached token on every request', async () => {
    const { token } = await h.userWith('gene', ['view_user']);
    const session = vi.spyOn(AuthRepository.prototype, 'session');
    await warm(token);
    expect(session).toHaveBeenCalledTimes(1);
    h.clock.advance(595);
    expect(await status('GET', '/v1/user/self/', token)).toBe(200);
    expect(session).toHaveBeenCalledTimes(1);
    h.clock.advance(10);
    expect(await status('GET', '/v1/user/self/', token)).toBe(401);
    h.clock.advance(-605);
    root = await h.login('root', 'root-password-for-tests');
  });

  it('serves the new version of a cached user at once after a change', async () => {
    const { id } = await h.userWith('hugo', ['view_user']);
    const first = await h.request('GET', `/v1/user/${id}/`, { token: root });
    expect((await h.request('GET', `/v1/user/${id}/`, { token: root })).json).toEqual(first.json);
    const put = await h.request('PUT', `/v1/user/${id}/`, { token: root, body: { ...first.json, data: { ...first.json.data, full_name: 'Hugo Renamed' } } });
    expect(put.status).toBe(200);
    const after = await h.request('GET', `/v1/user/${id}/`, { token: root });
    expect(after.json).toMatchObject({ version: first.json.version + 1, data: { full_name: 'Hugo Renamed' } });
    expect(after.json).toEqual(put.json);
  });
});

describe('the cache of latest versions', () => {
  const fields = { data: ['login', 'email', 'full_name', 'role_id'], defaultSort: [['full_name', 1]] } as const;
  const data = (name: string): UserData => ({ login: name, email: `${name}@example.com`, full_name: name, role_id: null });

  it('keeps nothing read in a transaction that is rolled back', async () => {
    const db = await openDatabase(':memory:');
    const repo = new VersionedRepository<UserData>(db, users, { data: [...fields.data], defaultSort: [['full_name', 1]] }, { cacheLatest: 10 });
    const created = await repo.create(data('ida'), null, 1);
    expect((await repo.get(created.id))?.version).toBe(1);
    await expect(
      repo.transaction(async () => {
        const latest = await repo.get(created.id);
        if (!latest) throw new Error('missing');
        await repo.append(latest, { data: data('ida2') }, null, 2);
        expect(await repo.get(created.id)).toMatchObject({ version: 2, data: { login: 'ida2' } });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await repo.get(created.id)).toMatchObject({ version: 1, data: { login: 'ida' } });
    await db.close();
  });

  it('sees the writes of another repository on the same table', async () => {
    const db = await openDatabase(':memory:');
    const cached = new VersionedRepository<UserData>(db, users, { data: [...fields.data], defaultSort: [['full_name', 1]] }, { cacheLatest: 10 });
    const other = new VersionedRepository<UserData>(db, users, { data: [...fields.data], defaultSort: [['full_name', 1]] });
    const created = await cached.create(data('jan'), null, 1);
    const read = await cached.get(created.id);
    expect(read?.version).toBe(1);
    expect(Object.isFrozen(read)).toBe(true);
    await other.transaction(() => other.append(created, { time_deleted: 5 }, null, 5));
    expect(await cached.get(created.id)).toMatchObject({ version: 2, time_deleted: 5 });
    await db.close();
  });
});
