// The hello_world Ansible content (libs/playbooks/ansible/hello_world/): what can be
// checked without systemd. The end-to-end run on real hosts belongs to the lab (test/lab/).
import { existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ansibleEnv, run } from './fixtures/ansible.js';

const playbookDir = fileURLToPath(new URL('../ansible/hello_world/', import.meta.url));
const playbook = join(playbookDir, 'playbook.yml');
const role = join(playbookDir, 'roles', 'hello_world');
const serverScript = join(role, 'files', 'hello_world.py');
const fakeSystemctl = fileURLToPath(new URL('./fixtures/fake-systemctl.py', import.meta.url));

const tmps: string[] = [];
const children: ChildProcess[] = [];

const pidFiles: string[] = [];

afterEach(async () => {
  // services started by the stand-in systemctl (detached, so not our children)
  for (const pidFile of pidFiles.splice(0)) {
    const pid = Number(await readFile(pidFile, 'utf8').catch(() => ''));
    if (Number.isInteger(pid) && pid > 0) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'close');
    }
  }
  for (const tmp of tmps.splice(0)) await rm(tmp, { recursive: true, force: true });
});

async function makeTmp(): Promise<string> {
  const tmp = await mkdtemp(join(tmpdir(), 'carapace-hello-world-'));
  tmps.push(tmp);
  await writeFile(join(tmp, 'ansible.cfg'), '');
  return tmp;
}

describe('hello_world playbook', () => {
  it('passes ansible-playbook --syntax-check', async () => {
    const tmp = await makeTmp();
    const result = await run('ansible-playbook', ['--syntax-check', '-i', '10.0.0.11,', playbook], tmp, ansibleEnv(tmp));
    expect(result.stderr).not.toMatch(/ERROR|WARNING/);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('playbook:');
  }, 60_000);

  it('has the tasks (steps) users will see, in order', async () => {
    const tmp = await makeTmp();
    const result = await run('ansible-playbook', ['--list-tasks', '-i', '10.0.0.11,', playbook], tmp, ansibleEnv(tmp));
    expect(result.code).toBe(0);
    const tasks = result.stdout
      .split('\n')
      .map((line) => /^\s+hello_world : (.+?)\tTAGS/.exec(line)?.[1])
      .filter((name): name is string => name !== undefined);
    expect(tasks).toEqual([
      'Check the port number',
      'Create the install directory',
      'Install the hello world server',
      'Install the systemd unit',
      'Enable and start the service',
      'Apply pending restarts',
      'Wait for the port',
      'Check the answer',
      'Verify the body and content type',
    ]);
  }, 60_000);

  async function renderUnit(extraVars: string[]): Promise<string> {
    const tmp = await makeTmp();
    const out = join(tmp, 'carapace-hello-world.service');
    // renders the role's unit template with the role's defaults, as the play would
    const renderPlaybook = join(tmp, 'render.yml');
    await writeFile(
      renderPlaybook,
      [
        '- hosts: localhost',
        '  gather_facts: false',
        '  tasks:',
        `    - ansible.builtin.include_vars: ${JSON.stringify(join(role, 'defaults', 'main.yml'))}`,
        '    - ansible.builtin.template:',
        `        src: ${JSON.stringify(join(role, 'templates', 'carapace-hello-world.service.j2'))}`,
        `        dest: ${JSON.stringify(out)}`,
        '',
      ].join('\n'),
    );
    const args = ['-i', 'localhost,', '-c', 'local', '-e', 'ansible_python_interpreter=/usr/bin/python3', renderPlaybook];
    for (const extra of extraVars) args.push('-e', extra);
    const result = await run('ansible-playbook', args, tmp, ansibleEnv(tmp));
    expect(result.code, result.stdout + result.stderr).toBe(0);
    return readFile(out, 'utf8');
  }

  it('renders a unit that runs the server on port 8085 by default and restarts on failure', async () => {
    const unit = await renderUnit([]);
    expect(unit).toContain('ExecStart=/usr/bin/python3 /usr/local/lib/carapace/hello_world.py --port 8085\n');
    expect(unit).toContain('Restart=on-failure\n');
    expect(unit).toContain('User=nobody\n');
    expect(unit).toContain('WantedBy=multi-user.target\n');
    expect(unit).not.toContain('AmbientCapabilities');
  }, 60_000);

  it('renders the port_number given in global_vars', async () => {
    expect(await renderUnit(['port_number=9099'])).toContain('hello_world.py --port 9099\n');
    expect(await renderUnit(['{"port_number": 80}'])).toContain('AmbientCapabilities=CAP_NET_BIND_SERVICE\n');
  }, 60_000);
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const recap = (stdout: string): { changed: number; failed: number; unreachable: number } => {
  const match = /localhost\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)/.exec(stdout);
  if (!match) throw new Error(`no PLAY RECAP in:\n${stdout}`);
  return { changed: Number(match[1]), unreachable: Number(match[2]), failed: Number(match[3]) };
};

// The whole playbook on this machine, with a stand-in systemctl (there is no systemd
// here) and the install paths moved to a temporary directory. It checks the play's logic:
// install, enable, start, restart on change, wait for the port, check the answer, and
// that a second run changes nothing. Real systemd is exercised by the lab (test/lab/).
// Needs root because the play makes the files owned by root.
describe.skipIf(process.getuid?.() !== 0)('hello_world playbook with a stand-in systemctl', () => {
  it('installs, starts and checks the service, and a second run changes nothing', async () => {
    const tmp = await makeTmp();
    const bin = join(tmp, 'bin');
    const units = join(tmp, 'units');
    const state = join(tmp, 'state');
    const lib = join(tmp, 'lib', 'carapace');
    for (const dir of [bin, units, state]) await mkdir(dir, { recursive: true });
    await copyFile(fakeSystemctl, join(bin, 'systemctl'));
    await chmod(join(bin, 'systemctl'), 0o755);
    pidFiles.push(join(state, 'carapace-hello-world.service.pid'));

    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...ansibleEnv(tmp),
      PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      FAKE_SYSTEMD_UNIT_DIR: units,
      FAKE_SYSTEMD_STATE_DIR: state,
    };
    const extraVars = JSON.stringify({
      port_number: port,
      hello_world_install_dir: lib,
      hello_world_unit_dir: units,
      // sudo would reset PATH and lose the stand-in; the test runs as root anyway
      ansible_become: false,
      ansible_python_interpreter: '/usr/bin/python3',
    });
    const args = ['-i', 'localhost,', '-c', 'local', '-e', extraVars, playbook];

    // a preview first (issue 31): the files it would install, with their diffs; nothing
    // installed, enabled or started; the start and the answer skipped (the unit is not there)
    const preview = await run('ansible-playbook', ['--check', '--diff', ...args], tmp, env);
    expect(preview.code, preview.stdout + preview.stderr).toBe(0);
    expect(recap(preview.stdout)).toEqual({ changed: 3, unreachable: 0, failed: 0 });
    expect(preview.stdout).toContain(`+ExecStart=/usr/bin/python3 ${lib}/hello_world.py --port ${port}`);
    expect(preview.stdout).toMatch(/TASK \[hello_world : Check the answer\] \*+\nskipping: \[localhost\]/);
    expect(existsSync(lib)).toBe(false);
    expect(existsSync(join(units, 'carapace-hello-world.service'))).toBe(false);
    expect(existsSync(join(state, 'calls.log')) ? await readFile(join(state, 'calls.log'), 'utf8') : '').not.toMatch(/^(start|restart|enable|stop) /m);

    const first = await run('ansible-playbook', args, tmp, env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    // directory, script, unit, enable+start, handler restart
    expect(recap(first.stdout)).toEqual({ changed: 5, unreachable: 0, failed: 0 });
    expect(first.stdout).toContain('RUNNING HANDLER [hello_world : Restart carapace-hello-world]');
    const firstCalls = await readFile(join(state, 'calls.log'), 'utf8');
    expect(firstCalls).toMatch(/^enable carapace-hello-world\.service$/m);
    expect(firstCalls).toMatch(/^start carapace-hello-world\.service$/m);
    expect(firstCalls).toMatch(/^restart carapace-hello-world\.service$/m);

    expect((await stat(join(lib, 'hello_world.py'))).mode & 0o777).toBe(0o755);
    const unit = await readFile(join(units, 'carapace-hello-world.service'), 'utf8');
    expect(unit).toContain(`ExecStart=/usr/bin/python3 ${lib}/hello_world.py --port ${port}\n`);

    const response = await fetch(`http://127.0.0.1:${port}/`);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.text()).toBe('{"result": "ok"}');

    await writeFile(join(state, 'calls.log'), '');
    const second = await run('ansible-playbook', args, tmp, env);
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(recap(second.stdout)).toEqual({ changed: 0, unreachable: 0, failed: 0 });
    const secondCalls = await readFile(join(state, 'calls.log'), 'utf8');
    expect(secondCalls).not.toMatch(/^(start|restart|enable|stop) /m);

    // a preview of the installed service: every task unchanged, the answer asked for real
    const again = await run('ansible-playbook', ['--check', '--diff', ...args], tmp, env);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(recap(again.stdout)).toEqual({ changed: 0, unreachable: 0, failed: 0 });
    expect(again.stdout).toMatch(/TASK \[hello_world : Verify the body and content type\] \*+\nok: \[localhost\]/);
  }, 180_000);
});

describe('hello_world server script', () => {
  async function startServer(args: string[]): Promise<{ child: ChildProcess; port: number }> {
    const child = spawn('python3', [serverScript, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    child.stderr?.resume();
    let out = '';
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 10_000);
      child.on('error', reject);
      child.on('exit', (code) => reject(new Error(`server exited with ${String(code)}: ${out}`)));
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        const match = /listening on \S+ port (\d+)\n/.exec(out);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
    });
    return { child, port };
  }

  it('answers GET with exactly {"result": "ok"} as application/json', async () => {
    const { child, port } = await startServer(['--port', '0']);
    expect(port).toBeGreaterThan(0);
    for (const path of ['/', '/anything?x=1']) {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      const body = await response.text();
      expect(body).toBe('{"result": "ok"}');
      expect(JSON.parse(body)).toEqual({ result: 'ok' });
    }
    // a clean stop on SIGTERM, as systemd does (so Restart=on-failure does not fire)
    const closed = once(child, 'close');
    child.kill('SIGTERM');
    const [code, signal] = (await closed) as [number | null, NodeJS.Signals | null];
    expect(signal).toBeNull();
    expect(code).toBe(0);
  }, 30_000);

  it('listens on the address given by --bind', async () => {
    const { port } = await startServer(['--port', '0', '--bind', '127.0.0.1']);
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
  }, 30_000);
});
