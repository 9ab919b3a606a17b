import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Client } from 'pg';

// A real PostgreSQL server for tests: Debian's server binaries, a private cluster in a
// temporary directory, run as an unprivileged user, on 127.0.0.1 and a free port, with
// password authentication (SCRAM) and the durability settings off. One is shared by a whole
// vitest run (postgres.global-setup.ts); testPostgresDatabase() hands every test a database
// of its own on it.

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's shared PostgreSQL (postgres.global-setup.ts), or null when it started none. */
    carapacePostgres: SharedPostgres | null;
  }
}

/** What the global setup tells the test workers of the shared server. */
export interface SharedPostgres {
  /** The superuser's URL, database `postgres`. */
  readonly url: string;
  /** A file that reads `ready` once the server accepts connections, or `failed` and why. */
  readonly statusFile: string;
}

/** A database of its own for a test. */
export interface TestDatabase {
  /** postgres://carapace:PASSWORD@127.0.0.1:PORT/NAME (the server's superuser). */
  readonly url: string;
  /** Drops the database, closing whatever connections it still has. */
  drop(): Promise<void>;
}

/** Environment: `0` starts no shared server in the global setup (tests that need one start their own). */
export const ENV_ENABLE = 'CARAPACE_TEST_POSTGRES';
/** Environment: the shared server's superuser URL (set by the global setup; or by hand, to use a server of your own). */
export const ENV_URL = 'CARAPACE_TEST_POSTGRES_URL';
/** Environment: the shared server's status file (set by the global setup). */
export const ENV_STATUS = 'CARAPACE_TEST_POSTGRES_STATUS';

const SUPERUSER = 'carapace';
const DIR_PREFIX = 'carapace-pg-';
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;
const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function executable(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function hasServer(dir: string): boolean {
  return executable(join(dir, 'initdb')) && executable(join(dir, 'postgres'));
}

let binDirCache: string | null | undefined;

/**
 * The directory of the PostgreSQL server binaries (initdb, postgres): `pg_config --bindir`,
 * else the newest /usr/lib/postgresql/MAJOR/bin (Debian's layout), else one on PATH. Null
 * when there is none.
 */
export function findPostgresBinDir(): string | null {
  if (binDirCache !== undefined) return binDirCache;
  const candidates: string[] = [];
  const pgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  if (pgConfig.status === 0) candidates.push(pgConfig.stdout.trim());
  try {
    const majors = readdirSync('/usr/lib/postgresql').filter((v) => /^\d+(\.\d+)?$/.test(v));
    majors.sort((a, b) => Number(b) - Number(a));
    candidates.push(...majors.map((v) => `/usr/lib/postgresql/${v}/bin`));
  } catch {
    // no Debian layout
  }
  candidates.push(...(process.env.PATH ?? '').split(delimiter).filter(Boolean));
  binDirCache = candidates.find(hasServer) ?? null;
  return binDirCache;
}

/** The error of a machine without the server binaries: tests that need PostgreSQL fail with it, they never skip. */
export function missingPostgresError(): Error {
  return new Error(
    'PostgreSQL server binaries (initdb, postgres) not found (pg_config --bindir, /usr/lib/postgresql/*/bin, PATH): ' +
      "install them with `bash scripts/install-system-deps.sh` (Debian's postgresql package)",
  );
}

/** The user the server runs as: PostgreSQL refuses to run as root. Null: as this process's user. */
interface ServerUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

function serverUser(): ServerUser | null {
  if (process.getuid?.() !== 0) return null;
  const entries = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'));
  for (const name of ['postgres', 'nobody']) {
    const entry = entries.find((fields) => fields[0] === name);
    if (entry) return { name, uid: Number(entry[2]), gid: Number(entry[3]) };
  }
  throw new Error('running as root, and there is neither a postgres nor a nobody user to run PostgreSQL as (it refuses root)');
}

let setprivCache: string | null | undefined;

function setpriv(): string | null {
  if (setprivCache === undefined) {
    const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/bin'];
    setprivCache = dirs.map((dir) => join(dir, 'setpriv')).find(executable) ?? null;
  }
  return setprivCache;
}

/**
 * How to run `bin` as `user` so that it dies with this process: setpriv (util-linux) sets
 * the parent-death signal after changing user and execs the program, so the child is the
 * program itself and gets `deathSignal` when this process ends, however it ends (SIGKILL
 * included). Without setpriv, Node changes the user and only the 'exit' hook stops it.
 */
function asUser(bin: string, args: string[], user: ServerUser | null, deathSignal: 'KILL' | 'QUIT'): { command: string; args: string[]; uid?: number; gid?: number } {
  const tool = setpriv();
  if (tool) {
    const ids = user ? ['--reuid', String(user.uid), '--regid', String(user.gid), '--clear-groups'] : [];
    return { command: tool, args: ['--pdeathsig', deathSignal, ...ids, '--', bin, ...args] };
  }
  return { command: bin, args, ...(user ? { uid: user.uid, gid: user.gid } : {}) };
}

/** The start time of a process (/proc/PID/stat field 22), to tell it from a later one of the same pid; null when gone. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether a process has ended (gone, or a zombie not yet reaped). */
function ended(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function tail(path: string, chars = 4000): string {
  try {
    const text = readFileSync(path, 'utf8');
    return text.length > chars ? `...${text.slice(-chars)}` : text;
  } catch {
    return '(no log)';
  }
}

/**
 * Removes what servers of test processes that died without stopping them left behind (their
 * directory, and the server itself where the parent-death signal could not stop it): vitest
 * ends its workers with SIGTERM, which runs no 'exit' hook. Every start sweeps, and so does
 * the global setup's teardown.
 */
export function sweepStaleTestPostgres(): void {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir()).filter((name) => name.startsWith(DIR_PREFIX));
  } catch {
    return;
  }
  for (const name of entries) {
    const dir = join(tmpdir(), name);
    try {
      let owner: string[];
      try {
        owner = readFileSync(join(dir, 'owner'), 'utf8').trim().split(' ');
      } catch {
        // Being created this moment, or not ours to judge: only an old one is stale.
        if (Date.now() - statSync(dir).mtimeMs < 10 * 60_000) continue;
        owner = [];
      }
      const [pid, started] = owner;
      if (pid && started && processStart(Number(pid)) === started) continue;
      const postmaster = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (postmaster > 0 && !ended(postmaster) && readFileSync(`/proc/${postmaster}/cmdline`, 'utf8').includes(dir)) {
        process.kill(postmaster, 'SIGQUIT');
        for (let i = 0; i < 200 && !ended(postmaster); i++) sleepSync(10);
        if (!ended(postmaster)) process.kill(postmaster, 'SIGKILL');
      }
    } catch {
      // no server in it
    }
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // someone else's: leave it
    }
  }
}

const live = new Set<TestPostgres>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A test process that exits without stopping its servers (its end, process.exit, an
  // uncaught error) stops them here, synchronously; one killed by a signal has them stopped
  // by the parent-death signal, their directories removed by sweepStaleTestPostgres.
  process.on('exit', () => {
    for (const server of live) server.stopSync();
  });
}

/** Options of a TestPostgres. */
export interface TestPostgresOptions {
  /** max_connections (200). */
  readonly maxConnections?: number;
  /** More server settings (`-c name=value`), over those above. */
  readonly settings?: Readonly<Record<string, string | number>>;
}

/**
 * A private PostgreSQL server: a cluster made by initdb in a temporary directory, run as the
 * `postgres` user (else `nobody`) when this process is root, listening on 127.0.0.1 only on
 * a free port (and a unix socket in its directory), superuser `carapace` with a random
 * password (SCRAM), fsync, synchronous_commit and full_page_writes off. It dies with the
 * process that started it. `TestPostgres.start()` resolves once it accepts connections;
 * `TestPostgres.launch()` as soon as its URL is known, the start going on (`ready`).
 */
export class TestPostgres {
  /** The superuser's URL, database `postgres`. */
  readonly url: string;
  /** Reads `ready`, or `failed` and why, once the start has ended (for other processes). */
  readonly statusFile: string;
  /** Resolves once the server accepts connections; rejects with why not (the server's log included). */
  readonly ready: Promise<void>;
  private child: Child | null = null;
  private stopping = false;
  private stopped: Promise<void> | null = null;

  private constructor(
    readonly dir: string,
    readonly port: number,
    password: string,
    private readonly binDir: string,
    private readonly user: ServerUser | null,
    private reservation: Server | null,
    private readonly options: TestPostgresOptions,
  ) {
    this.url = `postgres://${SUPERUSER}:${password}@127.0.0.1:${port}/postgres`;
    this.statusFile = join(dir, 'status');
    this.ready = this.boot();
    void this.ready.then(
      () => this.writeStatus('ready\n'),
      (err: Error) => this.writeStatus(`failed\n${err.message}\n`),
    );
  }

  /** Starts a server; resolves once it accepts connections. */
  static async start(options: TestPostgresOptions = {}): Promise<TestPostgres> {
    const server = await TestPostgres.launch(options);
    try {
      await server.ready;
    } catch (err) {
      await server.stop();
      throw err;
    }
    return server;
  }

  /** Starts a server; resolves once its URL is known (a few milliseconds), the start going on: await `ready`. */
  static async launch(options: TestPostgresOptions = {}): Promise<TestPostgres> {
    const binDir = findPostgresBinDir();
    if (!binDir) throw missingPostgresError();
    const user = serverUser();
    sweepStaleTestPostgres();
    installExitHook();
    const dir = mkdtempSync(join(tmpdir(), DIR_PREFIX));
    writeFileSync(join(dir, 'owner'), `${process.pid} ${processStart(process.pid) ?? ''}\n`);
    const password = randomBytes(18).toString('hex');
    writeFileSync(join(dir, 'pwfile'), `${password}\n`, { mode: 0o600 });
    if (user) {
      chownSync(dir, user.uid, user.gid);
      chownSync(join(dir, 'pwfile'), user.uid, user.gid);
    }
    // The port stays bound here until the server takes it, so nothing else gets it meanwhile.
    let reservation: Server;
    try {
      reservation = await new Promise<Server>((resolve, reject) => {
        const server = createServer();
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve(server));
      });
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    const server = new TestPostgres(dir, (reservation.address() as AddressInfo).port, password, binDir, user, reservation, options);
    live.add(server);
    return server;
  }

  /** Creates an empty database (a random name when none); returns its URL. */
  async createDatabase(name?: string): Promise<string> {
    await this.ready;
    return createDatabaseAt(this.url, name);
  }

  /** Drops the database of a URL createDatabase returned (closing its connections). */
  async dropDatabase(url: string): Promise<void> {
    await this.ready;
    return dropDatabaseAt(this.url, url);
  }

  /** The pid of the server's postmaster while it runs. */
  get pid(): number | undefined {
    return this.child && this.child.end === null ? this.child.process.pid : undefined;
  }

  /** Stops the server at once (immediate shutdown: nothing here needs to survive) and removes its directory. */
  stop(): Promise<void> {
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    this.stopping = true;
    this.reservation?.close();
    this.reservation = null;
    const child = this.child;
    if (child && child.end === null) {
      child.process.kill(child.stopSignal);
      const timer = setTimeout(() => child.process.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await child.done;
      clearTimeout(timer);
    }
    await this.ready.catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 5 });
    live.delete(this);
  }

  /** stop(), synchronously, for the process's 'exit' hook. */
  stopSync(): void {
    this.stopping = true;
    this.reservation?.close();
    const pid = this.child?.process.pid;
    if (this.child && pid !== undefined && !ended(pid)) {
      try {
        process.kill(pid, this.child.stopSignal);
        for (let i = 0; i < 300 && !ended(pid); i++) sleepSync(10);
        if (!ended(pid)) process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
    live.delete(this);
  }

  private writeStatus(text: string): void {
    if (this.stopping) return;
    try {
      writeFileSync(`${this.statusFile}.tmp`, text);
      renameSync(`${this.statusFile}.tmp`, this.statusFile);
    } catch {
      // stopped meanwhile
    }
  }

  /** Runs a program of the server as its user, output to `logFile`; `stopSignal` stops it at once, and it gets it when this process dies. */
  private run(bin: string, args: string[], logFile: string, stopSignal: 'SIGKILL' | 'SIGQUIT'): Child {
    const how = asUser(join(this.binDir, bin), args, this.user, stopSignal === 'SIGKILL' ? 'KILL' : 'QUIT');
    const log = openSync(logFile, 'a');
    try {
      const proc = spawn(how.command, how.args, {
        cwd: this.dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', TZ: 'UTC' },
        stdio: ['ignore', log, log],
        ...(how.uid !== undefined ? { uid: how.uid, gid: how.gid } : {}),
      });
      const child: Child = {
        process: proc,
        stopSignal,
        end: null,
        done: new Promise((resolve) => {
          proc.once('exit', (code, signal) => resolve((child.end = code ?? signal ?? 'unknown')));
          proc.once('error', (err) => resolve((child.end = `not started: ${err.message}`)));
        }),
      };
      this.child = child;
      return child;
    } finally {
      closeSync(log);
    }
  }

  private async boot(): Promise<void> {
    const data = join(this.dir, 'data');
    const initdbLog = join(this.dir, 'initdb.log');
    const initdb = this.run(
      'initdb',
      ['-D', data, '-U', SUPERUSER, '--auth=scram-sha-256', `--pwfile=${join(this.dir, 'pwfile')}`, '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'],
      initdbLog,
      'SIGKILL',
    );
    const initdbEnd = await initdb.done;
    if (this.stopping) throw new Error('stopped while starting');
    if (initdbEnd !== 0) throw new Error(`initdb failed (${initdbEnd}) in ${this.dir} as ${this.user?.name ?? 'this user'}:\n${tail(initdbLog)}`);

    const serverLog = join(this.dir, 'server.log');
    const settings: Record<string, string | number> = {
      listen_addresses: '127.0.0.1',
      port: this.port,
      unix_socket_directories: this.dir,
      unix_socket_permissions: '0700',
      max_connections: this.options.maxConnections ?? 200,
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
      wal_level: 'minimal',
      max_wal_senders: 0,
      jit: 'off',
      logging_collector: 'off',
      ...this.options.settings,
    };
    const args = ['-D', data, ...Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`])];
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (let attempt = 1; ; attempt++) {
      this.reservation?.close();
      this.reservation = null;
      const logStart = existsSync(serverLog) ? statSync(serverLog).size : 0;
      const server = this.run('postgres', args, serverLog, 'SIGQUIT');
      for (;;) {
        if (this.stopping) throw new Error('stopped while starting');
        if (server.end !== null) break;
        if (acceptsConnections(data, server.process.pid)) {
          // A server left running keeps no process alive: the 'exit' hook stops it.
          server.process.unref();
          return;
        }
        if (Date.now() > deadline) {
          throw new Error(`PostgreSQL did not accept connections on 127.0.0.1:${this.port} within ${START_TIMEOUT_MS} ms; its log (${serverLog}):\n${tail(serverLog)}`);
        }
        await sleep(15);
      }
      const log = tail(serverLog);
      // Another process took the port between its release here and the server's bind.
      if (/could not bind|Address already in use/i.test(readFileSync(serverLog, 'utf8').slice(logStart)) && attempt < 5 && Date.now() < deadline) {
        await sleep(200);
        continue;
      }
      throw new Error(`PostgreSQL exited (${server.end}) before accepting connections; its log (${serverLog}):\n${log}`);
    }
  }
}

/** A program of the server, run by run(). */
interface Child {
  readonly process: ChildProcess;
  readonly stopSignal: 'SIGKILL' | 'SIGQUIT';
  /** Its exit code or signal once ended, else null. */
  end: number | string | null;
  readonly done: Promise<number | string>;
}

/**
 * Whether the postmaster `pid` of the cluster in `data` accepts connections: its
 * postmaster.pid says `ready` (what pg_ctl start --wait reads). No client library needed, so
 * the global setup does not load one.
 */
function acceptsConnections(data: string, pid: number | undefined): boolean {
  try {
    const lines = readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n');
    return Number(lines[0]) === pid && lines[7]?.trim() === 'ready';
  } catch {
    return false;
  }
}

async function withClient<T>(url: string, use: (client: Client) => Promise<T>): Promise<T> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

function databaseOf(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  if (!DATABASE_NAME.test(name)) throw new Error(`not a test database name: ${JSON.stringify(name)}`);
  return name;
}

/** Creates an empty database on the server of `adminUrl` (a superuser's URL); returns its URL. */
export async function createDatabaseAt(adminUrl: string, name = `t_${randomBytes(8).toString('hex')}`): Promise<string> {
  if (!DATABASE_NAME.test(name)) throw new Error(`database names here are lower-case letters, digits and _, at most 63: ${JSON.stringify(name)}`);
  await withClient(adminUrl, (client) => client.query(`CREATE DATABASE "${name}"`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops the database of `url` on the server of `adminUrl`, closing its connections. */
export async function dropDatabaseAt(adminUrl: string, url: string): Promise<void> {
  const admin = new URL(adminUrl);
  const target = new URL(url);
  if (target.host !== admin.host) throw new Error(`${target.host} is not the server of ${admin.host}`);
  const name = databaseOf(url);
  if (['postgres', 'template0', 'template1', databaseOf(adminUrl)].includes(name)) throw new Error(`refusing to drop ${name}`);
  await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

/** The shared server of this vitest run, if the global setup started one: from inject(), else the environment. */
async function sharedServer(): Promise<SharedPostgres | null> {
  if (process.env.VITEST) {
    const { inject } = await import('vitest');
    const provided = inject('carapacePostgres');
    if (provided) return provided;
  }
  const url = process.env[ENV_URL];
  return url ? { url, statusFile: process.env[ENV_STATUS] ?? '' } : null;
}

async function awaitStatus(statusFile: string): Promise<void> {
  if (!statusFile) return; // a server of one's own (CARAPACE_TEST_POSTGRES_URL by hand)
  const deadline = Date.now() + START_TIMEOUT_MS + 10_000;
  for (;;) {
    let status: string | null = null;
    try {
      status = readFileSync(statusFile, 'utf8');
    } catch {
      // not yet written
    }
    if (status?.startsWith('ready')) return;
    if (status?.startsWith('failed')) throw new Error(`the shared test PostgreSQL did not start: ${status.slice('failed\n'.length)}`);
    if (Date.now() > deadline) throw new Error(`the shared test PostgreSQL did not report its start in ${statusFile}`);
    await sleep(15);
  }
}

let server: Promise<string> | null = null;

/**
 * The superuser URL of the server for this process's tests: the vitest run's shared one
 * (waiting for its start), else a private TestPostgres started now and stopped when this
 * process exits (a test file run by plain tsx, or CARAPACE_TEST_POSTGRES=0).
 */
export function testPostgresServer(): Promise<string> {
  server ??= (async () => {
    const shared = await sharedServer();
    if (shared) {
      await awaitStatus(shared.statusFile);
      return shared.url;
    }
    return (await TestPostgres.start()).url;
  })();
  return server;
}

/** A new empty database for a test, on the shared server (see testPostgresServer). Throws, never skips, without PostgreSQL. */
export async function testPostgresDatabase(): Promise<TestDatabase> {
  const admin = await testPostgresServer();
  const url = await createDatabaseAt(admin);
  return { url, drop: () => dropDatabaseAt(admin, url) };
}
