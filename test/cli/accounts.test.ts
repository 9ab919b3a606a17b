import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { buildCli, parsed, runCli } from '@carapace/test-support/cli';

/** The CLI as a subprocess: info, user, role, permission and password-reset. */
describe('carapace: info, users, roles, permissions, password reset', () => {
  let cp: TestControlPlane;
  let env: Record<string, string>;
  let dir: string;
  const ids = { role: '', user: '' };
  const carapace = (args: string[], extra: { env?: Record<string, string>; input?: string } = {}) => runCli(args, { env: { ...env, ...extra.env }, input: extra.input });

  beforeAll(async () => {
    [cp] = await Promise.all([TestControlPlane.start(), buildCli()]);
    env = { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: ROOT_PASSWORD };
    dir = mkdtempSync(join(tmpdir(), 'carapace-cli-'));
  }, 300_000);
  afterAll(async () => {
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('info: JSON by default, a table with --output table, and no login needed', async () => {
    const [json, table] = await Promise.all([
      runCli(['info'], { env: { CARAPACE_URL: cp.url } }),
      runCli(['--url', cp.url, 'info', '--output', 'table']),
    ]);
    expect(json.code, json.stderr).toBe(0);
    expect(parsed(json).version).toMatch(/^\d+\.\d+\.\d+/);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^version\s+\d+\.\d+\.\d+$/m);
    expect(table.stdout).toMatch(/^time\.unix\s+\d+$/m);
  });

  it('role create, get-all, get, update, add-permission, remove-permission, get-version-all, get-version, self', async () => {
    const created = await carapace(['role', 'create', 'auditors', '--api-permissions', 'view_user,view_role', '--playbook-permissions', 'hello_world']);
    expect(created.code, created.stderr).toBe(0);
    const role = parsed(created);
    ids.role = role.id;
    expect(role.data.permissions).toEqual([
      { name: 'api', permissions: ['view_role', 'view_user'] },
      { name: 'playbook', permissions: ['hello_world'] },
    ]);

    const [list, table, one, self] = await Promise.all([
      carapace(['role', 'get-all']),
      carapace(['role', 'get-all', '-o', 'table', '--sort-by', '-name'], { env: { COLUMNS: '160' } }),
      carapace(['role', 'get', role.id]),
      carapace(['role', 'self']),
    ]);
    expect(parsed(list).map((r: { data: { name: string } }) => r.data.name)).toEqual(['auditors', 'wheel']);
    expect(table.stdout.split('\n')[0]).toMatch(/^id\s+version\s+name\s+api\s+playbook$/);
    // A row per role, its permission names wrapped on the lines that follow it.
    expect(table.stdout.split('\n').filter((l) => /^[0-9a-f]{8}-/.test(l)).map((l) => l.split(/\s+/)[2])).toEqual(['wheel', 'auditors']);
    expect(parsed(one).id).toBe(role.id);
    expect(parsed(self).data.name).toBe('wheel');

    const added = await carapace(['role', 'add-permission', role.id, 'api', 'view_cluster', 'view_server']);
    expect(parsed(added).data.permissions).toContainEqual({ name: 'api', permissions: ['view_cluster', 'view_role', 'view_server', 'view_user'] });
    const removed = await carapace(['role', 'remove-permission', role.id, 'api', 'view_role']);
    expect(parsed(removed).data.permissions).toContainEqual({ name: 'api', permissions: ['view_cluster', 'view_server', 'view_user'] });
    const cleared = await carapace(['role', 'remove-permission', role.id, 'playbook']);
    expect(parsed(cleared).data.permissions).toContainEqual({ name: 'playbook', permissions: [] });
    const renamed = await carapace(['role', 'update', role.id, '--name', 'auditors-2', '--playbook-permissions', 'hello_world']);
    expect(parsed(renamed)).toMatchObject({ version: 5, data: { name: 'auditors-2' } });
    expect(parsed(renamed).data.permissions).toContainEqual({ name: 'playbook', permissions: ['hello_world'] });

    const [versions, first] = await Promise.all([carapace(['role', 'get-version-all', role.id]), carapace(['role', 'get-version', role.id, '1'])]);
    expect(parsed(versions).map((v: { version: number }) => v.version)).toEqual([5, 4, 3, 2, 1]);
    expect(parsed(first).data.name).toBe('auditors');
    const badType = await carapace(['role', 'add-permission', role.id, 'shell', 'x']);
    expect(badType.code).toBe(2);
    expect(badType.stderr).toContain("Allowed choices are api, playbook");
  });

  it('user create (password by e-mail), get-all, get, update by fields, --model, --model-stdin and --model-editor, versions, self', async () => {
    const created = await carapace(['user', 'create', 'dave', 'dave@example.com', 'Dave Bowman', ids.role]);
    expect(created.code, created.stderr).toBe(0);
    const user = parsed(created);
    ids.user = user.id;
    expect(user.data).toEqual({ login: 'dave', email: 'dave@example.com', full_name: 'Dave Bowman', role_id: ids.role });
    const password = await cp.mail.passwordOf('dave@example.com');
    const self = await runCli(['user', 'self'], { env: { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'dave', CARAPACE_PASSWORD: password } });
    expect(parsed(self).id).toBe(user.id);

    const fields = await carapace(['user', 'update', user.id, '--full-name', 'David Bowman', '--email', 'david@example.com']);
    expect(parsed(fields)).toMatchObject({ version: 2, data: { full_name: 'David Bowman', email: 'david@example.com', login: 'dave' } });

    const v2 = parsed(fields);
    const byModel = await carapace(['user', 'update', user.id, '--model', JSON.stringify({ ...v2, data: { ...v2.data, full_name: 'HAL friend' } })]);
    expect(parsed(byModel)).toMatchObject({ version: 3, data: { full_name: 'HAL friend' } });
    const v3 = parsed(byModel);
    const byStdin = await carapace(['user', 'update', user.id, '--model-stdin'], { input: JSON.stringify({ ...v3, data: { ...v3.data, full_name: 'From stdin' } }) });
    expect(parsed(byStdin)).toMatchObject({ version: 4, data: { full_name: 'From stdin' } });

    const editor = join(dir, 'edit.sh');
    writeFileSync(editor, '#!/bin/sh\nsed -i "s/From stdin/Edited in the editor/" "$1"\n');
    chmodSync(editor, 0o755);
    const edited = await carapace(['user', 'update', user.id, '--model-editor'], { env: { EDITOR: editor } });
    expect(edited.code, edited.stderr).toBe(0);
    expect(parsed(edited)).toMatchObject({ version: 5, data: { full_name: 'Edited in the editor' } });
    const untouched = await carapace(['user', 'update', user.id, '--model-editor'], { env: { EDITOR: 'true' } });
    expect(untouched).toMatchObject({ code: 0, stdout: '' });
    expect(untouched.stderr).toContain('nothing updated');

    const stale = await carapace(['user', 'update', user.id, '--model', JSON.stringify(v3)]);
    expect(stale.code).toBe(1);
    expect(JSON.parse(stale.stderr)).toMatchObject({ code: 409, error: 'CannotUpdateManagedFieldsError' });
    const nothing = await carapace(['user', 'update', user.id]);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('nothing to update');

    const [list, one, versions, version] = await Promise.all([
      carapace(['user', 'get-all', '--per-page', '1', '--page', '2']),
      carapace(['user', 'get', user.id]),
      carapace(['user', 'get-version-all', user.id, '--per-page', '2']),
      carapace(['user', 'get-version', user.id, '2']),
    ]);
    expect(parsed(list)).toMatchObject({ page: 2, per_page: 1, total: 2 });
    expect(parsed(list).items).toHaveLength(1);
    expect(parsed(one).version).toBe(5);
    expect(parsed(versions)).toMatchObject({ total: 5, items: [{ version: 5 }, { version: 4 }] });
    expect(parsed(version).data.full_name).toBe('David Bowman');
  });

  it('password-reset reset, peek and new (the new password from stdin); then the new password logs in', async () => {
    const anonymous = { CARAPACE_URL: cp.url };
    const reset = await runCli(['password-reset', 'reset', 'dave'], { env: anonymous });
    expect(parsed(reset)).toEqual({ message: 'Password reset was requested.' });
    const token = await cp.mail.resetTokenOf('david@example.com');
    const peek = await runCli(['password-reset', 'peek', token], { env: anonymous });
    expect(parsed(peek)).toEqual({ message: 'Password reset was requested.' });
    const set = await runCli(['password-reset', 'new', token], { env: anonymous, input: 'dave-new-password-123\n' });
    expect(parsed(set)).toEqual({ message: 'Password has been reset.' });
    const used = await runCli(['password-reset', 'peek', token], { env: anonymous });
    expect(used.code).toBe(1);
    expect(JSON.parse(used.stderr)).toMatchObject({ code: 404, error: 'NotFound' });
    const login = await runCli(['user', 'self'], { env: { ...anonymous, CARAPACE_LOGIN: 'dave', CARAPACE_PASSWORD: 'dave-new-password-123' } });
    expect(parsed(login).data.login).toBe('dave');
  });

  it('permission get-all; user and role delete; deleted users listed with --list archived', async () => {
    const permissions = await carapace(['permission', 'get-all']);
    // A list, as every other get-all prints (not the API's {items} envelope).
    expect(parsed(permissions).map((g: { name: string }) => g.name)).toEqual(['api', 'playbook']);
    expect(parsed(permissions).find((g: { name: string }) => g.name === 'playbook').permissions).toContain('cluster_deploy');
    const busy = await carapace(['role', 'delete', ids.role]);
    expect(busy.code).toBe(1);
    expect(JSON.parse(busy.stderr)).toMatchObject({ code: 409, error: 'CannotDeleteRoleWithActiveUsers' });
    const user = await carapace(['user', 'delete', ids.user]);
    expect(parsed(user).time_deleted).toBeGreaterThan(0);
    const role = await carapace(['role', 'delete', ids.role]);
    expect(parsed(role).time_deleted).toBeGreaterThan(0);
    const [active, archived, all] = await Promise.all([
      carapace(['user', 'get-all']),
      carapace(['user', 'get-all', '--list', 'archived', '-o', 'table'], { env: { COLUMNS: '200' } }),
      carapace(['user', 'get-all', '--list', 'all']),
    ]);
    expect(parsed(active).map((u: { data: { login: string } }) => u.data.login)).toEqual(['root']);
    expect(archived.stdout).toMatch(/dave\s.*\sdeleted|deleted/);
    expect(archived.stdout).toContain('dave');
    expect(archived.stdout.split('\n')[0]).toContain('deleted');
    expect(parsed(all)).toHaveLength(2);
  });
});
