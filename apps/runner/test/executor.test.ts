// The Ansible executor with the real ansible-playbook, against this machine
// (ansible_connection: local), on the fixture playbooks of test/fixtures/executor/.
import { access, readFile, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ansibleContentDir } from '@carapace/playbooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnsibleRun, type RunResult } from '../src/executor/index.js';
import { unsafeInventory } from '../src/executor/inventory-vars.js';
import {
  fixture,
  groupAlive,
  HOST,
  localInventory,
  localSpec,
  malformedPluginDir,
  RecordingSink,
  tempDir,
} from './fixtures/executor/executor-helpers.js';

let workRoot = '';
let removeWorkRoot: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  ({ dir: workRoot, remove: removeWorkRoot } = await tempDir('carapace-executor-'));
});

afterAll(async () => {
  await removeWorkRoot();
});

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

describe('startAnsibleRun, a successful play', () => {
  const sink = new RecordingSink();
  let result: RunResult;
  let pid: number | undefined;
  let callsAtResult = 0;
  let workDir = '';

  beforeAll(async () => {
    const spec = localSpec(workRoot, {
      configuration: { global_vars: { greeting: 'hello' }, inventory: localInventory() },
      extraEnv: { CARAPACE_FIXTURE: 'from-extra-env' },
    });
    workDir = join(workRoot, spec.executionId);
    const run = startAnsibleRun(spec, sink, {
      contentDir: fixture('success'),
      // an inherited ANSIBLE_* setting must not change the run: the work dir's ansible.cfg decides
      baseEnv: { ...process.env, ANSIBLE_STDOUT_CALLBACK: 'json', ANSIBLE_CALLBACKS_ENABLED: 'timer' },
    });
    result = await run.result;
    pid = run.pid;
    callsAtResult = sink.calls.length;
  }, 120_000);

  it('completes', () => {
    expect(result).toEqual({ outcome: 'completed', exitCode: 0, signal: null, reason: null });
    expect(pid).toBeGreaterThan(0);
  });

  it('reports one step per task, with role, name and result', () => {
    expect(sink.steps.map((s) => [s.host, s.address, s.role, s.name, s.result, s.changed])).toEqual([
      [HOST, HOST, 'greeter', 'Make a change', 'ok', true],
      [HOST, HOST, 'greeter', 'Skip a task', 'skipped', false],
      [HOST, HOST, '', 'Say the greeting', 'ok', false],
    ]);
    for (const step of sink.steps) {
      expect(step.error).toEqual({});
      expect(step.time_finished).toBeGreaterThanOrEqual(step.time_started);
      // exactly the documented fields travel on
      expect(Object.keys(step).sort()).toEqual(
        ['address', 'changed', 'error', 'host', 'ignored', 'name', 'result', 'role', 'time_finished', 'time_started'],
      );
    }
  });

  it('logs the default Ansible output, stdout and stderr, without colors', () => {
    const log = sink.text;
    expect(log).toContain('PLAY [fixture success]');
    expect(log).toContain('TASK [greeter : Make a change]');
    expect(log).toMatch(/PLAY RECAP \*+\n127\.0\.0\.1\s+: ok=2\s+changed=1\s+unreachable=0\s+failed=0\s+skipped=1/);
    // from stderr
    expect(log).toContain('[WARNING]: Could not match supplied host pattern, ignoring: no_such_group');
    expect(log).not.toContain('\u001b[');
    expect(log).not.toContain('[carapace runner]');
  });

  it('passes global_vars as extra vars and extraEnv to ansible-playbook', () => {
    expect(sink.text).toContain(`"msg": "greeting=hello on ${HOST} env=from-extra-env"`);
  });

  it('resolves only after every step and log chunk reached the sink', async () => {
    expect(callsAtResult).toBe(sink.calls.length);
    await sleep(200);
    expect(sink.calls.length).toBe(callsAtResult);
  });

  it('leaves no process and no work dir behind', async () => {
    if (pid === undefined) throw new Error('no pid');
    expect(groupAlive(pid)).toBe(false);
    expect(await exists(workDir)).toBe(false);
  });
});

describe('startAnsibleRun, failures', () => {
  it('fails with the exit code and the failed hosts when a task fails', async () => {
    const sink = new RecordingSink();
    const run = startAnsibleRun(localSpec(workRoot), sink, { contentDir: fixture('failing') });
    const result = await run.result;
    expect(result).toEqual({
      outcome: 'failed',
      exitCode: 2,
      signal: null,
      reason: 'ansible-playbook exited with 2: 1 host failed',
    });
    expect(sink.steps.map((s) => [s.name, s.result])).toEqual([
      ['Succeed first', 'ok'],
      ['Fail with code 3', 'error'],
    ]);
    expect(sink.steps[1]?.error).toMatchObject({ rc: 3, stderr: 'to-stderr', msg: 'non-zero return code' });
    expect(sink.text).toContain('fatal: [127.0.0.1]: FAILED!');
    expect(sink.text).toContain('PLAY RECAP');
  }, 120_000);

  it("fails with Ansible's error when ansible-playbook itself refuses to run", async () => {
    const { dir, remove } = await tempDir('carapace-executor-empty-');
    try {
      const result = await startAnsibleRun(localSpec(workRoot), new RecordingSink(), { contentDir: dir }).result;
      expect(result.outcome).toBe('failed');
      expect(result.exitCode).toBe(1);
      expect(result.reason).toMatch(/^ansible-playbook exited with 1: ERROR! the playbook: .*playbook\.yml could not be found$/);
    } finally {
      await remove();
    }
  }, 120_000);

  it('fails with a clear reason, never a throw, when ansible-playbook does not exist', async () => {
    const sink = new RecordingSink();
    const spec = localSpec(workRoot, { ansiblePlaybookPath: join(workRoot, 'no-such-dir', 'ansible-playbook') });
    const run = startAnsibleRun(spec, sink, { contentDir: fixture('success') });
    expect(await run.result).toEqual({
      outcome: 'failed',
      exitCode: null,
      signal: null,
      reason: `ansible-playbook not found: ${spec.ansiblePlaybookPath} does not exist or is not on PATH`,
    });
    expect(run.pid).toBeUndefined();
    expect(sink.steps).toEqual([]);
    expect(await exists(join(workRoot, spec.executionId))).toBe(false);
  });

  it('fails when ansible-playbook is not on PATH', async () => {
    const spec = localSpec(workRoot, { extraEnv: { PATH: '/nonexistent' } });
    const result = await startAnsibleRun(spec, new RecordingSink(), { contentDir: fixture('success') }).result;
    expect(result.outcome).toBe('failed');
    expect(result.reason).toBe('ansible-playbook not found: ansible-playbook does not exist or is not on PATH');
  });

  it('fails an unknown playbook id, or an execution id that is not a plain name, before starting', async () => {
    const unknown = await startAnsibleRun(localSpec(workRoot, { playbookId: 'no_such_playbook' }), new RecordingSink()).result;
    expect(unknown).toEqual({
      outcome: 'failed',
      exitCode: null,
      signal: null,
      reason: 'cannot prepare the run: unknown playbook id "no_such_playbook": no Ansible content for it',
    });
    const escaping = await startAnsibleRun(localSpec(workRoot, { executionId: '../escape' }), new RecordingSink(), {
      contentDir: fixture('success'),
    }).result;
    expect(escaping.outcome).toBe('failed');
    expect(escaping.reason).toBe('cannot prepare the run: invalid execution id "../escape" for a work dir name');
    expect(await exists(join(workRoot, '..', 'escape'))).toBe(false);
  });

  it('fails when the work root cannot be created', async () => {
    const file = join(workRoot, 'a-file');
    await writeFile(file, '');
    const result = await startAnsibleRun(localSpec(file), new RecordingSink(), { contentDir: fixture('success') }).result;
    expect(result.outcome).toBe('failed');
    expect(result.reason).toMatch(/^cannot prepare the run: .*(EEXIST|ENOTDIR)/);
  });
});

describe('startAnsibleRun, the work dir', () => {
  it('is private and holds the inventory, the vars, ansible.cfg and known_hosts', async () => {
    const knownHostsFile = join(workRoot, 'preflight.known_hosts');
    await writeFile(knownHostsFile, `${HOST} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFixtureKeyFixtureKeyFixtureKeyFixtureKe\n`);
    const configuration = { global_vars: { greeting: 'kept', nested: { list: [1, 2] } }, inventory: localInventory() };
    const spec = localSpec(workRoot, { configuration, knownHostsFile });
    const result = await startAnsibleRun(spec, new RecordingSink(), { contentDir: fixture('success'), keepWorkDir: true }).result;
    expect(result.outcome).toBe('completed');

    const dir = join(workRoot, spec.executionId);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    // every string marked unsafe for Ansible's templating (inventory-vars.test.ts)
    expect(JSON.parse(await readFile(join(dir, 'vars.json'), 'utf8'))).toEqual({ greeting: { __ansible_unsafe: 'kept' }, nested: { list: [1, 2] } });
    expect(JSON.parse(await readFile(join(dir, 'inventory.json'), 'utf8'))).toEqual(unsafeInventory(configuration.inventory));
    expect((await stat(join(dir, 'vars.json'))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(dir, 'known_hosts'), 'utf8')).toBe(await readFile(knownHostsFile, 'utf8'));

    const cfg = await readFile(join(dir, 'ansible.cfg'), 'utf8');
    expect(cfg).toContain('\nforks = 1\n');
    expect(cfg).toContain('\nretry_files_enabled = False\n');
    expect(cfg).toContain('\nstdout_callback = default\n');
    expect(cfg).toContain('\ncallbacks_enabled = carapace\n');
    expect(cfg).toContain('\nnocolor = True\n');
    expect(cfg).toContain('-o StrictHostKeyChecking=accept-new');
    expect(cfg).toContain(`-o UserKnownHostsFile=${join(dir, 'known_hosts')}`);
    expect(cfg).not.toMatch(/host_key_checking = False/);
    // no retry file next to the playbook or in the work dir
    expect(await exists(join(fixture('success'), 'playbook.retry'))).toBe(false);
  }, 120_000);

  it('sizes the forks by the hosts of the inventory, up to maxForks', async () => {
    const hosts = Array.from({ length: 30 }, (_, i) => `10.9.0.${i + 1}`);
    const inventory = { osds: { hosts: hosts.slice(0, 20) }, mons: { hosts: hosts.slice(15) }, _meta: { hostvars: {} } };
    const forksOf = async (maxForks: number | undefined): Promise<string | undefined> => {
      // the hosts are unreachable: the run itself fails, the ansible.cfg is what matters here
      const spec = localSpec(workRoot, { configuration: { global_vars: {}, inventory } });
      const run = startAnsibleRun(spec, new RecordingSink(), {
        contentDir: fixture('success'),
        keepWorkDir: true,
        ...(maxForks === undefined ? {} : { maxForks }),
      });
      run.cancel('only the work dir is needed');
      await run.result;
      return /\nforks = (\d+)\n/.exec(await readFile(join(workRoot, spec.executionId, 'ansible.cfg'), 'utf8'))?.[1];
    };
    expect(await forksOf(undefined)).toBe('20');
    expect(await forksOf(50)).toBe('30');
    expect(await forksOf(4)).toBe('4');
  });
});

describe('startAnsibleRun, what comes out of the pipes', () => {
  it('delivers multibyte UTF-8 intact across chunk boundaries', async () => {
    const sink = new RecordingSink();
    const repeat = 60_000;
    const spec = localSpec(workRoot, { configuration: { global_vars: { repeat }, inventory: localInventory() } });
    const result = await startAnsibleRun(spec, sink, { contentDir: fixture('multibyte') }).result;
    expect(result.outcome).toBe('completed');
    // 540 kB on one line: the pipe hands it over in many chunks, which (with 2-, 3- and
    // 4-byte characters) cut characters in two
    expect(sink.chunks.length).toBeGreaterThan(4);
    expect(sink.text).toContain(`"msg": "${'é日🎉'.repeat(repeat)}"`);
    expect(sink.text).not.toContain('\uFFFD');
    // no half of a surrogate pair at either end of a chunk
    for (const chunk of sink.chunks) expect(chunk).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
  }, 120_000);

  it('reports malformed event lines in the log and goes on', async () => {
    const sink = new RecordingSink();
    const spec = localSpec(workRoot, { configuration: { global_vars: { greeting: 'hi' }, inventory: localInventory() } });
    const result = await startAnsibleRun(spec, sink, { contentDir: fixture('success'), callbackPluginDir: malformedPluginDir }).result;
    expect(result.outcome).toBe('completed');
    expect(sink.steps.map((s) => s.name)).toEqual(['Make a change', 'Skip a task', 'Say the greeting']);
    const notes = sink.text.split('\n').filter((line) => line.startsWith('[carapace runner]'));
    // the fixture plugin writes its garbage at the start of each of the two plays
    expect(notes.slice(0, 5)).toEqual([
      '[carapace runner] ignored a malformed event line (not JSON): "this is not JSON"',
      '[carapace runner] ignored a malformed event line (not an event object): "[1, 2, 3]"',
      '[carapace runner] ignored a malformed event line (a step without its fields): "{\\"type\\": \\"step\\", \\"host\\": \\"localhost\\"}"',
      '[carapace runner] ignored a malformed event line (stats without their fields): "{\\"type\\": \\"stats\\", \\"hosts\\": {\\"localhost\\": {\\"ok\\": \\"many\\"}}}"',
      '[carapace runner] ignored a malformed event line (not JSON): "\uFFFD\uFFFD\uFFFD"',
    ]);
    expect(notes).toHaveLength(10);
    expect(sink.text).toContain('PLAY RECAP');
  }, 120_000);
});

describe('ansibleContentDir', () => {
  it('finds the content of hello_world', async () => {
    const dir = ansibleContentDir('hello_world');
    expect(isAbsolute(dir)).toBe(true);
    expect(dir.endsWith(join('libs', 'playbooks', 'ansible', 'hello_world'))).toBe(true);
    expect(await exists(join(dir, 'playbook.yml'))).toBe(true);
    expect(await exists(join(dir, 'roles', 'hello_world', 'tasks', 'main.yml'))).toBe(true);
  });

  it('refuses an unknown id, and a playbook without content', () => {
    expect(() => ansibleContentDir('no_such_playbook')).toThrow('unknown playbook id "no_such_playbook"');
    expect(() => ansibleContentDir('../hello_world')).toThrow('unknown playbook id');
    // a known playbook whose Ansible content is not written yet
    const missing = ['add_osd', 'cinder_integration', 'cluster_deploy', 'purge_cluster', 'remove_osd'].find((id) => {
      try {
        ansibleContentDir(id);
        return false;
      } catch {
        return true;
      }
    });
    if (missing !== undefined) expect(() => ansibleContentDir(missing)).toThrow(/has no Ansible content: .*playbook\.yml is missing/);
  });
});
