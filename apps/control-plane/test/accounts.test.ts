import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@carapace/test-support/harness';

describe('users and roles', () => {
  let h: Harness;
  let root: string;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
  });
  afterAll(() => h.stop());

  it('creates a user with defaults and e-mails a working generated password', async () => {
    const res = await h.request('POST', '/v1/user/', { token: root, body: { login: 'bob', email: 'bob@example.com' } });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ model: 'user', version: 1, time_deleted: 0, data: { login: 'bob', full_name: '', role_id: null } });
    const mail = await h.mail.waitFor('bob@example.com', 'account');
    const password = /Password: (\S+)/.exec(mail.text)?.[1] ?? '';
    expect(password.length).toBeGreaterThanOrEqual(16);
    expect(res.body).not.toContain(password);
    const token = await h.login('bob', password);
    expect((await h.request('GET', '/v1/user/self/', { token })).json.id).toBe(res.json.id);
  });

  it('refuses a taken login or e-mail among live users, and frees them on delete', async () => {
    const a = await h.request('POST', '/v1/user/', { token: root, body: { login: 'carol', email: 'carol@example.com' } });
    expect(a.status).toBe(200);
    for (const body of [
      { login: 'carol', email: 'other@example.com' },
      { login: 'carol2', email: 'carol@example.com' },
    ]) {
      const res = await h.request('POST', '/v1/user/', { token: root, body });
      expect(res.status).toBe(409);
      expect(res.json.error).toBe('ImpossibleToCreateSuchModel');
    }
    expect((await h.request('DELETE', `/v1/user/${a.json.id}/`, { token: root })).status).toBe(200);
    expect((await h.request('POST', '/v1/user/', { token: root, body: { login: 'carol', email: 'carol@example.com' } })).status).toBe(200);
  });

  it('updates by a full envelope, keeps every version, and refuses stale or altered envelopes', async () => {
    const created = await h.request('POST', '/v1/user/', { token: root, body: { login: 'dave', email: 'dave@example.com' } });
    const v1 = created.json;
    const put = await h.request('PUT', `/v1/user/${v1.id}/`, { token: root, body: { ...v1, data: { ...v1.data, full_name: 'Dave D' } } });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ id: v1.id, version: 2, data: { full_name: 'Dave D', login: 'dave' } });
    const stale = await h.request('PUT', `/v1/user/${v1.id}/`, { token: root, body: { ...v1, data: { ...v1.data, full_name: 'X' } } });
    expect(stale.status).toBe(409);
    expect(stale.json.error).toBe('CannotUpdateManagedFieldsError');
    const v2 = put.json;
    for (const altered of [{ ...v2, version: 7 }, { ...v2, time_updated: 1 }, { ...v2, initiator_id: null }, { ...v2, model: 'role' }, { ...v2, id: created.json.data.role_id ?? '00000000-0000-4000-8000-000000000000' }]) {
      const res = await h.request('PUT', `/v1/user/${v1.id}/`, { token: root, body: altered });
      expect(res.status).toBe(409);
      expect(res.json.error).toBe('CannotUpdateManagedFieldsError');
    }
    const versions = await h.request('GET', `/v1/user/${v1.id}/version/`, { token: root });
    expect(versions.json.items.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    expect(versions.json.total).toBe(2);
    const one = await h.request('GET', `/v1/user/${v1.id}/version/1/`, { token: root });
    expect(one.json.data.full_name).toBe('');
    expect((await h.request('GET', `/v1/user/${v1.id}/version/3/`, { token: root })).status).toBe(404);
  });

  it('ignores changes to data fields that are not editable', async () => {
    const created = await h.request('POST', '/v1/role/', { token: root, body: { name: 'viewers', permissions: [] } });
    const put = await h.request('PUT', `/v1/role/${created.json.id}/`, {
      token: root,
      body: { ...created.json, data: { ...created.json.data, name: 'readers', extra: 'ignored' } },
    });
    expect(put.status).toBe(200);
    expect(put.json.data).toEqual({ name: 'readers', permissions: [{ name: 'api', permissions: [] }, { name: 'playbook', permissions: [] }] });
  });

  it('soft-deletes: the model stays readable, leaves the list, and cannot change again', async () => {
    const created = await h.request('POST', '/v1/user/', { token: root, body: { login: 'erin', email: 'erin@example.com' } });
    const id = created.json.id;
    const deleted = await h.request('DELETE', `/v1/user/${id}/`, { token: root });
    expect(deleted.status).toBe(200);
    expect(deleted.json.version).toBe(2);
    expect(deleted.json.time_deleted).toBeGreaterThan(0);
    expect((await h.request('GET', `/v1/user/${id}/`, { token: root })).json.time_deleted).toBeGreaterThan(0);
    const list = await h.request('GET', '/v1/user/?all=yes', { token: root });
    expect(list.json.items.map((u: { id: string }) => u.id)).not.toContain(id);
    const archived = await h.request('GET', `/v1/user/?filter=${encodeURIComponent('{"time_deleted":{"ne":0}}')}`, { token: root });
    expect(archived.json.items.map((u: { id: string }) => u.id)).toContain(id);
    const again = await h.request('DELETE', `/v1/user/${id}/`, { token: root });
    expect(again.status).toBe(409);
    expect(again.json.error).toBe('CannotUpdateDeletedModel');
    const put = await h.request('PUT', `/v1/user/${id}/`, { token: root, body: deleted.json });
    expect(put.status).toBe(409);
    expect(put.json.error).toBe('CannotUpdateDeletedModel');
  });

  it('revokes the tokens of a deleted user, and refuses to delete oneself', async () => {
    const { id, token } = await h.userWith('frank', ['view_user']);
    expect((await h.request('GET', '/v1/user/', { token })).status).toBe(200);
    expect((await h.request('DELETE', `/v1/user/${id}/`, { token: root })).status).toBe(200);
    expect((await h.request('GET', '/v1/user/', { token })).status).toBe(401);
    const self = await h.request('GET', '/v1/user/self/', { token: root });
    const res = await h.request('DELETE', `/v1/user/${self.json.id}/`, { token: root });
    expect(res.status).toBe(409);
    expect(res.json.error).toBe('CannotDeleteYourself');
  });

  it('validates roles: known groups and permissions, unique names, sorted permissions', async () => {
    const bad = [
      { name: 'r1', permissions: [{ name: 'nope', permissions: [] }] },
      { name: 'r1', permissions: [{ name: 'api', permissions: ['fly'] }] },
      { name: 'r1', permissions: [{ name: 'playbook', permissions: ['view_user'] }] },
    ];
    for (const body of bad) {
      const res = await h.request('POST', '/v1/role/', { token: root, body });
      expect(res.status).toBe(400);
    }
    const ok = await h.request('POST', '/v1/role', {
      token: root,
      body: { name: 'ops', permissions: [{ name: 'api', permissions: ['view_user', 'create_user', 'view_user'] }] },
    });
    expect(ok.status).toBe(200);
    expect(ok.json.data.permissions).toEqual([
      { name: 'api', permissions: ['create_user', 'view_user'] },
      { name: 'playbook', permissions: [] },
    ]);
    const dup = await h.request('POST', '/v1/role/', { token: root, body: { name: 'ops', permissions: [] } });
    expect(dup.status).toBe(409);
    expect(dup.json.error).toBe('ImpossibleToCreateSuchModel');
  });

  it('refuses to delete a role of live users, and allows it once they are gone', async () => {
    const { id: userId } = await h.userWith('gina', ['view_user']);
    const user = await h.request('GET', `/v1/user/${userId}/`, { token: root });
    const roleId = user.json.data.role_id as string;
    const res = await h.request('DELETE', `/v1/role/${roleId}/`, { token: root });
    expect(res.status).toBe(409);
    expect(res.json.error).toBe('CannotDeleteRoleWithActiveUsers');
    await h.request('DELETE', `/v1/user/${userId}/`, { token: root });
    expect((await h.request('DELETE', `/v1/role/${roleId}/`, { token: root })).status).toBe(200);
  });

  it('applies a role change on the very next request', async () => {
    const { id, token } = await h.userWith('hank', ['view_user']);
    expect((await h.request('GET', '/v1/user/', { token })).status).toBe(200);
    const user = await h.request('GET', `/v1/user/${id}/`, { token: root });
    const role = await h.request('GET', `/v1/role/${user.json.data.role_id}/`, { token: root });
    const put = await h.request('PUT', `/v1/role/${role.json.id}/`, {
      token: root,
      body: { ...role.json, data: { ...role.json.data, permissions: [{ name: 'api', permissions: ['view_role'] }] } },
    });
    expect(put.status).toBe(200);
    expect((await h.request('GET', '/v1/user/', { token })).status).toBe(403);
    expect((await h.request('GET', '/v1/role/', { token })).status).toBe(200);
  });

  it('gives a user an unknown role → 400, and refuses to grant more than the caller holds', async () => {
    const res = await h.request('POST', '/v1/user/', {
      token: root,
      body: { login: 'ivan', email: 'ivan@example.com', role_id: '00000000-0000-4000-8000-000000000000' },
    });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe('UnknownRoleError');
    const { token } = await h.userWith('judy', ['view_role', 'create_role', 'view_user', 'create_user', 'edit_user']);
    const escalate = await h.request('POST', '/v1/role/', {
      token,
      body: { name: 'mine', permissions: [{ name: 'api', permissions: ['delete_user'] }] },
    });
    expect(escalate.status).toBe(403);
    const wheel = (await h.request('GET', '/v1/role/self/', { token: root })).json.id as string;
    const toWheel = await h.request('POST', '/v1/user/', { token, body: { login: 'kim', email: 'kim@example.com', role_id: wheel } });
    expect(toWheel.status).toBe(403);
    const within = await h.request('POST', '/v1/role/', {
      token,
      body: { name: 'readers-of-judy', permissions: [{ name: 'api', permissions: ['view_user'] }] },
    });
    expect(within.status).toBe(200);
  });
});
