import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_PERMISSIONS, PLAYBOOK_PERMISSIONS } from '@carapace/models';
import { createContainer, createLogger, loadConfig, openDatabase } from '../src/index.js';
import { Harness, ROOT_PASSWORD } from '@carapace/test-support/harness';

const ALL_API = [...API_PERMISSIONS];
const ALL_PLAYBOOK = [...PLAYBOOK_PERMISSIONS];
const USER_ADMIN = ['view_user', 'edit_user', 'delete_user', 'create_user', 'view_role', 'edit_role', 'delete_role', 'create_role'];

describe('no takeover of those who hold more (issue 13, defect 2)', () => {
  let h: Harness;
  let root: string;
  let rootUser: any;
  let wheel: any;
  let mallory: { id: string; token: string };

  const getUser = async (id: string) => (await h.request('GET', `/v1/user/${id}/`, { token: root })).json;
  const getRole = async (id: string) => (await h.request('GET', `/v1/role/${id}/`, { token: root })).json;
  const putUser = (token: string, user: any, data: Record<string, unknown>) =>
    h.request('PUT', `/v1/user/${user.id}/`, { token, body: { ...user, data: { ...user.data, ...data } } });
  const putRole = (token: string, role: any, data: Record<string, unknown>) =>
    h.request('PUT', `/v1/role/${role.id}/`, { token, body: { ...role, data: { ...role.data, ...data } } });
  const groups = (api: string[], playbook: string[] = []) => [
    { name: 'api', permissions: api },
    { name: 'playbook', permissions: playbook },
  ];

  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    rootUser = (await h.request('GET', '/v1/user/self/', { token: root })).json;
    wheel = (await h.request('GET', '/v1/role/self/', { token: root })).json;
    mallory = await h.userWith('mallory', USER_ADMIN);
  });
  afterAll(() => h.stop());

  it('refuses an edit_user holder every change of a wheel user: e-mail, login, name, role; and deleting them', async () => {
    const own = (await getUser(mallory.id)).data.role_id as string;
    for (const data of [{ email: 'mallory@evil.example' }, { login: 'root2' }, { full_name: 'Owned' }, { role_id: own }, { role_id: null }]) {
      const res = await putUser(mallory.token, rootUser, data);
      expect(res.status, JSON.stringify(data)).toBe(403);
      expect(res.json).toMatchObject({ code: 403, error: 'Forbidden' });
      expect(res.json.description).toContain('api:create_cluster');
    }
    const del = await h.request('DELETE', `/v1/user/${rootUser.id}/`, { token: mallory.token });
    expect(del.status).toBe(403);
    expect(del.json.error).toBe('Forbidden');
    const after = await getUser(rootUser.id);
    expect(after).toEqual(rootUser);
    // and no password reset mail can be steered to her
    expect(h.mail.mails.filter((m) => m.to.includes('evil.example'))).toEqual([]);
  });

  it('refuses an edit_role holder renaming, shrinking or deleting the wheel role', async () => {
    for (const data of [{ name: 'wheel-owned' }, { permissions: groups(['view_user']) }, { permissions: groups(USER_ADMIN) }]) {
      const res = await putRole(mallory.token, wheel, data);
      expect(res.status, JSON.stringify(data)).toBe(403);
      expect(res.json.error).toBe('Forbidden');
    }
    expect((await h.request('DELETE', `/v1/role/${wheel.id}/`, { token: mallory.token })).status).toBe(403);
    expect(await getRole(wheel.id)).toEqual(wheel);
    // root still holds everything
    expect((await h.request('GET', '/v1/cluster/', { token: root })).status).toBe(200);
  });

  it('refuses editing a role one does not hold in full, before or after the edit', async () => {
    const bigger = await h.createRole('bigger-than-mallory', [...USER_ADMIN, 'view_cluster']);
    const role = await getRole(bigger);
    // before: she cannot rename a role holding view_cluster, even keeping its permissions
    const rename = await putRole(mallory.token, role, { name: 'renamed' });
    expect(rename.status).toBe(403);
    expect(rename.json.description).toContain('api:view_cluster');
    expect((await h.request('DELETE', `/v1/role/${bigger}/`, { token: mallory.token })).status).toBe(403);
    // after: she may edit a role within hers, but not grow it beyond
    const small = await getRole(await h.createRole('small-of-mallory', ['view_user']));
    expect((await putRole(mallory.token, small, { name: 'small-renamed' })).status).toBe(200);
    const grow = await putRole(mallory.token, await getRole(small.id), { permissions: groups(['view_user', 'view_cluster']) });
    expect(grow.status).toBe(403);
  });

  it('lets a user change users within their own permissions, and themself, but never raise their own role', async () => {
    const target = await h.userWith('lesser', ['view_user']);
    const lesser = await getUser(target.id);
    const edited = await putUser(mallory.token, lesser, { full_name: 'Lesser L', login: 'lesser2' });
    expect(edited.status).toBe(200);
    const self = await getUser(mallory.id);
    const selfEdit = await putUser(mallory.token, self, { full_name: 'Mallory M' });
    expect(selfEdit.status).toBe(200);
    const raise = await putUser(mallory.token, selfEdit.json, { role_id: wheel.id });
    expect(raise.status).toBe(403);
    expect((await h.request('DELETE', `/v1/user/${target.id}/`, { token: mallory.token })).status).toBe(200);
  });

  it('keeps every permission in the wheel role, even against root; root may rename it', async () => {
    const shrink = await putRole(root, wheel, { permissions: groups(ALL_API, ALL_PLAYBOOK.slice(1)) });
    expect(shrink.status).toBe(409);
    expect(shrink.json).toMatchObject({ code: 409, error: 'CannotReduceBootstrapRole' });
    const shrinkApi = await putRole(root, wheel, { permissions: groups(ALL_API.filter((p) => p !== 'view_user'), ALL_PLAYBOOK) });
    expect(shrinkApi.json.error).toBe('CannotReduceBootstrapRole');
    const del = await h.request('DELETE', `/v1/role/${wheel.id}/`, { token: root });
    expect(del.status).toBe(409);
    expect(del.json.error).toBe('CannotDeleteBootstrapRole');
    expect(await getRole(wheel.id)).toEqual(wheel);
    const renamed = await putRole(root, wheel, { name: 'admins-of-old' });
    expect(renamed.status).toBe(200);
    const back = await putRole(root, renamed.json, { name: 'wheel' });
    expect(back.status).toBe(200);
    wheel = back.json;
    expect((await putRole(root, wheel, { permissions: groups(['view_user']) })).json.error).toBe('CannotReduceBootstrapRole');
  });

  it('never leaves the service without a live user holding every permission', async () => {
    const lesserRole = await h.createRole('not-quite-admin', ALL_API.filter((p) => p !== 'view_cinder'), ALL_PLAYBOOK);
    // root is the only one holding everything: it cannot demote itself
    const demoteSelf = await putUser(root, rootUser, { role_id: lesserRole });
    expect(demoteSelf.status).toBe(409);
    expect(demoteSelf.json).toMatchObject({ code: 409, error: 'CannotRemoveLastAdministrator' });
    // nor be deleted: not by itself, and not by anyone holding less
    expect((await h.request('DELETE', `/v1/user/${rootUser.id}/`, { token: root })).json.error).toBe('CannotDeleteYourself');
    expect((await h.request('DELETE', `/v1/user/${rootUser.id}/`, { token: mallory.token })).status).toBe(403);

    // a second administrator through another role holding everything
    const adminsRole = await h.createRole('admins', ALL_API, ALL_PLAYBOOK);
    const admin2 = await h.userWith('admin2', ALL_API, ALL_PLAYBOOK);
    const admins = await getRole(adminsRole);
    const a2 = await getUser(admin2.id);
    const moved = await putUser(root, a2, { role_id: adminsRole });
    expect(moved.status).toBe(200);
    // now root may be demoted (by admin2), and then admin2 is the last one
    const demoted = await putUser(admin2.token, await getUser(rootUser.id), { role_id: lesserRole });
    expect(demoted.status).toBe(200);
    const selfDemote = await putUser(admin2.token, moved.json, { role_id: lesserRole });
    expect(selfDemote.json.error).toBe('CannotRemoveLastAdministrator');
    // shrinking the role of the last administrator is a demotion too
    const shrink = await putRole(admin2.token, admins, { permissions: groups(ALL_API.filter((p) => p !== 'view_cinder'), ALL_PLAYBOOK) });
    expect(shrink.status).toBe(409);
    expect(shrink.json.error).toBe('CannotRemoveLastAdministrator');
    expect((await getRole(adminsRole)).version).toBe(admins.version);
    // root back in wheel
    const restored = await putUser(admin2.token, await getUser(rootUser.id), { role_id: wheel.id });
    expect(restored.status).toBe(200);
    rootUser = restored.json;
    expect((await putUser(root, await getUser(admin2.id), { role_id: lesserRole })).status).toBe(200);
  });

  it('keeps one administrator when two demote each other at the same time', async () => {
    const lesserRole = await h.createRole('not-quite-admin-2', ALL_API.filter((p) => p !== 'view_cinder'), ALL_PLAYBOOK);
    const other = await h.userWith('admin3', ALL_API, ALL_PLAYBOOK);
    const a3 = await getUser(other.id);
    const r = await getUser(rootUser.id);
    const [byRoot, byOther] = await Promise.all([putUser(root, a3, { role_id: lesserRole }), putUser(other.token, r, { role_id: lesserRole })]);
    expect([byRoot.status, byOther.status].sort()).not.toEqual([200, 200]);
    const users = (await h.request('GET', '/v1/user/?per_page=100', { token: root })).json.items as any[];
    const fullRoles = new Set<string>();
    for (const role of (await h.request('GET', '/v1/role/?per_page=100', { token: root })).json.items as any[]) {
      const api = role.data.permissions.find((g: any) => g.name === 'api').permissions;
      const playbook = role.data.permissions.find((g: any) => g.name === 'playbook').permissions;
      if (ALL_API.every((p) => api.includes(p)) && ALL_PLAYBOOK.every((p) => playbook.includes(p))) fullRoles.add(role.id);
    }
    expect(users.filter((u) => fullRoles.has(u.data.role_id)).length).toBeGreaterThanOrEqual(1);
  });

  it("tells the old address when a user's e-mail changes, with the new one masked", async () => {
    const created = await h.request('POST', '/v1/user/', { token: root, body: { login: 'olga', email: 'olga@old.example.com', full_name: 'Olga' } });
    expect(created.status).toBe(200);
    const changed = await putUser(root, created.json, { email: 'olga.new@new.example.org' });
    expect(changed.status).toBe(200);
    const notice = await h.mail.waitFor('olga@old.example.com', 'e-mail address was changed');
    expect(notice.text).toContain('o***@new.example.org');
    expect(notice.text).not.toContain('olga.new@');
    expect(notice.text).toContain('the user root');
    expect(notice.text).toMatch(/on \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
    // the same for one's own change; nothing for a change that keeps the address
    const self = await h.userWith('pete', ['view_user', 'edit_user']);
    const pete = await getUser(self.id);
    expect((await putUser(self.token, pete, { full_name: 'Pete P' })).status).toBe(200);
    const moved = await putUser(self.token, await getUser(self.id), { email: 'pete@elsewhere.example' });
    expect(moved.status).toBe(200);
    const own = await h.mail.waitFor('pete@example.com', 'e-mail address was changed');
    expect(own.text).toContain('you (your own account)');
    expect(h.mail.mails.filter((m) => m.to.includes('pete@example.com') && m.subject.includes('changed'))).toHaveLength(1);
  });

  it('sends no notice when the change is refused', async () => {
    const taken = await h.request('POST', '/v1/user/', { token: root, body: { login: 'quinn', email: 'quinn@example.com' } });
    const other = await h.request('POST', '/v1/user/', { token: root, body: { login: 'rita', email: 'rita@example.com' } });
    const clash = await putUser(root, other.json, { email: 'quinn@example.com' });
    expect(clash.status).toBe(409);
    expect(taken.status).toBe(200);
    // a later notice to rita proves the outbox ran past the refused one
    expect((await putUser(root, other.json, { email: 'rita2@example.com' })).status).toBe(200);
    await h.mail.waitFor('rita@example.com', 'e-mail address was changed');
    expect(h.mail.mails.filter((m) => m.to.includes('rita@example.com') && m.subject.includes('changed'))).toHaveLength(1);
  });
});

describe('the bootstrap role at start', () => {
  it('gets back every permission it lacks (permissions added by a new release)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'carapace-bootstrap-'));
    try {
      const config = loadConfig({ env: { CARAPACE_DATA_DIR: dir, CARAPACE_ADMIN_PASSWORD: ROOT_PASSWORD, CARAPACE_LOG_LEVEL: 'silent' } });
      const logger = createLogger('silent');
      const file = join(dir, 'carapace.db');
      const first = await createContainer(config, await openDatabase(file), logger);
      // the wheel role of an older release: without one playbook and one api permission
      const wheelId = (await first.services.users.byLogin('root'))?.data.role_id ?? '';
      const db = await openDatabase(file);
      const older = JSON.stringify([{ name: 'api', permissions: ALL_API.filter((p) => p !== 'view_cinder') }, { name: 'playbook', permissions: ALL_PLAYBOOK.slice(1) }]);
      await db.run(sql`UPDATE roles SET data = json_set(data, '$.permissions', json(${older})) WHERE id = ${wheelId} AND is_latest = 1`);
      await db.close();
      await first.close();

      const second = await createContainer(config, await openDatabase(file), logger);
      try {
        expect(second.bootstrap.bootstrapRoleUpdated).toBe(true);
        const role = await second.services.roles.find(wheelId);
        expect(role?.data.permissions).toEqual([
          { name: 'api', permissions: [...ALL_API].sort() },
          { name: 'playbook', permissions: [...ALL_PLAYBOOK].sort() },
        ]);
        expect(role?.initiator_id).toBeNull();
      } finally {
        await second.close();
      }
      // a start with nothing to add writes nothing
      const third = await createContainer(config, await openDatabase(file), logger);
      try {
        expect(third.bootstrap.bootstrapRoleUpdated).toBe(false);
        expect((await third.services.roles.find(wheelId))?.version).toBe(2);
      } finally {
        await third.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
