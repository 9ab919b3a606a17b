import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '@carapace/test-support/eventually';

// `npm start` as an operator, a service manager or a container runtime runs it: the signal
// goes to the npm process (or to its whole process group, as a terminal's Ctrl-C does), and
// everything it started must be gone soon after, having drained.

const ROOT = resolve(import.meta.dirname, '../../..');
const PASSWORD = 'npm-start-admin-password';

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/** Live (not zombie) processes among `pids`. */
function alive(pids: number[]): number[] {
  return pids.filter((pid) => {
    try {
      return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  });
}

/** `pid` and its descendants. */
function tree(pid: number): number[] {
  const pids = [pid];
  const taskDir = `/proc/${pid}/task`;
  if (!existsSync(taskDir)) return pids;
  for (const task of readdirSync(taskDir)) {
    let children = '';
    try {
      children = readFileSync(join(taskDir, task, 'children'), 'utf8');
    } catch {
      continue;
    }
    for (const child of children.trim().split(/\s+/).filter(Boolean)) pids.push(...tree(Number(child)));
  }
  return pids;
}

function refuses(port: number): Promise<boolean> {
  return new Promise((resolveRefused) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolveRefused(false);
    });
    socket.once('error', () => resolveRefused(true));
  });
}

interface Started {
  npm: ChildProcess;
  httpPort: number;
  grpcPort: number;
  output: () => string;
  /** npm, the control plane and the runner, and whatever else they run. */
  pids: number[];
  controlPlanePid: number;
  runnerPid: number;
}

const started: Started[] = [];
const dirs: string[] = [];

/** Runs `npm start` in its own process group and resolves once the embedded runner is connected. */
async function npmStart(): Promise<Started> {
  const data = mkdtempSync(join(tmpdir(), 'carapace-npm-start-'));
  dirs.push(data);
  const [httpPort, grpcPort] = [await freePort(), await freePort()];
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    env: {
      ...process.env,
      CARAPACE_DATA_DIR: data,
      CARAPACE_HTTP_PORT: String(httpPort),
      CARAPACE_GRPC_PORT: String(grpcPort),
      CARAPACE_ADMIN_PASSWORD: PASSWORD,
      CARAPACE_RUNNER: 'embedded',
      CARAPACE_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  npm.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  npm.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const entry: Started = { npm, httpPort, grpcPort, output: () => output, pids: [], controlPlanePid: 0, runnerPid: 0 };
  started.push(entry);
  const url = `http://127.0.0.1:${httpPort}`;
  // A first start builds the TypeScript sources: minutes on a busy machine.
  await eventually('/v1/info/', async () => {
    if (npm.exitCode !== null) throw new Error(`npm start exited with ${npm.exitCode}: ${output}`);
    return (await fetch(`${url}/v1/info/`).catch(() => null))?.ok ? true : undefined;
  }, 240_000);
  const login = await fetch(`${url}/v1/auth/`, { method: 'POST', body: JSON.stringify({ username: 'root', password: PASSWORD }) });
  const token = ((await login.json()) as { id: string }).id;
  await eventually('the embedded runner to connect', async () => {
    const list = (await (await fetch(`${url}/v1/runner/`, { headers: { authorization: token } })).json()) as { items: { name: string; state: string }[] };
    return list.items.find((r) => r.name === 'embedded' && r.state === 'connected') ? true : undefined;
  }, 60_000);
  entry.pids = tree(npm.pid!);
  const pidOf = (pattern: RegExp) =>
    entry.pids.find((pid) => {
      try {
        return pattern.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
      } catch {
        return false;
      }
    }) ?? 0;
  entry.controlPlanePid = pidOf(/carapace-control-plane\.js/);
  entry.runnerPid = pidOf(/carapace-runner\.js/);
  expect(entry.controlPlanePid).toBeGreaterThan(0);
  expect(entry.runnerPid).toBeGreaterThan(0);
  return entry;
}

/** Waits until every process of the tree is gone and both ports refuse connections. */
async function expectAllGone(s: Started, timeoutMs = 30_000): Promise<void> {
  await eventually(`every process of npm start to end (left: ${alive(s.pids).join(' ')})`, () => (alive(s.pids).length === 0 ? true : undefined), timeoutMs);
  expect(await refuses(s.httpPort)).toBe(true);
  expect(await refuses(s.grpcPort)).toBe(true);
}

/** The log records of the control plane (no `runner` field) and of the runner. */
function logs(s: Started): { controlPlane: string[]; runner: string[] } {
  const records = s
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string; runner?: string; signal?: string; component?: string });
  const line = (r: { msg: string; signal?: string }) => (r.signal ? `${r.msg} (${r.signal})` : r.msg);
  return {
    controlPlane: records.filter((r) => r.runner === undefined).map(line),
    runner: records.filter((r) => r.runner !== undefined && r.component === undefined).map(line),
  };
}

afterEach(() => {
  for (const s of started.splice(0)) for (const pid of alive(s.pids)) process.kill(pid, 'SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('npm start', () => {
  it('stops everything, drained, when the npm process gets SIGTERM (a service manager, a container runtime)', async () => {
    const s = await npmStart();
    // The embedded runner starts from the control plane's build, and watches its stdin.
    const runnerEnv = readFileSync(`/proc/${s.runnerPid}/environ`, 'utf8').split('\0');
    expect(runnerEnv).toContain('CARAPACE_SKIP_BUILD=1');
    expect(readFileSync(`/proc/${s.runnerPid}/cmdline`, 'utf8').split('\0')).toContain('--exit-with-stdin');
    expect(s.output()).not.toContain('carapace-runner: building');

    process.kill(s.npm.pid!, 'SIGTERM');
    await expectAllGone(s);
    const { controlPlane, runner } = logs(s);
    expect(controlPlane).toContain('shutting down (SIGTERM)');
    expect(controlPlane).toContain('stopped');
    expect(runner).toContain('draining, then stopping (SIGTERM)');
    expect(runner).toContain('runner stopped');
    expect(runner.join('\n')).not.toContain('second signal');
  }, 360_000);

  it("stops everything, drained once, on a terminal's Ctrl-C (SIGINT to the process group)", async () => {
    const s = await npmStart();
    process.kill(-s.npm.pid!, 'SIGINT');
    await expectAllGone(s);
    const { controlPlane, runner } = logs(s);
    expect(controlPlane).toContain('shutting down (SIGINT)');
    expect(controlPlane).toContain('stopped');
    // The runner is drained by the control plane, not hit by the terminal's signal as well.
    expect(runner.filter((l) => l.startsWith('draining, then stopping'))).toEqual(['draining, then stopping (SIGTERM)']);
    expect(runner).toContain('runner stopped');
    expect(runner.join('\n')).not.toContain('second signal');
  }, 360_000);

  it('stops everything when npm is killed with SIGKILL and can forward nothing', async () => {
    const s = await npmStart();
    process.kill(s.npm.pid!, 'SIGKILL');
    await expectAllGone(s);
    const { controlPlane, runner } = logs(s);
    expect(controlPlane).toContain('the parent process is gone');
    expect(controlPlane).toContain('stopped');
    expect(runner).toContain('runner stopped');
  }, 360_000);
});
