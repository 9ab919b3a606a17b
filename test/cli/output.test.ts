import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProgram } from '@carapace/cli';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { buildCli, parsed, runCli } from '@carapace/test-support/cli';

const GROUPS = ['cloud-config', 'cluster', 'completion', 'execution', 'info', 'login', 'logout', 'password-reset', 'permission', 'playbook', 'playbook-configuration', 'role', 'runner', 'server', 'user'];

/** Every command of the program, with its words from the top. */
function commands(command: Command, path: string[] = []): { path: string[]; command: Command }[] {
  return [{ path, command }, ...command.commands.flatMap((c) => commands(c, [...path, c.name()]))];
}

const widest = (text: string) => Math.max(...text.split('\n').map((l) => l.length));

/** Whether `shell` is installed (the tests do not install zsh or fish; bash always is). */
const has = (shell: string) => spawnSync(shell, ['--version']).status === 0;

/** The CLI as a subprocess: completion scripts, tables that fit, lists, help texts. */
describe('carapace: completion, table widths, lists and help texts', () => {
  let cp: TestControlPlane;
  let env: Record<string, string>;
  let dir: string;
  const carapace = (args: string[], extra: Record<string, string> = {}) => runCli(args, { env: { ...env, ...extra } });

  beforeAll(async () => {
    [cp] = await Promise.all([TestControlPlane.start(), buildCli()]);
    env = { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: ROOT_PASSWORD };
    dir = mkdtempSync(join(tmpdir(), 'carapace-cli-output-'));
  }, 300_000);
  afterAll(async () => {
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('completion bash|zsh|fish: made from the command tree, groups, commands and options; bash accepts it and completes with it', async () => {
    const [bash, zsh, fish, bad] = await Promise.all([runCli(['completion', 'bash']), runCli(['completion', 'zsh']), runCli(['completion', 'fish']), runCli(['completion', 'tcsh'])]);
    for (const run of [bash, zsh, fish]) {
      expect(run.code, run.stderr).toBe(0);
      for (const group of GROUPS) expect(run.stdout).toContain(`'${group}'`);
      for (const word of ['get-version-all', 'add-permission', 'cinder-integration', 'remove-permission']) expect(run.stdout).toContain(word);
    }
    for (const option of ['--per-page', '--model-editor', '--password-stdin', '--profile', '--output', '--compact']) {
      expect(bash.stdout).toMatch(new RegExp(`[' ]${option}[' ]`));
      expect(zsh.stdout).toContain(`'${option}:`);
      expect(fish.stdout).toContain(` -l ${option.slice(2)} `);
    }
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Allowed choices are bash, zsh, fish');

    const files = { bash: join(dir, 'carapace.bash'), zsh: join(dir, '_carapace'), fish: join(dir, 'carapace.fish') };
    writeFileSync(files.bash, bash.stdout);
    writeFileSync(files.zsh, zsh.stdout);
    writeFileSync(files.fish, fish.stdout);
    execFileSync('bash', ['-n', files.bash]);
    // zsh and fish are checked where they are installed (the tests do not install them).
    if (has('zsh')) execFileSync('zsh', ['-n', files.zsh]);
    if (has('fish')) execFileSync('fish', ['--no-execute', files.fish]);

    // What bash offers at the cursor: `complete` calls _carapace with these variables.
    const complete = (words: string[]) =>
      execFileSync('bash', ['-c', `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _carapace; printf '%s\\n' "\${COMPREPLY[@]}"`, 'complete', files.bash, ...words], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean);
    expect(complete(['carapace', 'pl'])).toEqual(['playbook', 'playbook-configuration']);
    expect(complete(['carapace', '--url', 'http://cp', 'role', 'add'])).toEqual(['add-permission']);
    expect(complete(['carapace', 'execution', ''])).toEqual(expect.arrayContaining(['get-all', 'create', 'cancel', 'steps', 'log', '--output', '--help']));
    expect(complete(['carapace', 'server', 'get-all', '--c'])).toEqual(['--compact']);
    expect(complete(['carapace', 'user', 'get-all', '--list', ''])).toEqual(['active', 'archived', 'all']);
    expect(complete(['carapace', '-o', 't'])).toEqual(['table']);
    expect(complete(['carapace', 'completion', ''])).toEqual(expect.arrayContaining(['bash', 'zsh', 'fish']));
    expect(complete(['carapace', 'lo'])).toEqual(['login', 'logout']);
  }, 60_000);

  it('permission get-all and playbook get-all print a list, as every get-all does', async () => {
    const [permissions, playbooks] = await Promise.all([carapace(['permission', 'get-all']), carapace(['playbook', 'get-all'])]);
    expect(Array.isArray(parsed(permissions))).toBe(true);
    expect(parsed(permissions).map((g: { name: string }) => g.name)).toEqual(['api', 'playbook']);
    expect(Array.isArray(parsed(playbooks))).toBe(true);
    expect(parsed(playbooks).map((p: { id: string }) => p.id)).toContain('hello_world');
  });

  it('-o table: no line wider than the terminal (100 columns off a terminal, else COLUMNS), and nothing lost', async () => {
    const permissions = parsed(await carapace(['permission', 'get-all'])) as { name: string; permissions: string[] }[];
    const api = permissions.find((g) => g.name === 'api')?.permissions ?? [];
    const playbook = permissions.find((g) => g.name === 'playbook')?.permissions ?? [];
    expect(api.join(' ').length).toBeGreaterThan(300);
    const created = await carapace(['role', 'create', 'everything-but-wheel', '--api-permissions', api.join(','), '--playbook-permissions', playbook.join(',')]);
    expect(created.code, created.stderr).toBe(0);
    const roleId = parsed(created).id;

    const [wide, ...runs] = await Promise.all([
      carapace(['role', 'get-all', '-o', 'table'], { COLUMNS: '220' }),
      carapace(['role', 'get-all', '-o', 'table']),
      carapace(['role', 'get', roleId, '-o', 'table']),
      carapace(['permission', 'get-all', '-o', 'table']),
      carapace(['playbook', 'get-all', '-o', 'table']),
      carapace(['role', 'get-all', '-o', 'table'], { COLUMNS: '60' }),
      carapace(['role', 'get', roleId, '-o', 'table'], { COLUMNS: '60' }),
      carapace(['permission', 'get-all', '-o', 'table'], { COLUMNS: '60' }),
      carapace(['playbook', 'get-all', '-o', 'table'], { COLUMNS: '60' }),
    ]);
    runs.forEach((run, i) => {
      expect(run.code, run.stderr).toBe(0);
      expect(widest(run.stdout), run.stdout).toBeLessThanOrEqual(i < 4 ? 100 : 60);
    });
    const [roles, role, permissionTable, playbookTable, narrowRoles] = runs.map((r) => r.stdout);
    // Wrapped, not cut: every permission is still there, whole.
    for (const table of [wide?.stdout, roles, permissionTable, narrowRoles]) for (const name of [...api, ...playbook]) expect(table).toMatch(new RegExp(`(^|\\s)${name}(\\s|$)`, 'm'));
    expect(widest(wide?.stdout ?? '')).toBeLessThanOrEqual(220);
    expect(wide?.stdout.split('\n')[0]).toMatch(/^id\s+version\s+name\s+api\s+playbook$/);
    expect(wide?.stdout).toMatch(new RegExp(`^${roleId}\\s+1\\s+everything-but-wheel\\s+\\w+`, 'm'));
    // At 100 columns the two ids and the permission names cannot stand side by side: a record each.
    expect(roles).toMatch(new RegExp(`^id\\s+${roleId}$`, 'm'));
    expect(roles).toMatch(/^name\s+everything-but-wheel$/m);
    expect(role).toMatch(/^data\.name\s+everything-but-wheel$/m);
    expect(permissionTable?.split('\n')[0]).toMatch(/^name\s+permissions$/);
    expect(playbookTable?.split('\n')[0]).toMatch(/^id\s+name\s+servers\s+hints\s+description$/);
    expect(playbookTable).toMatch(/^hello_world\s/m);
  }, 120_000);

  it('-o table: a list whose ids cannot fit side by side shows one record per item, ids whole', async () => {
    await carapace(['cluster', 'create', 'wide-a']);
    const [wide, narrow] = await Promise.all([carapace(['cluster', 'get-all', '-o', 'table'], { COLUMNS: '200' }), carapace(['cluster', 'get-all', '-o', 'table'], { COLUMNS: '50' })]);
    const id = parsed(await carapace(['cluster', 'get-all']))[0].id as string;
    expect(wide.stdout).toMatch(new RegExp(`^${id}\\s+1\\s+wide-a\\s+0$`, 'm'));
    expect(widest(narrow.stdout)).toBeLessThanOrEqual(50);
    expect(narrow.stdout).toMatch(/^-\[ 1 \]-+$/m);
    expect(narrow.stdout).toMatch(new RegExp(`^id\\s+${id}$`, 'm'));
    expect(narrow.stdout).toMatch(/^name\s+wide-a$/m);
  });

  it('help texts: "an execution", and no other a/an mistake in any command', () => {
    const texts = commands(createProgram({ stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: {} })).map(({ path, command }) => ({
      path: path.join(' '),
      // One line: a wrapped "a\n   execution" is still caught.
      text: command.helpInformation().replace(/\s+/g, ' '),
    }));
    expect(texts.length).toBeGreaterThan(60);
    const executionGet = texts.find((t) => t.path === 'execution get')?.text ?? '';
    expect(executionGet).toContain('Show the latest version of an execution.');
    for (const { path, text } of texts) {
      expect(text, path).not.toMatch(/\ba [aeio]\w/i);
      expect(text, path).not.toMatch(/\ban [^aeiouh\W]\w/i);
    }
  });
});
