import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { BECOME_TIMEOUT_S, CONNECT_TIMEOUT_S, prepareWorkDir, removeWorkDir } from '../src/executor/work-dir.js';

const input = (workRoot: string) => ({
  workRoot,
  executionId: '735054c1-720b-4153-9270-cc487d9be27e',
  globalVars: { port_number: 8085 },
  inventory: { all: { hosts: ['10.0.0.1'] }, _meta: { hostvars: { '10.0.0.1': { ansible_user: 'ansible' } } } },
  knownHostsFile: undefined,
  callbackPluginDir: '/opt/carapace/callback_plugins',
  shared: { roles: '/opt/carapace/roles', library: '/opt/carapace/library', moduleUtils: '/opt/carapace/module_utils' },
  maxForks: 20,
});

describe('the work dir of an execution', () => {
  const root = mkdtempSync(join(tmpdir(), 'carapace-workdir-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('keeps the SSH control sockets inside it when the path is short enough', async () => {
    const wd = await prepareWorkDir(input(join(root, 'w')));
    expect(wd.controlDir).toBe(join(wd.dir, 'cp'));
    expect(statSync(wd.dir).mode & 0o777).toBe(0o700);
    expect(readFileSync(wd.ansibleCfg, 'utf8')).toContain(`control_path_dir = ${wd.controlDir}`);
    await removeWorkDir(wd);
    expect(existsSync(wd.dir)).toBe(false);
  });

  it('puts them in a private dir under /tmp when a socket path there would be too long, and removes it after', async () => {
    const deep = join(root, 'a-rather-long-runner-work-directory', 'with', 'executions', 'inside');
    const wd = await prepareWorkDir(input(deep));
    // <control_path_dir>/<10 hex>.<16 random> must fit a Unix socket path (107 bytes)
    expect(Buffer.byteLength(join(wd.controlDir, '0123456789.0123456789abcdef'))).toBeLessThan(108);
    expect(wd.controlDir.startsWith('/tmp/carapace-cp-')).toBe(true);
    expect(statSync(wd.controlDir).mode & 0o777).toBe(0o700);
    expect(readFileSync(wd.ansibleCfg, 'utf8')).toContain(`control_path_dir = ${wd.controlDir}`);
    await removeWorkDir(wd);
    expect(existsSync(wd.dir)).toBe(false);
    expect(existsSync(wd.controlDir)).toBe(false);
  });

  it('gives a reached host 30 s for sudo, and an unreachable one 10 s to connect (as Ansible reads the file)', async () => {
    const wd = await prepareWorkDir(input(join(root, 'timeouts')));
    const env = { ...process.env, ANSIBLE_CONFIG: wd.ansibleCfg };
    const dump = execFileSync('ansible-config', ['dump', '--only-changed', '--format', 'json'], { env, encoding: 'utf8' });
    const settings = Object.fromEntries((JSON.parse(dump) as { name: string; value: unknown }[]).map((s) => [s.name, s.value]));
    expect(settings.DEFAULT_TIMEOUT).toBe(BECOME_TIMEOUT_S);
    // the ssh plugin puts ssh_args before its own -o ConnectTimeout=<timeout>; ssh keeps the first
    const plugin = execFileSync('ansible-config', ['dump', '--only-changed', '--format', 'json', '-t', 'connection'], { env, encoding: 'utf8' });
    const sshArgs = JSON.stringify(JSON.parse(plugin)).match(/-o ConnectTimeout=(\d+)/);
    expect(Number(sshArgs?.[1])).toBe(CONNECT_TIMEOUT_S);
    // and the command Ansible runs (to a closed port of loopback: refused at once) has it first
    const ping = spawnSync('ansible', ['all', '-i', '127.0.0.1,', '-m', 'ping', '-vvv', '-e', 'ansible_port=1'], { env, encoding: 'utf8', timeout: 60_000 });
    const exec = `${ping.stdout}${ping.stderr}`.split('\n').find((l) => l.includes('SSH: EXEC ssh')) ?? '';
    expect(exec.indexOf(`ConnectTimeout=${CONNECT_TIMEOUT_S}`), exec).toBeGreaterThan(0);
    expect(exec.indexOf(`ConnectTimeout=${CONNECT_TIMEOUT_S}`)).toBeLessThan(exec.indexOf(`ConnectTimeout=${BECOME_TIMEOUT_S}`));
    await removeWorkDir(wd);
  });
});
