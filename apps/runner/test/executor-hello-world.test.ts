// The real hello_world content (libs/playbooks/ansible/hello_world) through the executor:
// the inventory, vars.json and ansible.cfg the runner writes, against this machine, with
// the stand-in systemctl of libs/playbooks/test (there is no systemd here) and the install
// paths moved to a temporary directory, as in libs/playbooks/test/hello-world-playbook.test.ts.
// Real systemd on Debian 12 is the lab's part (test/lab/). Root only: the play makes its
// files owned by root.
import { chmod, copyFile, mkdir, readFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnsibleRun } from '../src/executor/index.js';
import { HOST, localInventory, localSpec, RecordingSink, tempDir } from './fixtures/executor/executor-helpers.js';

const fakeSystemctl = fileURLToPath(new URL('../../../libs/playbooks/test/fixtures/fake-systemctl.py', import.meta.url));

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

describe.skipIf(process.getuid?.() !== 0)('startAnsibleRun with the hello_world playbook', () => {
  let tmp = '';
  let remove: () => Promise<void> = async () => undefined;
  let pidFile = '';

  beforeAll(async () => {
    ({ dir: tmp, remove } = await tempDir('carapace-executor-hello-'));
  });

  afterAll(async () => {
    // the service started by the stand-in systemctl runs detached, in a session of its own
    const pid = Number(await readFile(pidFile, 'utf8').catch(() => ''));
    if (Number.isInteger(pid) && pid > 0) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await remove();
  });

  it('installs the service answering {"result": "ok"}, with one step per task', async () => {
    const bin = join(tmp, 'bin');
    const units = join(tmp, 'units');
    const state = join(tmp, 'state');
    for (const dir of [bin, units, state]) await mkdir(dir, { recursive: true });
    await copyFile(fakeSystemctl, join(bin, 'systemctl'));
    await chmod(join(bin, 'systemctl'), 0o755);
    pidFile = join(state, 'carapace-hello-world.service.pid');
    const port = await freePort();

    const sink = new RecordingSink();
    const spec = localSpec(join(tmp, 'work'), {
      playbookId: 'hello_world',
      configuration: {
        global_vars: {
          port_number: port,
          hello_world_install_dir: join(tmp, 'lib', 'carapace'),
          hello_world_unit_dir: units,
          // sudo would reset PATH and lose the stand-in; the test runs as root anyway
          ansible_become: false,
        },
        inventory: localInventory(),
      },
      extraEnv: {
        PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
        FAKE_SYSTEMD_UNIT_DIR: units,
        FAKE_SYSTEMD_STATE_DIR: state,
      },
    });
    const result = await startAnsibleRun(spec, sink).result;
    expect(result, sink.text).toEqual({ outcome: 'completed', exitCode: 0, signal: null, reason: null });

    expect(sink.steps.map((s) => [s.host, s.role, s.name, s.result])).toEqual(
      [
        'Check the port number',
        'Create the install directory',
        'Install the hello world server',
        'Install the systemd unit',
        'Enable and start the service',
        'Restart carapace-hello-world',
        'Wait for the port',
        'Check the answer',
        'Verify the body and content type',
      ].map((name) => [HOST, 'hello_world', name, 'ok']),
    );
    expect(sink.text).toMatch(/PLAY RECAP \*+\n127\.0\.0\.1\s+: ok=9\s+changed=5\s+unreachable=0\s+failed=0/);

    const response = await fetch(`http://127.0.0.1:${port}/`);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({ result: 'ok' });
  }, 120_000);
});
