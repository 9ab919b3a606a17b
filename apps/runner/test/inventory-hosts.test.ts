// A host that ssh would read as an option never reaches ssh: the inventory check of the
// executor (ansible-playbook puts the host last on ssh's command line, without "--") and the
// address check of the runner's own SSH sessions.
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnsibleRun } from '../src/executor/index.js';
import { inventoryHostProblem } from '../src/executor/inventory-hosts.js';
import { prepareWorkDir } from '../src/executor/work-dir.js';
import { preflight } from '../src/ssh/index.js';
import { localSpec, RecordingSink, tempDir } from './fixtures/executor/executor-helpers.js';

const HOSTILE = '-oProxyCommand=touch /tmp/carapace-never';

const inventory = (hostvars: Record<string, Record<string, unknown>>, groups: Record<string, unknown> = { all: { hosts: Object.keys(hostvars) } }) => ({
  ...groups,
  _meta: { hostvars },
});

describe('inventoryHostProblem', () => {
  it('accepts inventories of IP addresses and DNS names', () => {
    expect(inventoryHostProblem(inventory({ '10.0.0.1': { ansible_host: '10.0.0.1', ansible_user: 'ansible' } }), { port: 1 })).toBeNull();
    expect(inventoryHostProblem(inventory({ 'node1.example.com': {}, '2001:db8::1': { ansible_host: '2001:db8::1' } }), {})).toBeNull();
    expect(inventoryHostProblem({ mons: ['10.0.0.1'], osds: { hosts: { '10.0.0.2': { ansible_host: 'osd2' } }, vars: { x: 1 } } }, {})).toBeNull();
  });

  it('refuses a host that is not one wherever Ansible would take it from', () => {
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [inventory({ '10.0.0.1': { ansible_host: HOSTILE } }), {}, 'ansible_host of host "10.0.0.1"'],
      [inventory({ '10.0.0.1': { ansible_ssh_host: '-Jx' } }), {}, 'ansible_ssh_host of host "10.0.0.1"'],
      [inventory({ '-Jx': {} }), {}, '_meta.hostvars: "-Jx"'],
      [{ mons: ['10.0.0.1', '-Jx'] }, {}, 'group "mons": "-Jx"'],
      [{ mons: { hosts: ['a..b'] } }, {}, 'group "mons": "a..b"'],
      [{ mons: { hosts: { '10.0.0.1': { ansible_host: '999.999.999.999' } } } }, {}, 'ansible_host of host "10.0.0.1"'],
      [{ mons: { hosts: ['10.0.0.1'], vars: { ansible_host: HOSTILE } } }, {}, 'ansible_host of group "mons"'],
      [inventory({ '10.0.0.1': {} }), { ansible_host: HOSTILE }, 'ansible_host of global_vars'],
      [inventory({ '10.0.0.1': { ansible_host: '{{ lookup("pipe", "id") }}' } }), {}, 'ansible_host of host "10.0.0.1"'],
      [inventory({ '10.0.0.1': { ansible_host: ['10.0.0.1'] } }), {}, 'ansible_host of host "10.0.0.1" is not a string'],
      [{ mons: [7] }, {}, 'group "mons" lists a host that is not a string'],
    ];
    for (const [inv, vars, where] of cases) {
      const problem = inventoryHostProblem(inv, vars);
      expect(problem, JSON.stringify(inv)).toContain(where);
    }
    expect(inventoryHostProblem(inventory({ '10.0.0.1': { ansible_host: HOSTILE } }), {})).toContain('it starts with "-"');
  });
});

describe('the executor and the SSH sessions refuse hosts that are not hosts', () => {
  let workRoot = '';
  let remove: () => Promise<void> = async () => undefined;
  beforeAll(async () => {
    ({ dir: workRoot, remove } = await tempDir('carapace-hosts-'));
  });
  afterAll(() => remove());

  it('prepareWorkDir throws before creating anything', async () => {
    const input = {
      workRoot: join(workRoot, 'prepare'),
      executionId: 'refused-1',
      globalVars: {},
      inventory: inventory({ '10.0.0.1': { ansible_host: HOSTILE } }),
      knownHostsFile: undefined,
      callbackPluginDir: '/opt/carapace/callback_plugins',
      shared: { roles: '/opt/carapace/roles', library: '/opt/carapace/library', moduleUtils: '/opt/carapace/module_utils' },
      maxForks: 20,
    };
    await expect(prepareWorkDir(input)).rejects.toThrow(/refused to run: ansible_host of host "10\.0\.0\.1": "-oProxyCommand=touch \/tmp\/carapace-never" is not/);
    expect(existsSync(join(workRoot, 'prepare', 'refused-1'))).toBe(false);
  });

  // An `ssh` first on the PATH that records its arguments: what Ansible would hand the real one.
  async function recordingSsh(): Promise<{ env: Record<string, string>; calls: () => Promise<string[][]> }> {
    const bin = join(workRoot, 'bin');
    const log = join(workRoot, 'ssh-calls');
    await mkdir(bin, { recursive: true });
    await writeFile(join(bin, 'ssh'), `#!/bin/sh\n{ for a in "$@"; do printf '%s\\037' "$a"; done; echo; } >> '${log}'\nexit 255\n`, { mode: 0o755 });
    const calls = async () => (existsSync(log) ? (await readFile(log, 'utf8')).split('\n').filter(Boolean).map((line) => line.split('\u001f').slice(0, -1)) : []);
    return { env: { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` }, calls };
  }

  it('a real run hands a valid ansible_host to ssh, and refuses "-oProxyCommand=..." before ansible-playbook starts', async () => {
    const ssh = await recordingSsh();
    const spec = (host: string) =>
      localSpec(workRoot, {
        // the real hello_world playbook connects to its hosts over ssh
        configuration: { global_vars: {}, inventory: inventory({ '10.255.255.1': { ansible_host: host, ansible_user: 'ansible' } }) },
        extraEnv: ssh.env,
      });

    const valid = await startAnsibleRun(spec('10.255.255.2'), new RecordingSink()).result;
    expect(valid.outcome).toBe('failed');
    const seen = await ssh.calls();
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.some((argv) => argv.includes('10.255.255.2'))).toBe(true);

    const run = startAnsibleRun(spec(HOSTILE), new RecordingSink());
    const result = await run.result;
    expect(result.outcome).toBe('failed');
    expect(result.reason).toMatch(/^cannot prepare the run: refused to run: ansible_host of host "10\.255\.255\.1": .* is not an IP address or a DNS name \(it starts with "-"\)$/);
    expect(run.pid).toBeUndefined();
    const after = await ssh.calls();
    expect(after.length).toBe(seen.length);
    expect(after.flat().some((arg) => arg.startsWith('-oProxyCommand'))).toBe(false);
  });

  it('the pre-flight refuses such an address without connecting', async () => {
    const [result] = await preflight([{ address: '-oProxyCommand=touch /tmp/x', username: 'root', expectedHostKey: null }], {
      privateKey: 'unused',
      timeoutMs: 5_000,
    });
    expect(result).toMatchObject({ ok: false, kind: 'unreachable' });
    expect(result?.reason).toContain('not an IP address or a DNS name (it starts with "-")');
  });
});
