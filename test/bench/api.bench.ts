/**
 * `npm run bench:api`: throughput and latency of the real control plane over HTTP, each
 * route against a bare Fastify "twin" that answers the very same JSON body as a constant,
 * measured in the same run with the same load generator (autocannon) and settings:
 *
 *   get        GET /v1/user/{id}/ (authenticated)              target: ≥ 0.5 of its bare twin
 *   users      GET /v1/user/?per_page=100 over 10,000 users     target: p99 < 20 ms
 *   servers    GET /v1/server/?per_page=100 over 10,000 servers
 *              with about 10 KB of facts each                   target: p99 < 30 ms
 *   execution  POST /v1/execution/                              (ratio only)
 *   login      POST /v1/auth/ (scrypt by design)                (ratio only)
 *   logins     GET /v1/cluster/ p50 at 1 connection, idle and while another client logs
 *              in correctly BENCH_LOGIN_RATE (17) times a second    target: p50 ≤ 3 × idle
 *
 * The list latency targets are judged on a run with BENCH_LATENCY_CONNECTIONS (1)
 * connection: the time a client waits for a page. Under the saturating load of the
 * throughput runs a request also waits for the (connections − 1) ahead of it, so their p99
 * is about `connections / throughput`; it is printed too, but is a throughput figure.
 *
 * Topology: each server runs alone in its own child process (`api.server.ts`); autocannon
 * runs in this process. On a machine with at least two CPUs the servers are pinned to one
 * CPU and this process to another (`taskset`), so that generator and server never compete
 * for a core and every server gets the same single core. Each Carapace run follows the run
 * of its bare twin, so that each ratio is against a baseline measured right before it.
 *
 * Environment: BENCH_DURATION_S (8), BENCH_WARMUP_S (2), BENCH_CONNECTIONS (10),
 * BENCH_LATENCY_CONNECTIONS (1), BENCH_PIPELINING (1), BENCH_USERS (10000),
 * BENCH_SERVERS (10000), BENCH_ROUNDS (1: repeat the whole series and report the spread),
 * BENCH_ONLY (comma-separated cases among get,users,servers,execution,login,logins),
 * BENCH_LOGIN_RATE (17: logins per second of the `logins` case),
 * BENCH_PIN (1: pin when possible; 0: never), BENCH_CPU_PROF (1: write V8 CPU profiles of
 * the Carapace server to BENCH_PROF_DIR or a kept temporary directory).
 *
 * Output: every measurement in the order run (with the server's CPU time per request, which
 * does not depend on whether the load generator or the server held the rate back), then a
 * summary of each Carapace scenario against its target: PASS or MISS.
 *
 * Exits 0 whether or not the targets are met (it is a report, and says which are missed), 1
 * when any request failed or answered other than 2xx (a benchmark of errors is worthless)
 * or the setup failed, 2 on a bad setting.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon, { type Instance, type Result } from 'autocannon';
import {
  ENV_ADMIN_PASSWORD,
  ENV_DATA_DIR,
  ENV_SERVERS,
  ENV_USERS,
  type ChildMessage,
  type Fixtures,
  type ParentMessage,
  type ServerKind,
} from './protocol.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const SERVER_SCRIPT = join(HERE, 'api.server.ts');
const PER_PAGE = 100;
const CASES = ['get', 'users', 'servers', 'execution', 'login', 'logins'] as const;
type CaseKey = (typeof CASES)[number];

class SettingError extends Error {}

function envNumber(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) throw new SettingError(`${name} must be a number ≥ ${min}, not "${raw}"`);
  return value;
}

function onlySetting(): ReadonlySet<CaseKey> {
  const raw = process.env.BENCH_ONLY;
  if (raw === undefined || raw.trim() === '') return new Set(CASES);
  const keys = raw.split(',').map((k) => k.trim());
  const unknown = keys.filter((k) => !(CASES as readonly string[]).includes(k));
  if (unknown.length) throw new SettingError(`BENCH_ONLY takes a comma-separated list among ${CASES.join(', ')}, not "${unknown.join(', ')}"`);
  return new Set(keys as CaseKey[]);
}

const settings = (() => {
  try {
    return {
      durationS: envNumber('BENCH_DURATION_S', 8, 1),
      warmupS: envNumber('BENCH_WARMUP_S', 2, 0),
      connections: Math.floor(envNumber('BENCH_CONNECTIONS', 10, 1)),
      latencyConnections: Math.floor(envNumber('BENCH_LATENCY_CONNECTIONS', 1, 1)),
      pipelining: Math.floor(envNumber('BENCH_PIPELINING', 1, 1)),
      users: Math.floor(envNumber('BENCH_USERS', 10_000, 100)),
      servers: Math.floor(envNumber('BENCH_SERVERS', 10_000, 100)),
      rounds: Math.floor(envNumber('BENCH_ROUNDS', 1, 1)),
      loginRate: envNumber('BENCH_LOGIN_RATE', 17, 1),
      only: onlySetting(),
      pin: process.env.BENCH_PIN !== '0',
      cpuProf: process.env.BENCH_CPU_PROF === '1',
    };
  } catch (e) {
    if (e instanceof SettingError) {
      process.stderr.write(`bench:api: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
})();

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

// --- CPU pinning ----------------------------------------------------------------------------

/** Counted before this process pins itself to one CPU. */
const CPUS = availableParallelism();
const SERVER_CPU = '1';
const GENERATOR_CPU = '0';

function canPin(): boolean {
  if (!settings.pin || process.platform !== 'linux' || CPUS < 2) return false;
  return spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status === 0;
}

// --- Servers in child processes -------------------------------------------------------------

interface Server {
  readonly kind: ServerKind;
  readonly child: ChildProcess;
  readonly fixtures: Fixtures | undefined;
  readonly baseUrl: string;
}

const children = new Set<ChildProcess>();
let cpuSeq = 0;

function startServer(kind: ServerKind, env: NodeJS.ProcessEnv, pinned: boolean, profDir: string | null): Promise<Server> {
  const execArgv = ['--conditions=@carapace/source', '--import', 'tsx'];
  if (profDir) execArgv.push('--cpu-prof', `--cpu-prof-dir=${profDir}`);
  const options = { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] as ('ignore' | 'inherit' | 'ipc')[] };
  const child = pinned
    ? spawn('taskset', ['-c', SERVER_CPU, process.execPath, ...execArgv, SERVER_SCRIPT, kind], options)
    : fork(SERVER_SCRIPT, [kind], { ...options, execArgv });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return new Promise<Server>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the ${kind} server did not start within 300 s`)), 300_000);
    const onMessage = (raw: unknown): void => {
      const message = raw as ChildMessage;
      if (message.type === 'ready') {
        done();
        resolve({ kind, child, fixtures: message.fixtures, baseUrl: `http://127.0.0.1:${message.port}` });
      } else if (message.type === 'error') {
        done();
        reject(new Error(`the ${kind} server failed to start:\n${message.message}`));
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      done();
      reject(new Error(`the ${kind} server exited while starting (${signal ?? `code ${String(code)}`})`));
    };
    const done = (): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Sends a message to a server and waits for the first answer `match` accepts. */
function ask<T>(server: Server, message: ParentMessage, match: (m: ChildMessage) => T | undefined, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      server.child.off('message', onMessage);
      reject(new Error(`the ${server.kind} server did not answer: ${what}`));
    }, 10_000);
    const onMessage = (raw: unknown): void => {
      const value = match(raw as ChildMessage);
      if (value === undefined) return;
      clearTimeout(timer);
      server.child.off('message', onMessage);
      resolve(value);
    };
    server.child.on('message', onMessage);
    server.child.send(message);
  });
}

/** The CPU time (user + system, µs) a server has used so far, and when (its clock, ms). */
function serverCpu(server: Server): Promise<{ micros: number; atMs: number }> {
  const seq = ++cpuSeq;
  return ask(
    server,
    { type: 'cpu', seq },
    (m) => (m.type === 'cpu' && m.seq === seq ? { micros: m.userMicros + m.systemMicros, atMs: m.atMs } : undefined),
    'its CPU time',
  );
}

/** Makes the bare server answer `/twin/{name}` with `json`. */
function setTwin(bare: Server, name: string, json: string): Promise<true> {
  return ask(bare, { type: 'twin', name, json }, (m) => (m.type === 'twin-set' && m.name === name ? true : undefined), `the body of twin ${name}`);
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.connected) child.send({ type: 'stop' } satisfies ParentMessage);
  else child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

// --- Load generation ------------------------------------------------------------------------

interface Scenario {
  readonly name: string;
  readonly server: Server;
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly connections: number;
  readonly warmupS: number;
}

interface Measured {
  readonly reqPerS: number;
  readonly completed: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly bytesPerResponse: number;
  readonly serverCpuPct: number;
  readonly generatorCpuPct: number;
  /** CPU used by everything else on the machine meanwhile, in % of one CPU (NaN when unknown). */
  readonly otherCpuPct: number;
  readonly failures: number;
  readonly failureDetail: string;
}

let running: Instance | null = null;
/** The login client of the `logins` case, while it runs. */
let loginInstance: Instance | null = null;

/** Runs autocannon once; collects the exact response time of every response (autocannon's own histogram has 1 ms steps). */
function cannon(scenario: Scenario, durationS: number): Promise<{ result: Result; times: Float64Array; bytes: number }> {
  let times = new Float64Array(1 << 16);
  let n = 0;
  let bytes = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: scenario.server.baseUrl + scenario.path,
        method: scenario.method,
        connections: scenario.connections,
        pipelining: settings.pipelining,
        duration: durationS,
        timeout: 10,
        headers: scenario.headers,
        ...(scenario.body === undefined ? {} : { body: scenario.body }),
        title: scenario.name,
      },
      (error, result) => {
        running = null;
        if (error) reject(error);
        else resolve({ result, times: times.subarray(0, n), bytes });
      },
    );
    running = instance;
    instance.on('response', (_client, _status, resBytes, responseTime) => {
      if (n === times.length) {
        const grown = new Float64Array(times.length * 2);
        grown.set(times);
        times = grown;
      }
      times[n++] = responseTime;
      bytes += resBytes;
    });
  });
}

function failuresOf(result: Result): { count: number; detail: string } {
  const count = result.non2xx + result.errors + result.timeouts + result.mismatches;
  const codes = Object.entries(result.statusCodeStats)
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, s]) => `${code}×${s.count}`);
  const detail = [
    ...codes,
    result.errors ? `errors×${result.errors}` : '',
    result.timeouts ? `timeouts×${result.timeouts}` : '',
    result.mismatches ? `mismatches×${result.mismatches}` : '',
  ].filter(Boolean);
  return { count, detail: detail.join(' ') };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

/** Busy and total CPU time of the whole machine so far (Linux `/proc/stat`, in ticks), or null. */
function machineCpu(): { busy: number; total: number; cpus: number } | null {
  let text: string;
  try {
    text = readFileSync('/proc/stat', 'utf8');
  } catch {
    return null;
  }
  const lines = text.split('\n');
  const fields = lines[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  if (fields.length < 5 || fields.some((f) => !Number.isFinite(f))) return null;
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total, cpus: lines.filter((l) => /^cpu\d+ /.test(l)).length };
}

async function measure(scenario: Scenario): Promise<Measured> {
  let warmFailures = { count: 0, detail: '' };
  if (scenario.warmupS > 0) {
    log(`  ${scenario.name}: warm-up ${scenario.warmupS} s`);
    warmFailures = failuresOf((await cannon(scenario, scenario.warmupS)).result);
  }
  log(`  ${scenario.name}: measuring ${settings.durationS} s, ${scenario.connections} connection(s)`);
  const serverBefore = await serverCpu(scenario.server);
  const machineBefore = machineCpu();
  const ownBefore = process.cpuUsage();
  const wallBefore = performance.now();
  const { result, times, bytes } = await cannon(scenario, settings.durationS);
  const ownCpu = process.cpuUsage(ownBefore);
  const wallMs = performance.now() - wallBefore;
  const machineAfter = machineCpu();
  const serverAfter = await serverCpu(scenario.server);
  const sorted = times.slice().sort();
  const failures = failuresOf(result);
  const serverCpuPct = ((serverAfter.micros - serverBefore.micros) / 1000 / (serverAfter.atMs - serverBefore.atMs)) * 100;
  const generatorCpuPct = ((ownCpu.user + ownCpu.system) / 1000 / wallMs) * 100;
  const machinePct =
    machineBefore && machineAfter && machineAfter.total > machineBefore.total
      ? ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * machineAfter.cpus * 100
      : Number.NaN;
  return {
    reqPerS: result.requests.total / result.duration,
    completed: result.requests.total,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.length ? (sorted[sorted.length - 1] ?? Number.NaN) : Number.NaN,
    bytesPerResponse: times.length ? bytes / times.length : Number.NaN,
    serverCpuPct,
    generatorCpuPct,
    otherCpuPct: Math.max(0, machinePct - serverCpuPct - generatorCpuPct),
    failures: failures.count + warmFailures.count,
    failureDetail: [failures.detail, warmFailures.detail ? `warm-up: ${warmFailures.detail}` : ''].filter(Boolean).join('; '),
  };
}

// --- Requests before measuring ----------------------------------------------------------------

async function request(server: Server, method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: string) {
  const response = await fetch(server.baseUrl + path, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: keep the text for the message
  }
  return { status: response.status, json, text };
}

/** Sends a scenario's request once, checks the answer, and returns its body (for the twin). */
async function probe(scenario: Scenario, test: (body: unknown) => string | null): Promise<string> {
  const { status, json, text } = await request(scenario.server, scenario.method, scenario.path, scenario.headers, scenario.body);
  const problem = status < 200 || status > 299 ? `status ${status}` : test(json);
  if (problem) throw new Error(`${scenario.name} is not answered as expected: ${problem}: ${text.slice(0, 500)}`);
  return text;
}

async function postJson(server: Server, path: string, headers: Record<string, string>, body: unknown): Promise<Record<string, unknown>> {
  const { status, json, text } = await request(server, 'POST', path, { ...headers, 'content-type': 'application/json' }, JSON.stringify(body));
  if (status !== 200 || typeof json !== 'object' || json === null) throw new Error(`POST ${path} failed: ${status} ${text.slice(0, 500)}`);
  return json as Record<string, unknown>;
}

// --- Report ---------------------------------------------------------------------------------

function fmt(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r, ri) => {
      const line = r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
      return ri === 0 ? `${line}\n${widths.map((w) => '-'.repeat(w)).join('  ')}` : line;
    })
    .join('\n');
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2;
}

// --- The cases ------------------------------------------------------------------------------

/** What a row is judged on. */
type Target =
  | { readonly kind: 'ratio'; readonly min: number }
  | { readonly kind: 'p99'; readonly maxMs: number }
  /** p50 under a load ÷ p50 idle, at most `max`. */
  | { readonly kind: 'p50-ratio'; readonly max: number }
  | null;

interface Case {
  readonly key: CaseKey;
  /** The bare twin, measured right before `carapace`. */
  readonly twin: Scenario;
  readonly carapace: Scenario;
  readonly throughputTarget: Target;
  /** The same route at BENCH_LATENCY_CONNECTIONS, for a latency target. */
  readonly latency: { readonly scenario: Scenario; readonly target: Target } | null;
}

interface Row {
  readonly round: number;
  readonly caseKey: CaseKey;
  /** A bare twin, a Carapace route under the throughput load, at the latency load, or at the latency load while logins run. */
  readonly kind: 'twin' | 'throughput' | 'latency' | 'loaded';
  readonly label: string;
  readonly connections: number;
  readonly m: Measured;
  /** The bare twin measured right before this row (throughput rows), else null. */
  readonly twin: Measured | null;
  /** vs its bare twin (throughput rows); p50 ÷ idle p50 (loaded rows). */
  readonly ratio: number;
  readonly target: Target;
}

/**
 * The `logins` case: the p50 of a cheap authenticated GET at one connection, idle, then
 * while another client logs in correctly (each login runs scrypt and issues a token) at
 * `ratePerS`. A login must neither starve the request path of CPU or of libuv's thread
 * pool nor empty the cache of other clients' principals.
 */
interface LoginLoad {
  readonly get: Scenario;
  readonly logins: Scenario;
  readonly ratePerS: number;
}

/** What the login client got while a loaded row was measured. */
interface LoginStats {
  readonly asked: number;
  readonly reqPerS: number;
  readonly ok: number;
  /** 503 answers: the hash queue was full (load shed by design). */
  readonly shed: number;
  readonly p50: number;
  readonly failures: number;
  readonly failureDetail: string;
}

/**
 * Server CPU time per request, in µs: the cost of a request whatever held the rate back.
 * When the bare twin is limited by the load generator (the twin's server CPU well under
 * 100 %), its req/s understates what bare Fastify can do, and the req/s ratio flatters
 * Carapace; the ratio of CPU per request does not depend on that.
 */
function cpuPerRequest(m: Measured): number {
  return (m.serverCpuPct * 10_000) / m.reqPerS;
}

function targetText(target: Target): string {
  if (!target) return '';
  switch (target.kind) {
    case 'ratio':
      return `ratio ≥ ${target.min}`;
    case 'p99':
      return `p99 < ${target.maxMs} ms`;
    case 'p50-ratio':
      return `p50 ≤ ${target.max} × idle`;
  }
}

function meets(target: Target, ratio: number, p99: number): boolean | null {
  if (!target) return null;
  switch (target.kind) {
    case 'ratio':
      return ratio >= target.min;
    case 'p99':
      return p99 < target.maxMs;
    case 'p50-ratio':
      return ratio <= target.max;
  }
}

function verdict(ok: boolean | null): string {
  return ok === null ? '' : ok ? 'PASS' : 'MISS';
}

// --- Main -----------------------------------------------------------------------------------

const dataDir = mkdtempSync(join(tmpdir(), 'carapace-bench-'));
let profDir: string | null = null;
let cleaned = false;

async function cleanup(): Promise<void> {
  if (cleaned) return;
  cleaned = true;
  running?.stop();
  loginInstance?.stop();
  await Promise.all([...children].map(stopChild));
  rmSync(dataDir, { recursive: true, force: true });
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`\n${signal}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}

async function setUp(bare: Server, carapace: Server, fixtures: Fixtures, password: string): Promise<{ cases: Case[]; loginLoad: LoginLoad | null }> {
  const loginBody = JSON.stringify({ username: 'root', password });
  const json = { 'content-type': 'application/json' };
  const token = (await postJson(carapace, '/v1/auth/', {}, { username: 'root', password })).id;
  if (typeof token !== 'string') throw new Error('login as root gave no token');
  const auth = { authorization: token };

  // A cluster and a hello_world configuration of three seeded servers to execute, over the API.
  const cluster = await postJson(carapace, '/v1/cluster/', auth, { name: 'bench' });
  const configuration = await postJson(carapace, '/v1/playbook_configuration/', auth, {
    name: 'bench hello',
    playbook_id: 'hello_world',
    cluster_id: cluster.id,
    server_ids: fixtures.serverIds,
  });
  const executionBody = JSON.stringify({ playbook_configuration: { id: configuration.id, version: configuration.version } });

  const scenario = (name: string, server: Server, method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: string): Scenario => ({
    name,
    server,
    method,
    path,
    headers,
    ...(body === undefined ? {} : { body }),
    connections: settings.connections,
    warmupS: settings.warmupS,
  });
  const twinOf = (key: CaseKey, s: Scenario): Scenario => ({ ...s, name: `bare twin (${key})`, server: bare, path: `/twin/${key}`, headers: s.body ? json : {} });
  const latencyOf = (s: Scenario): Scenario => ({ ...s, connections: settings.latencyConnections, warmupS: 0 });
  const isList = (total: number) => (b: unknown) => {
    const page = b as { items?: { data?: { facts?: object } }[]; total?: unknown };
    if (page.items?.length !== Math.min(PER_PAGE, total)) return `${page.items?.length ?? 'no'} items`;
    return page.total === total ? null : `total ${String(page.total)}, expected ${total}`;
  };

  const cases: Case[] = [];
  const add = async (key: CaseKey, carapaceScenario: Scenario, test: (b: unknown) => string | null, throughputTarget: Target, latencyTarget?: Target) => {
    if (!settings.only.has(key)) return;
    const body = await probe(carapaceScenario, test);
    const twin = twinOf(key, carapaceScenario);
    await setTwin(bare, key, body);
    await probe(twin, () => null);
    cases.push({
      key,
      twin,
      carapace: carapaceScenario,
      throughputTarget,
      latency: latencyTarget ? { scenario: latencyOf(carapaceScenario), target: latencyTarget } : null,
    });
  };
  await add(
    'get',
    scenario('GET /v1/user/{id}/', carapace, 'GET', `/v1/user/${fixtures.userId}/`, auth),
    (b) => ((b as { id?: unknown }).id === fixtures.userId ? null : 'another id'),
    { kind: 'ratio', min: 0.5 },
  );
  await add('users', scenario(`GET /v1/user/?per_page=${PER_PAGE}`, carapace, 'GET', `/v1/user/?per_page=${PER_PAGE}`, auth), isList(fixtures.users), null, {
    kind: 'p99',
    maxMs: 20,
  });
  await add(
    'servers',
    scenario(`GET /v1/server/?per_page=${PER_PAGE}`, carapace, 'GET', `/v1/server/?per_page=${PER_PAGE}`, auth),
    (b) => {
      const problem = isList(fixtures.servers)(b);
      if (problem) return problem;
      const facts = (b as { items: { data: { facts: Record<string, unknown> } }[] }).items[0]?.data.facts;
      return facts && Array.isArray(facts.disks) ? null : 'servers without facts';
    },
    null,
    { kind: 'p99', maxMs: 30 },
  );
  await add(
    'execution',
    scenario('POST /v1/execution/', carapace, 'POST', '/v1/execution/', { ...auth, ...json }, executionBody),
    (b) => ((b as { data?: { state?: unknown } }).data?.state === 'created' ? null : 'not created'),
    null,
  );
  await add('login', scenario('POST /v1/auth/ (login)', carapace, 'POST', '/v1/auth/', json, loginBody), (b) => (typeof (b as { id?: unknown }).id === 'string' ? null : 'no token'), null);

  let loginLoad: LoginLoad | null = null;
  if (settings.only.has('logins')) {
    const get = { ...scenario('GET /v1/cluster/', carapace, 'GET', '/v1/cluster/', auth), connections: settings.latencyConnections };
    await probe(get, (b) => ((b as { total?: unknown }).total === 1 ? null : 'not the one cluster'));
    // Enough connections that logins waiting for their hash never hold the rate back.
    const logins = { ...scenario('POST /v1/auth/ (login load)', carapace, 'POST', '/v1/auth/', json, loginBody), connections: 8, warmupS: 0 };
    loginLoad = { get, logins, ratePerS: settings.loginRate };
  }
  return { cases, loginLoad };
}

/** Measures `load.get` while `load.logins` runs at its rate (started a second before, stopped after). */
async function measureUnderLogins(load: LoginLoad): Promise<{ m: Measured; logins: LoginStats }> {
  const times: number[] = [];
  let shed = 0;
  const leadS = 1;
  const finished = new Promise<Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: load.logins.server.baseUrl + load.logins.path,
        method: 'POST',
        connections: load.logins.connections,
        overallRate: load.ratePerS,
        duration: settings.durationS + leadS + 1,
        timeout: 10,
        headers: load.logins.headers,
        ...(load.logins.body === undefined ? {} : { body: load.logins.body }),
        title: load.logins.name,
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('response', (_client, status, _bytes, responseTime) => {
      if (status === 503) shed++;
      else times.push(responseTime);
    });
    loginInstance = instance;
  });
  await new Promise((r) => setTimeout(r, leadS * 1000));
  const m = await measure({ ...load.get, name: `${load.get.name} (while logins run)`, warmupS: 0 });
  loginInstance?.stop();
  loginInstance = null;
  const result = await finished;
  const failures = failuresOf(result);
  const sorted = Float64Array.from(times).sort();
  return {
    m,
    logins: {
      asked: load.ratePerS,
      reqPerS: result.requests.total / result.duration,
      ok: result['2xx'],
      shed,
      p50: percentile(sorted, 50),
      failures: failures.count - shed,
      failureDetail: failures.detail,
    },
  };
}

async function main(): Promise<number> {
  const pinned = canPin();
  if (pinned) spawnSync('taskset', ['-a', '-p', '-c', GENERATOR_CPU, String(process.pid)], { stdio: 'ignore' });
  if (settings.cpuProf) {
    profDir = process.env.BENCH_PROF_DIR ?? mkdtempSync(join(tmpdir(), 'carapace-bench-prof-'));
    mkdirSync(profDir, { recursive: true });
  }
  const password = randomBytes(18).toString('base64url');
  const startedAt = performance.now();

  log(`starting the servers (seeding ${settings.users} users and ${settings.servers} servers with facts)…`);
  const [bare, carapace] = await Promise.all([
    startServer('bare', {}, pinned, null),
    startServer(
      'carapace',
      { [ENV_DATA_DIR]: dataDir, [ENV_ADMIN_PASSWORD]: password, [ENV_USERS]: String(settings.users), [ENV_SERVERS]: String(settings.servers) },
      pinned,
      profDir,
    ),
  ]);
  const fixtures = carapace.fixtures;
  if (!fixtures) throw new Error('the carapace server did not report what it seeded');
  log(
    `seeded ${fixtures.users} users in ${fmt(fixtures.seedUsersMs / 1000, 1)} s and ${fixtures.servers} servers ` +
      `(facts ${fmt(fixtures.factsBytes / 1024, 1)} KB each) in ${fmt(fixtures.seedServersMs / 1000, 1)} s; ` +
      `database ${fmt(fixtures.dbBytes / 1024 ** 2, 0)} MB`,
  );
  const { cases, loginLoad } = await setUp(bare, carapace, fixtures, password);

  const rows: Row[] = [];
  const loginLines: string[] = [];
  let loginFailures = 0;
  for (let round = 1; round <= settings.rounds; round++) {
    log(`round ${round} of ${settings.rounds}`);
    for (const c of cases) {
      const twin = await measure(c.twin);
      rows.push({ round, caseKey: c.key, kind: 'twin', label: c.twin.name, connections: c.twin.connections, m: twin, twin: null, ratio: Number.NaN, target: null });
      const m = await measure(c.carapace);
      rows.push({
        round,
        caseKey: c.key,
        kind: 'throughput',
        label: c.carapace.name,
        connections: c.carapace.connections,
        m,
        twin,
        ratio: m.reqPerS / twin.reqPerS,
        target: c.throughputTarget,
      });
      if (c.latency) {
        const l = await measure(c.latency.scenario);
        rows.push({
          round,
          caseKey: c.key,
          kind: 'latency',
          label: `${c.carapace.name} (latency)`,
          connections: c.latency.scenario.connections,
          m: l,
          twin: null,
          ratio: Number.NaN,
          target: c.latency.target,
        });
      }
    }
    if (loginLoad) {
      const idle = await measure(loginLoad.get);
      const idleLabel = `${loginLoad.get.name} (idle)`;
      rows.push({ round, caseKey: 'logins', kind: 'latency', label: idleLabel, connections: loginLoad.get.connections, m: idle, twin: null, ratio: Number.NaN, target: null });
      const { m, logins } = await measureUnderLogins(loginLoad);
      const ratio = m.p50 / idle.p50;
      rows.push({
        round,
        caseKey: 'logins',
        kind: 'loaded',
        label: `${loginLoad.get.name} (while ${fmt(loginLoad.ratePerS, 0)} logins/s)`,
        connections: loginLoad.get.connections,
        m,
        twin: null,
        ratio,
        target: { kind: 'p50-ratio', max: 3 },
      });
      loginFailures += logins.failures;
      loginLines.push(
        `${settings.rounds > 1 ? `round ${round}: ` : ''}GET /v1/cluster/ p50 ${fmt(idle.p50, 2)} ms idle, ${fmt(m.p50, 2)} ms while logins run ` +
          `(× ${fmt(ratio, 2)}); the login client asked ${fmt(logins.asked, 0)}/s, got ${fmt(logins.reqPerS, 1)}/s: ` +
          `${logins.ok} logged in (p50 ${fmt(logins.p50, 0)} ms), ${logins.shed} shed with 503` +
          (logins.failures ? `, ${logins.failures} FAILED (${logins.failureDetail})` : ''),
      );
    }
  }

  const failures = rows.reduce((n, r) => n + r.m.failures, 0) + loginFailures;
  const out: string[] = [];
  out.push('');
  out.push(
    `Carapace API benchmark — ${fixtures.users} users, ${fixtures.servers} servers with ${fmt(fixtures.factsBytes / 1024, 1)} KB of facts each, ` +
      `on-disk SQLite (WAL); Node ${process.version}, ${CPUS} CPUs; ${fmt((performance.now() - startedAt) / 1000, 0)} s in all`,
  );
  out.push(
    'topology: Carapace and the bare twins each in their own child process, autocannon in the main process; ' +
      (pinned ? `servers pinned to CPU ${SERVER_CPU}, generator to CPU ${GENERATOR_CPU} (taskset)` : 'no CPU pinning'),
  );
  out.push(
    `load: autocannon, pipelining ${settings.pipelining}, ${settings.warmupS} s warm-up (none for latency rows) then ${settings.durationS} s per row; ` +
      'a bare twin answers the same body as a constant; latency is exact per response, in ms; ' +
      'CPU in % of one CPU (other: the rest of the machine, from /proc/stat); µs/req: server CPU time per request',
  );

  // Every measurement, in the order run.
  const header = ['round', 'endpoint', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'KB/resp', 'server CPU', 'µs/req', 'gen CPU', 'other CPU', 'vs bare', 'target', 'result'];
  out.push('');
  out.push('measurements:');
  out.push(
    table([
      settings.rounds > 1 ? header : header.slice(1),
      ...rows.map((r) => {
        const cells = [
          String(r.round),
          r.label,
          String(r.connections),
          fmt(r.m.reqPerS, 0),
          fmt(r.m.p50, 2),
          fmt(r.m.p99, 2),
          fmt(r.m.max, 1),
          fmt(r.m.bytesPerResponse / 1024, 1),
          `${fmt(r.m.serverCpuPct, 0)}%`,
          fmt(cpuPerRequest(r.m), 0),
          `${fmt(r.m.generatorCpuPct, 0)}%`,
          `${fmt(r.m.otherCpuPct, 0)}%`,
          fmt(r.ratio, 3),
          targetText(r.target),
          verdict(meets(r.target, r.ratio, r.m.p99)) + (r.m.failures ? ` ${r.m.failures} FAILED (${r.m.failureDetail})` : ''),
        ];
        return settings.rounds > 1 ? cells : cells.slice(1);
      }),
    ]),
  );

  const notes: string[] = [];
  const contended = rows.filter((r) => r.m.otherCpuPct > 25);
  if (contended.length) {
    notes.push(
      `other processes used more than 25% of a CPU during ${contended.length} of ${rows.length} rows ` +
        `(up to ${fmt(Math.max(...contended.map((r) => r.m.otherCpuPct)), 0)}%): the machine was shared; compare with care and repeat`,
    );
  }
  const starved = rows.filter((r) => r.kind === 'twin' && r.m.serverCpuPct < 90);
  if (starved.length) {
    notes.push(
      `${starved.length} bare twin row(s) kept their server under 90% of a CPU: held back by the load generator or by other processes, not by Fastify, ` +
        'so their req/s understates bare Fastify and "vs bare" flatters Carapace; "CPU vs bare" (bare µs/req ÷ Carapace µs/req) does not depend on that',
    );
  }
  if (profDir) notes.push(`CPU profiles of the Carapace server: ${profDir}`);
  if (loginLines.length) out.push('', 'GET while logins run (vs bare: p50 ÷ idle p50):', ...loginLines.map((l) => `  ${l}`));
  if (notes.length) out.push('', ...notes.map((n) => `note: ${n}`));

  // The summary: one line per Carapace scenario (medians over the rounds), judged on its target.
  const labels = [...new Set(rows.filter((r) => r.kind !== 'twin').map((r) => r.label))];
  let met = 0;
  const missed: string[] = [];
  const summary: string[][] = [
    ['scenario', 'conns', 'req/s', 'p50 ms', 'p99 ms', 'bare req/s', 'vs bare', 'µs/req', 'bare µs/req', 'CPU vs bare', 'target', 'result'],
  ];
  for (const label of labels) {
    const these = rows.filter((r) => r.label === label);
    const first = these[0];
    if (!first) continue;
    const med = (f: (r: Row) => number): number => median(these.map(f));
    const twins = these.flatMap((r) => (r.twin ? [r.twin] : []));
    const ratio = med((r) => r.ratio);
    const p99 = med((r) => r.m.p99);
    const target = first.target;
    const ok = meets(target, ratio, p99);
    if (ok === true) met++;
    else if (ok === false) missed.push(label);
    const judged = target ? these.map((r) => (target.kind === 'p99' ? r.m.p99 : r.ratio)) : [];
    const range = settings.rounds > 1 && judged.length ? ` [${fmt(Math.min(...judged), 3)} … ${fmt(Math.max(...judged), 3)}]` : '';
    const ownCpu = med((r) => cpuPerRequest(r.m));
    const bareCpu = median(twins.map(cpuPerRequest));
    summary.push([
      label,
      String(first.connections),
      fmt(med((r) => r.m.reqPerS), 0),
      fmt(med((r) => r.m.p50), 2),
      fmt(p99, 2),
      fmt(median(twins.map((t) => t.reqPerS)), 0),
      fmt(ratio, 3),
      fmt(ownCpu, 0),
      fmt(bareCpu, 0),
      fmt(bareCpu / ownCpu, 3),
      targetText(target) || '-',
      (verdict(ok) || 'info') + range,
    ]);
  }
  out.push('');
  out.push(
    settings.rounds > 1
      ? `summary (median of ${settings.rounds} rounds; the judged figure's range in brackets):`
      : 'summary (vs bare: req/s ÷ bare twin req/s, same load, same run):',
  );
  out.push(table(summary));
  out.push('');
  const judgedCount = met + missed.length;
  if (missed.length) out.push(`${met} of ${judgedCount} targets met; MISS: ${missed.join('; ')} (reported, not an error: exit status 0)`);
  else if (judgedCount) out.push(`all ${judgedCount} targets met`);
  if (failures) out.push(`FAILED REQUESTS: ${failures}: the figures above are not valid`);
  process.stdout.write(`${out.join('\n')}\n`);
  return failures ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} catch (e) {
  log(`bench:api: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  code = 1;
} finally {
  await cleanup();
}
process.exit(code);
