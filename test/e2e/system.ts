// Starts the real programs for end-to-end tests: the control plane and runners as
// subprocesses from the built workspace, on temporary data dirs and free ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { request } from 'undici';
import type { Lab } from '../lab/lab.js';
import { eventually } from '@carapace/test-support/eventually';

const ROOT = resolve(import.meta.dirname, '../..');
export const CONTROL_PLANE_BIN = join(ROOT, 'apps/control-plane/bin/carapace-control-plane.js');
export const RUNNER_BIN = join(ROOT, 'apps/runner/bin/carapace-runner.js');
export const ADMIN_PASSWORD = 'e2e-admin-password-0123';
export const DISCOVERY_TOKEN = 'e2e-discovery-token-0123456789abcdef';

/** A free TCP port on `host` (bound and released at once). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  server.listen(0, host);
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A child process whose JSON log lines are kept and can be waited for. */
export class Proc {
  readonly lines: string[] = [];
  private readonly waiters = new Set<() => void>();
  exited: { code: number | null; signal: string | null } | null = null;
  readonly exit: Promise<void>;

  constructor(readonly child: ChildProcess) {
    for (const stream of [child.stdout, child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on('line', (line) => {
        this.lines.push(line);
        if (process.env.E2E_VERBOSE) process.stderr.write(`[${child.pid}] ${line}\n`);
        for (const w of [...this.waiters]) w();
      });
    }
    this.exit = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        this.exited = { code, signal };
        for (const w of [...this.waiters]) w();
        resolve();
      });
    });
  }

  /** Waits for a log line matching `pattern`; returns its match. */
  async waitForLine(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const line of this.lines) {
        const m = pattern.exec(line);
        if (m) return m;
      }
      if (this.exited) throw new Error(`process exited (${JSON.stringify(this.exited)}) before logging ${pattern}:\n${this.lines.slice(-30).join('\n')}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}:\n${this.lines.slice(-30).join('\n')}`);
      await new Promise<void>((resolve) => {
        const done = () => {
          this.waiters.delete(done);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(done, 250);
        this.waiters.add(done);
      });
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  async stop(graceMs = 15_000): Promise<void> {
    if (this.exited) return;
    const kill = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    this.child.kill('SIGTERM');
    await this.exit;
    clearTimeout(kill);
  }

  /** SIGKILL at once, as a crash. */
  async kill(): Promise<void> {
    if (this.exited) return;
    this.child.kill('SIGKILL');
    await this.exit;
  }
}

/** Options of a control plane. */
export interface ControlPlaneOptions {
  dataDir?: string;
  httpHost?: string;
  httpPort?: number;
  grpcPort?: number;
  runner?: 'embedded' | 'none';
  env?: Record<string, string>;
  /** Options of the node process itself (`--cpu-prof`, …). */
  nodeArgs?: readonly string[];
}

/** A control plane subprocess. */
export class ControlPlane {
  private constructor(
    readonly proc: Proc,
    readonly dataDir: string,
    readonly url: string,
    readonly grpcAddress: string,
    readonly options: ControlPlaneOptions,
  ) {}

  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'carapace-e2e-'));
    const httpHost = options.httpHost ?? '127.0.0.1';
    const httpPort = options.httpPort ?? (await freePort(httpHost));
    const grpcPort = options.grpcPort ?? (await freePort());
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), CONTROL_PLANE_BIN], {
      env: {
        ...process.env,
        CARAPACE_DATA_DIR: dataDir,
        CARAPACE_HTTP_HOST: httpHost,
        CARAPACE_HTTP_PORT: String(httpPort),
        CARAPACE_GRPC_HOST: '127.0.0.1',
        CARAPACE_GRPC_PORT: String(grpcPort),
        CARAPACE_ADMIN_PASSWORD: ADMIN_PASSWORD,
        CARAPACE_DISCOVERY_TOKEN: DISCOVERY_TOKEN,
        CARAPACE_RUNNER: options.runner ?? 'embedded',
        CARAPACE_LOG_LEVEL: 'info',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const proc = new Proc(child);
    const url = `http://${httpHost}:${httpPort}`;
    await eventually(
      'the control plane to answer',
      async () => {
        if (proc.exited) throw new Error(`the control plane exited: ${proc.lines.slice(-20).join('\n')}`);
        return (await fetch(`${url}/v1/info/`)).ok ? true : undefined;
      },
      { timeoutMs: 120_000, giveUp: () => proc.exited !== null },
    );
    return new ControlPlane(proc, dataDir, `http://${httpHost}:${httpPort}`, `127.0.0.1:${grpcPort}`, { ...options, dataDir, httpHost, httpPort, grpcPort });
  }

  /** Stops this one and starts another on the same data dir and ports. */
  async restart(how: 'stop' | 'kill' = 'stop'): Promise<ControlPlane> {
    if (how === 'kill') await this.proc.kill();
    else await this.proc.stop();
    return ControlPlane.start(this.options);
  }

  async stop(): Promise<void> {
    await this.proc.stop();
  }

  removeData(): void {
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** A runner subprocess. */
export async function startRunner(options: { controlPlane: string; token: string; workDir: string; sshKeyFile: string; slots?: number; env?: Record<string, string> }): Promise<Proc> {
  mkdirSync(options.workDir, { recursive: true });
  const child = spawn(process.execPath, [RUNNER_BIN], {
    env: {
      ...process.env,
      CARAPACE_RUNNER_URL: options.controlPlane,
      CARAPACE_RUNNER_TOKEN: options.token,
      CARAPACE_RUNNER_WORK_DIR: options.workDir,
      CARAPACE_RUNNER_SSH_KEY: options.sshKeyFile,
      CARAPACE_RUNNER_SLOTS: String(options.slots ?? 2),
      CARAPACE_RUNNER_RECONNECT_INITIAL_MS: '200',
      CARAPACE_RUNNER_RECONNECT_MAX_MS: '2000',
      CARAPACE_RUNNER_LOG_LEVEL: 'info',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = new Proc(child);
  await proc.waitForLine(/connected to the control plane/, 60_000);
  return proc;
}

/** A small JSON client of /v1 for the tests (the client library has its own tests). */
export class Api {
  private token = '';
  constructor(readonly url: string) {}

  /** The token of the last login. */
  get authToken(): string {
    return this.token;
  }

  async login(username = 'root', password = ADMIN_PASSWORD): Promise<void> {
    const res = await this.call('POST', '/v1/auth/', { username, password }, false);
    this.token = (res.json as { id: string }).id;
  }

  async call(method: string, path: string, body?: unknown, auth = true, headers: Record<string, string> = {}): Promise<{ status: number; json: unknown; text: string }> {
    // undici's request rather than fetch: the same HTTP/1.1 with keep-alive, at a fraction of
    // the CPU (no WHATWG streams), which the benchmarks share with the control plane.
    const res = await request(`${this.url}${path}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(auth && this.token ? { authorization: this.token } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.body.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, json, text };
  }

  /** Like call, but throws unless the status is 2xx; returns the JSON. */
  async ok<T = Record<string, any>>(method: string, path: string, body?: unknown): Promise<T> {
    let res = await this.call(method, path, body);
    if (res.status === 401 && this.token) {
      await this.login();
      res = await this.call(method, path, body);
    }
    if (res.status < 200 || res.status > 299) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
    return res.json as T;
  }
}

/**
 * A control plane that runs on real hosts through separate runners: listening on `httpHost`
 * (the lab's gateway, where its hosts reach it), no embedded runner, runner leases of 6 s with
 * heartbeats every second; with an Api logged in as root.
 */
export async function startRunnersControlPlane(httpHost: string): Promise<{ cp: ControlPlane; api: Api }> {
  const cp = await ControlPlane.start({
    httpHost,
    runner: 'none',
    env: { CARAPACE_RUNNER_LEASE_TIMEOUT_MS: '6000', CARAPACE_RUNNER_HEARTBEAT_INTERVAL_MS: '1000' },
  });
  const api = new Api(cp.url);
  await api.login();
  return { cp, api };
}

/** The log of an execution, as text. */
export async function executionLog(api: Api, id: string): Promise<string> {
  return (await api.call('GET', `/v1/execution/${id}/log/`, undefined, true, { accept: 'text/plain' })).text;
}

/**
 * Waits for the execution to end and returns it; the reason of one that failed (`logOf:
 * 'failed'`) or did not complete (`logOf: 'not completed'`) carries the end of its log.
 */
export async function finishedExecution(api: Api, id: string, timeoutMs: number, logOf: 'failed' | 'not completed'): Promise<Record<string, any>> {
  const e = await eventually(
    `execution ${id} to end`,
    async () => {
      const e = await api.ok('GET', `/v1/execution/${id}/`);
      return ['completed', 'failed', 'canceled'].includes(e.data.state) ? e : undefined;
    },
    timeoutMs,
  );
  const withLog = logOf === 'failed' ? e.data.state === 'failed' : e.data.state !== 'completed';
  if (withLog) e.data.reason = `${e.data.reason}\n--- end of its log ---\n${(await executionLog(api, id)).slice(-3000)}`;
  return e;
}

/** Stops the runner and the control plane, destroys the lab and removes the data and `dir`; each may be missing (a beforeAll that failed midway). */
export async function tearDownLab(parts: { runner?: Proc; cp?: ControlPlane; lab?: Lab; dir?: string }): Promise<void> {
  await parts.runner?.stop();
  await parts.cp?.stop();
  await parts.lab?.destroy();
  parts.cp?.removeData();
  if (parts.dir) rmSync(parts.dir, { recursive: true, force: true });
}
