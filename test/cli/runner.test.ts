import { Client } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { buildCli, parsed, runCli } from '@carapace/test-support/cli';

/** The CLI as a subprocess: runners and their tokens (a Carapace extension). */
describe('carapace runner: get-all, create, delete', () => {
  let cp: TestControlPlane;
  let env: Record<string, string>;
  let token = '';
  const carapace = (...args: string[]) => runCli(args, { env });

  beforeAll(async () => {
    [cp] = await Promise.all([TestControlPlane.start(), buildCli()]);
    env = { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: ROOT_PASSWORD };
  }, 300_000);
  afterAll(() => cp.stop());

  it('--help on the group and its commands', async () => {
    const [group, create, del] = await Promise.all([runCli(['runner', '--help']), runCli(['runner', 'create', '--help']), runCli(['runner', 'delete', '--help'])]);
    for (const run of [group, create, del]) expect(run.code, run.stderr).toBe(0);
    expect(group.stdout).toMatch(/get-all[\s\S]*create[\s\S]*delete/);
    expect(create.stdout).toMatch(/--name <name>[\s\S]*--label <key=value>/);
    expect(del.stdout).toContain('<name>');
  });

  it('create prints the runner with its token, crt.<base64url name>.<secret>', async () => {
    expect(parsed(await carapace('runner', 'get-all'))).toEqual([]);
    const created = await carapace('runner', 'create', '--name', 'rack-1', '--label', 'site=lab', '--label', 'role=ceph=yes');
    expect(created.code, created.stderr).toBe(0);
    const runner = parsed(created);
    expect(runner).toEqual({ name: 'rack-1', labels: { site: 'lab', role: 'ceph=yes' }, token: expect.any(String) });
    expect(runner.token).toMatch(new RegExp(`^crt\\.${Buffer.from('rack-1').toString('base64url')}\\.[\\w-]{20,}$`));
    expect(created.stderr).toContain('shown only this once');
    token = runner.token;
    expect(await cp.services.runners.authenticate(token)).toBe('rack-1');

    const bare = await carapace('runner', 'create', '--name', 'bare', '-o', 'table');
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.stdout).toMatch(/^name\s+bare$/m);
    expect(bare.stdout).toMatch(/^token\s+crt\.\S+$/m);
  });

  it('get-all lists them: never connected means disconnected; -o table one line each', async () => {
    const [list, table] = await Promise.all([carapace('runner', 'get-all'), runCli(['runner', 'get-all', '-o', 'table'], { env: { ...env, COLUMNS: '160' } })]);
    expect(list.code, list.stderr).toBe(0);
    const runners = parsed(list);
    expect(runners.map((r: { name: string }) => r.name)).toEqual(['bare', 'rack-1']);
    expect(runners[1]).toMatchObject({
      name: 'rack-1',
      state: 'disconnected',
      labels: { site: 'lab', role: 'ceph=yes' },
      slots: 0,
      free_slots: 0,
      last_heartbeat: null,
      ssh_public_key: null,
      executions: [],
    });
    expect(list.stdout).not.toContain(token);
    expect(table.stdout.split('\n')[0]).toMatch(/^name\s+state\s+labels\s+version\s+slots\s+free_slots\s+executions\s+last_heartbeat\s+peer$/);
    expect(table.stdout).toMatch(/^rack-1\s+disconnected\s+site=lab,role=ceph=yes\s+0\s+0\s+0$/m);
  });

  it('a taken name, a bad label or a missing --name: the API error on stderr (exit 1), or a usage error (exit 2)', async () => {
    const [taken, badLabel, noName, badName] = await Promise.all([
      carapace('runner', 'create', '--name', 'rack-1'),
      carapace('runner', 'create', '--name', 'rack-2', '--label', 'novalue'),
      carapace('runner', 'create'),
      carapace('runner', 'create', '--name', 'Rack 2'),
    ]);
    expect(taken.code).toBe(1);
    expect(taken.stdout).toBe('');
    expect(JSON.parse(taken.stderr)).toMatchObject({ code: 409, error: 'RunnerExists' });
    expect(await cp.services.runners.authenticate(token)).toBe('rack-1');
    expect(badLabel.code).toBe(2);
    expect(badLabel.stderr).toContain('key=value is expected');
    expect(noName.code).toBe(2);
    expect(noName.stderr).toContain('--name');
    // The rule, said before anything is sent (the API would answer its schema error, InvalidJSONError).
    expect(badName.code).toBe(2);
    expect(badName.stderr).toContain('a runner name is 1 to 63 lower-case letters, digits');
    expect((await cp.services.runners.list()).map((r) => r.name)).not.toContain('Rack 2');
  });

  it('delete revokes the token and removes the runner; an unknown name is 404', async () => {
    const deleted = await carapace('runner', 'delete', 'rack-1');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe('');
    expect(deleted.stderr).toContain('rack-1');
    expect(await cp.services.runners.authenticate(token)).toBeNull();
    expect(parsed(await carapace('runner', 'get-all')).map((r: { name: string }) => r.name)).toEqual(['bare']);
    const again = await carapace('runner', 'delete', 'rack-1');
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr)).toMatchObject({ code: 404, error: 'NotFound' });
  });

  it('a missing permission: 403 on stderr, exit 1', async () => {
    const root = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD });
    const role = await root.createRole('no-runners', { api: ['view_cluster'] });
    await root.createUser('nobody', 'nobody@example.com', 'Nobody', role.id);
    const password = await cp.mail.passwordOf('nobody@example.com');
    await root.close();
    const as = { env: { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'nobody', CARAPACE_PASSWORD: password } };
    const [list, create, remove] = await Promise.all([
      runCli(['runner', 'get-all'], as),
      runCli(['runner', 'create', '--name', 'sneaky'], as),
      runCli(['runner', 'delete', 'bare'], as),
    ]);
    for (const [run, permission] of [
      [list, 'view_runner'],
      [create, 'create_runner'],
      [remove, 'delete_runner'],
    ] as const) {
      expect(run.code, run.stderr).toBe(1);
      const error = JSON.parse(run.stderr);
      expect(error).toMatchObject({ code: 403, error: 'Forbidden' });
      expect(error.description).toContain(permission);
    }
    expect((await cp.services.runners.list()).map((r) => r.name)).toEqual(['bare']);
  });
});
