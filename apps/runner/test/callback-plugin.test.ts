// Runs real ansible-playbook with the carapace callback plugin and checks the
// JSON-lines events it writes (apps/runner/ansible/callback_plugins/carapace.py).
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

const testDir = fileURLToPath(new URL('.', import.meta.url));
const fixtures = join(testDir, 'fixtures', 'callback');
const pluginDir = join(testDir, '..', 'ansible', 'callback_plugins');

type StepResult = 'ok' | 'error' | 'skipped' | 'unreachable';

interface StepEvent {
  type: 'step';
  host: string;
  address: string;
  role: string;
  name: string;
  result: StepResult;
  changed: boolean;
  ignored: boolean;
  error: Record<string, unknown>;
  time_started: number;
  time_finished: number;
}

interface PlayStartEvent {
  type: 'play_start';
  name: string;
}

interface HostStats {
  ok: number;
  changed: number;
  failures: number;
  unreachable: number;
  skipped: number;
  rescued: number;
  ignored: number;
}

interface StatsEvent {
  type: 'stats';
  hosts: Record<string, HostStats>;
}

type CarapaceEvent = StepEvent | PlayStartEvent | StatsEvent;

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Parses one JSONL line and checks it has exactly the documented shape. */
function parseEvent(line: string): CarapaceEvent {
  const value = JSON.parse(line) as unknown;
  if (!isRecord(value)) throw new Error(`not an object: ${line}`);
  switch (value.type) {
    case 'play_start':
      expect(Object.keys(value).sort()).toEqual(['name', 'type']);
      expect(typeof value.name).toBe('string');
      return value as unknown as PlayStartEvent;
    case 'step':
      expect(Object.keys(value).sort()).toEqual(
        ['address', 'changed', 'error', 'host', 'ignored', 'name', 'result', 'role', 'time_finished', 'time_started', 'type'],
      );
      expect(['ok', 'error', 'skipped', 'unreachable']).toContain(value.result);
      for (const key of ['host', 'address', 'role', 'name']) expect(typeof value[key]).toBe('string');
      for (const key of ['changed', 'ignored']) expect(typeof value[key]).toBe('boolean');
      for (const key of ['time_started', 'time_finished']) expect(typeof value[key]).toBe('number');
      expect(isRecord(value.error)).toBe(true);
      return value as unknown as StepEvent;
    case 'stats':
      expect(Object.keys(value).sort()).toEqual(['hosts', 'type']);
      expect(isRecord(value.hosts)).toBe(true);
      return value as unknown as StatsEvent;
    default:
      throw new Error(`unknown event type: ${line}`);
  }
}

function parseEvents(text: string): CarapaceEvent[] {
  if (text.length > 0) expect(text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map(parseEvent);
}

const steps = (events: CarapaceEvent[]): StepEvent[] => events.filter((e): e is StepEvent => e.type === 'step');

/** An environment for ansible-playbook that depends on nothing of the user's setup. */
function ansibleEnv(tmp: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('ANSIBLE_') && !key.startsWith('CARAPACE_')) env[key] = value;
  }
  return {
    ...env,
    // no __pycache__ next to the plugin in the source tree
    PYTHONDONTWRITEBYTECODE: '1',
    ANSIBLE_CONFIG: join(tmp, 'ansible.cfg'),
    ANSIBLE_HOME: join(tmp, 'ansible-home'),
    ANSIBLE_LOCAL_TEMP: join(tmp, 'local-tmp'),
    ANSIBLE_REMOTE_TEMP: join(tmp, 'remote-tmp'),
    ANSIBLE_CALLBACK_PLUGINS: pluginDir,
    ANSIBLE_CALLBACKS_ENABLED: 'carapace',
    ANSIBLE_STDOUT_CALLBACK: 'default',
    ANSIBLE_NOCOLOR: '1',
    ANSIBLE_FORCE_COLOR: '0',
    ANSIBLE_RETRY_FILES_ENABLED: '0',
    ANSIBLE_HOST_KEY_CHECKING: 'False',
    ANSIBLE_TIMEOUT: '10',
    ANSIBLE_SSH_ARGS: '-o ControlMaster=no -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
    ...extra,
  };
}

async function makeTmp(): Promise<string> {
  const tmp = await mkdtemp(join(tmpdir(), 'carapace-callback-'));
  await writeFile(join(tmp, 'ansible.cfg'), '');
  return tmp;
}

function runPlaybook(tmp: string, args: string[], env: Record<string, string>): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      'ansible-playbook',
      args,
      { cwd: tmp, env: ansibleEnv(tmp, env), timeout: 120_000, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          reject(new Error(`ansible-playbook did not run: ${error.message}\n${stderr}`));
          return;
        }
        resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
      },
    );
  });
}

describe('carapace callback plugin, full fixture playbook', () => {
  let tmp = '';
  let run: RunResult;
  let eventsText = '';
  let events: CarapaceEvent[] = [];
  let startedAt = 0;
  let finishedAt = 0;

  beforeAll(async () => {
    tmp = await makeTmp();
    const eventsFile = join(tmp, 'events.jsonl');
    startedAt = Date.now() / 1000;
    run = await runPlaybook(tmp, ['-i', join(fixtures, 'inventory.ini'), join(fixtures, 'playbook.yml')], {
      CARAPACE_EVENTS_FILE: eventsFile,
    });
    finishedAt = Date.now() / 1000;
    eventsText = await readFile(eventsFile, 'utf8');
    events = parseEvents(eventsText);
  });

  afterAll(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('leaves the default stdout callback in charge of the human log', () => {
    // 2: a host failed; 4: a host was unreachable (ansible-playbook reports the latter)
    expect([2, 4]).toContain(run.code);
    expect(run.stdout).toContain('PLAY [fixture play]');
    expect(run.stdout).toContain('TASK [ok task]');
    expect(run.stdout).toContain('PLAY RECAP');
    expect(run.stdout).not.toContain('carapace callback:');
    expect(run.stderr).not.toContain('carapace callback:');
  });

  it('writes only valid JSON lines: a play start first, the stats last', () => {
    expect(events.length).toBeGreaterThan(3);
    expect(events[0]).toEqual({ type: 'play_start', name: 'fixture play' });
    expect(events.at(-1)?.type).toBe('stats');
    expect(events.filter((e) => e.type === 'play_start')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'stats')).toHaveLength(1);
  });

  it('reports one step per task and host on localhost, in order', () => {
    const local = steps(events).filter((s) => s.host === 'localhost');
    expect(local.map((s) => [s.name, s.role, s.result, s.changed, s.ignored])).toEqual([
      ['ok task', '', 'ok', false, false],
      ['changed task', '', 'ok', true, false],
      ['failed ignored task', '', 'error', true, true],
      ['skipped task', '', 'skipped', false, false],
      ['loop task hello', '', 'ok', true, false],
      ['loop task with a failing item', '', 'error', true, true],
      ['role task', 'fixture_role', 'ok', true, false],
      ['role handler', 'fixture_role', 'ok', true, false],
      ['no_log failing task', '', 'error', true, true],
      ['big output failing task', '', 'error', true, true],
      ['failing task in block', '', 'error', true, false],
      ['rescue task', '', 'ok', false, false],
      ['real failure', '', 'error', true, false],
    ]);
    for (const step of local) expect(step.address).toBe('localhost');
  });

  it('gives an error object only for errors, with the module result', () => {
    const byName = new Map(steps(events).filter((s) => s.host === 'localhost').map((s) => [s.name, s]));
    for (const step of byName.values()) {
      if (step.result === 'ok' || step.result === 'skipped') expect(step.error).toEqual({});
    }
    expect(byName.get('failed ignored task')?.error).toMatchObject({ rc: 1, msg: 'non-zero return code', cmd: ['/bin/false'] });
    expect(byName.get('real failure')?.error).toMatchObject({
      rc: 2,
      stdout: 'to-stdout',
      stderr: 'to-stderr',
      msg: 'non-zero return code',
    });
    expect(byName.get('failing task in block')?.error).toMatchObject({ rc: 5 });
    // noise and internals are dropped
    for (const step of byName.values()) {
      for (const key of Object.keys(step.error)) {
        expect(key.startsWith('_ansible')).toBe(false);
        expect(['invocation', 'stdout_lines', 'stderr_lines']).not.toContain(key);
      }
    }
  });

  it('reports a loop once, with the item results in the error', () => {
    const loop = steps(events).filter((s) => s.name === 'loop task with a failing item');
    expect(loop).toHaveLength(1);
    expect(loop[0]?.error).toMatchObject({
      msg: 'One or more items failed',
      results: [
        { rc: 0, item: 0, failed: false },
        { rc: 4, item: 4, failed: true },
      ],
    });
  });

  it('never writes no_log output', () => {
    const step = steps(events).find((s) => s.name === 'no_log failing task');
    expect(step?.error).toEqual({
      censored: "the output has been hidden due to the fact that 'no_log: true' was specified for this result",
    });
    expect(eventsText).not.toContain('SECRET-TOKEN-1234');
  });

  it('trims large outputs', () => {
    const step = steps(events).find((s) => s.name === 'big output failing task');
    const stdout = step?.error.stdout;
    expect(typeof stdout).toBe('string');
    expect((stdout as string).length).toBeLessThan(10_000);
    expect(stdout).toMatch(/\.\.\.\[\d+ characters truncated\]\.\.\./);
    for (const line of eventsText.split('\n')) expect(line.length).toBeLessThan(100_000);
  });

  it('reports the unreachable host once, with its address and the connection error', () => {
    const unreach = steps(events).filter((s) => s.host === 'unreach');
    expect(unreach).toHaveLength(1);
    const step = unreach[0];
    expect(step).toMatchObject({
      host: 'unreach',
      address: '127.0.0.1',
      role: '',
      name: 'ok task',
      result: 'unreachable',
      changed: false,
      ignored: false,
    });
    expect(step?.error.unreachable).toBe(true);
    expect(step?.error.msg).toMatch(/port 1: Connection refused/);
  });

  it('times each step, in order, within the run', () => {
    const all = steps(events);
    for (const step of all) {
      expect(step.time_started).toBeGreaterThanOrEqual(startedAt - 1);
      expect(step.time_finished).toBeLessThanOrEqual(finishedAt + 1);
      expect(step.time_finished).toBeGreaterThanOrEqual(step.time_started);
    }
    const local = all.filter((s) => s.host === 'localhost');
    for (let i = 1; i < local.length; i += 1) {
      const previous = local[i - 1];
      const current = local[i];
      if (!previous || !current) throw new Error('unreachable');
      expect(current.time_started).toBeGreaterThanOrEqual(previous.time_finished);
    }
  });

  it('ends with the statistics of every host', () => {
    expect(events.at(-1)).toEqual({
      type: 'stats',
      hosts: {
        localhost: { ok: 10, changed: 8, failures: 1, unreachable: 0, skipped: 1, rescued: 1, ignored: 4 },
        unreach: { ok: 0, changed: 0, failures: 0, unreachable: 1, skipped: 0, rescued: 0, ignored: 0 },
      },
    });
    expect(run.stdout).toMatch(/localhost\s+: ok=10\s+changed=8\s+unreachable=0\s+failed=1\s+skipped=1\s+rescued=1\s+ignored=4/);
  });
});

describe('carapace callback plugin, destinations', () => {
  const tmps: string[] = [];
  const children: ChildProcess[] = [];

  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    for (const tmp of tmps.splice(0)) await rm(tmp, { recursive: true, force: true });
  });

  it('streams events live to the file descriptor named by CARAPACE_EVENTS_FD', async () => {
    const tmp = await makeTmp();
    tmps.push(tmp);
    const release = join(tmp, 'release');
    const child = spawn(
      'ansible-playbook',
      ['-i', join(fixtures, 'inventory-local.ini'), '-e', `release_file=${release}`, join(fixtures, 'live.yml')],
      {
        cwd: tmp,
        env: ansibleEnv(tmp, { CARAPACE_EVENTS_FD: '3', CARAPACE_EVENTS_FILE: join(tmp, 'unused.jsonl') }),
        stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      },
    );
    children.push(child);
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr?.resume();
    const exited = new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (code) => resolve(code));
    });

    const eventsPipe = child.stdio[3] as Readable;
    let text = '';
    let released = false;
    let stepsBeforeRelease = -1;
    eventsPipe.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (!released && text.includes('"name":"first task"')) {
        // the second task is still waiting for this file: the event came live
        released = true;
        stepsBeforeRelease = steps(parseEvents(text.slice(0, text.lastIndexOf('\n') + 1))).length;
        void writeFile(release, 'go');
      }
    });

    expect(await exited).toBe(0);
    expect(released).toBe(true);
    expect(stepsBeforeRelease).toBe(1);
    const events = parseEvents(text);
    expect(events.map((e) => (e.type === 'step' ? `${e.type}:${e.name}:${e.result}` : e.type))).toEqual([
      'play_start',
      'step:first task:ok',
      'step:wait for the release file:ok',
      'stats',
    ]);
    expect(stdout).toContain('PLAY RECAP');
    // the fd wins over the file
    await expect(readFile(join(tmp, 'unused.jsonl'), 'utf8')).rejects.toThrow();
  }, 120_000);

  it('warns but never fails the run when the events file cannot be opened', async () => {
    const tmp = await makeTmp();
    tmps.push(tmp);
    const release = join(tmp, 'release');
    await writeFile(release, 'go');
    const run = await runPlaybook(
      tmp,
      ['-i', join(fixtures, 'inventory-local.ini'), '-e', `release_file=${release}`, join(fixtures, 'live.yml')],
      { CARAPACE_EVENTS_FILE: join(tmp, 'no', 'such', 'dir', 'events.jsonl') },
    );
    expect(run.code).toBe(0);
    expect(run.stdout + run.stderr).toContain('carapace callback: cannot open the events destination');
    expect(run.stdout).toMatch(/localhost\s+: ok=2\s+changed=0/);
  }, 120_000);
});

describe('carapace callback plugin, steps a module reports (carapace_steps)', () => {
  let tmp = '';
  let events: StepEvent[] = [];

  beforeAll(async () => {
    tmp = await makeTmp();
    const library = join(tmp, 'library');
    await mkdir(library);
    // A module that acts on several daemons in one task and reports a step for each.
    await writeFile(
      join(library, 'daemons.py'),
      [
        '#!/usr/bin/python3',
        'from ansible.module_utils.basic import AnsibleModule',
        'm = AnsibleModule(argument_spec=dict(names=dict(type="list", elements="str"), fail=dict(type="bool", default=False)))',
        'steps = [{"name": n, "result": "ok", "changed": True, "time_started": 1000.5, "time_finished": 1002.25} for n in m.params["names"]]',
        'if m.params["fail"]:',
        '    steps.append({"name": "osd.9: not back", "result": "error", "error": {"msg": "still down"}})',
        '    m.fail_json(msg="osd.9 is not back", carapace_steps=steps)',
        'm.exit_json(changed=True, carapace_steps=steps)',
        '',
      ].join('\n'),
    );
    await writeFile(
      join(tmp, 'playbook.yml'),
      [
        '- hosts: localhost',
        '  gather_facts: false',
        '  tasks:',
        '    - name: Restart two daemons',
        '      daemons: {names: ["osd.1 on a: 16.2.15 → 18.2.7, down 1.8 s", "osd.2 on a: 16.2.15 → 18.2.7, down 2.0 s"]}',
        '    - name: Report none',
        '      daemons: {names: []}',
        '    - name: Restart one that does not come back',
        '      daemons: {names: ["osd.3 on a: 16.2.15 → 18.2.7, down 1.0 s"], fail: true}',
        '',
      ].join('\n'),
    );
    const eventsFile = join(tmp, 'events.jsonl');
    const result = await runPlaybook(tmp, ['-i', 'localhost,', '-c', 'local', '-M', library, join(tmp, 'playbook.yml')], { CARAPACE_EVENTS_FILE: eventsFile });
    expect(result.code, result.stderr).toBe(2);
    events = steps(parseEvents(await readFile(eventsFile, 'utf8')));
  });

  afterAll(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it("shows each reported step in place of the task's own, with its own times", () => {
    expect(events.map((e) => [e.name, e.result, e.changed])).toEqual([
      ['osd.1 on a: 16.2.15 → 18.2.7, down 1.8 s', 'ok', true],
      ['osd.2 on a: 16.2.15 → 18.2.7, down 2.0 s', 'ok', true],
      ['Report none', 'ok', true],
      ['osd.3 on a: 16.2.15 → 18.2.7, down 1.0 s', 'ok', true],
      ['osd.9: not back', 'error', false],
      ['Restart one that does not come back', 'error', false],
    ]);
    expect(events[0]).toMatchObject({ host: 'localhost', time_started: 1000.5, time_finished: 1002.25, error: {} });
  });

  it("keeps the failed task's own step, with its error, after the steps it reported", () => {
    expect(events[4]?.error).toEqual({ msg: 'still down' });
    expect(events[5]?.error).toMatchObject({ msg: 'osd.9 is not back' });
  });
});
