/**
 * Low-level helpers of the lab: running commands, inter-process locks, processes, mounts and
 * cgroups. Linux only, meant to run as root. Node built-ins only.
 */
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import type { Dirent } from 'node:fs';
import { access, mkdir, readdir, readFile, rmdir, writeFile, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** What a finished command produced. */
export interface RunResult {
  stdout: string;
  stderr: string;
  /** Exit code, or null when the command was ended by a signal. */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunOptions {
  /** Written to the command's stdin (stdin is closed either way). */
  input?: string;
  /** Kill the command (SIGKILL; its whole process group when `detached`) after this long. */
  timeoutMs?: number;
  /** Throw a {@link CommandError} when the command does not exit with 0 (default true). */
  check?: boolean;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Run in a new process group, so that a timeout kills the command's children too. */
  detached?: boolean;
  /** Keep at most this many characters of each of stdout and stderr (the tail; default 4 MiB). */
  maxOutput?: number;
  /** Called with the command's pid once it runs. */
  onSpawn?: (pid: number) => void;
}

/** A command that failed (non-zero exit, signal or timeout). */
export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly result: RunResult,
    readonly timedOut: boolean,
  ) {
    const how = timedOut
      ? 'timed out'
      : result.signal
        ? `was killed by ${result.signal}`
        : `exited with ${String(result.exitCode)}`;
    const details = [tail(result.stderr, 30), tail(result.stdout, 10)].filter((s) => s.trim() !== '');
    super(`command ${how}: ${command}${details.length ? `\n${details.join('\n---\n')}` : ''}`);
    this.name = 'CommandError';
  }
}

/** Quotes `s` for a POSIX shell. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The last `lines` lines of `text`. */
export function tail(text: string, lines: number): string {
  const all = text.replace(/\s+$/, '').split('\n');
  return all.slice(Math.max(0, all.length - lines)).join('\n');
}

/** Runs `cmd args` without a shell and collects its output. */
export function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const max = opts.maxOutput ?? 4 * 1024 * 1024;
  const commandLine = [cmd, ...args].map(shellQuote).join(' ');
  return new Promise<RunResult>((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      detached: opts.detached ?? false,
    });
    if (child.pid !== undefined) opts.onSpawn?.(child.pid);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      stdout += d;
      if (stdout.length > 2 * max) stdout = stdout.slice(-max);
    });
    child.stderr.on('data', (d: string) => {
      stderr += d;
      if (stderr.length > 2 * max) stderr = stderr.slice(-max);
    });
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            try {
              if (opts.detached && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
              else child.kill('SIGKILL');
            } catch {
              // already gone
            }
          }, opts.timeoutMs);
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (timer) clearTimeout(timer);
      if (err.code === 'ENOENT') reject(new Error(`command not found: ${cmd} (needed to run: ${commandLine})`));
      else reject(err);
    });
    child.on('close', (exitCode, signal) => {
      if (timer) clearTimeout(timer);
      const result: RunResult = { stdout: stdout.slice(-max), stderr: stderr.slice(-max), exitCode, signal };
      if ((opts.check ?? true) && (exitCode !== 0 || timedOut)) reject(new CommandError(commandLine, result, timedOut));
      else resolve(result);
    });
    child.stdin.on('error', () => {
      // the command may exit without reading its input
    });
    child.stdin.end(opts.input ?? '');
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function exists(path: string): Promise<boolean> {
  try {
    await access(path, fsConstants.F_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether `cmd` is an executable on the PATH (or an absolute path to one). */
export async function which(cmd: string): Promise<string | undefined> {
  const dirs = cmd.includes('/') ? [''] : (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':');
  for (const d of [...dirs, '/usr/sbin', '/sbin']) {
    const p = d === '' ? cmd : join(d, cmd);
    try {
      await access(p, fsConstants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  return undefined;
}

/** Writes `data` to `path` atomically (temporary file, then rename). */
export async function writeFileAtomic(path: string, data: string, mode = 0o644): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  await writeFile(tmp, data, { mode });
  await rename(tmp, path);
}

// ---------------------------------------------------------------------------------------------
// Locks

/** A held lock; `release()` may be called more than once. */
export interface HeldLock {
  release(): Promise<void>;
}

/**
 * Takes an exclusive `flock(2)` on `path`, held by a `flock` child process for as long as we
 * keep its stdin open. The kernel drops the lock when that process ends, which it does as soon
 * as this process ends (its stdin closes): a crashed test never leaves a stale lock behind.
 */
export async function acquireFileLock(path: string, timeoutMs: number, what: string): Promise<HeldLock> {
  await mkdir(dirname(path), { recursive: true });
  const waitSeconds = String(Math.max(1, Math.ceil(timeoutMs / 1000)));
  const child = spawn('flock', ['--exclusive', '--wait', waitSeconds, path, '--command', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.on('error', () => {
    // flock already gone
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      out += d;
      if (out.includes('locked')) resolve();
    });
    child.stderr.on('data', (d: string) => (err += d));
    child.on('error', (e) => reject(new Error(`cannot run flock for ${what}: ${e.message}`)));
    child.on('exit', (code) => {
      if (!out.includes('locked'))
        reject(new Error(`timed out after ${waitSeconds}s waiting for the lock ${path} (${what}) [flock exit ${String(code)}] ${err.trim()}`));
    });
  });
  let released: Promise<void> | undefined;
  return {
    release(): Promise<void> {
      released ??= new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
      });
      return released;
    },
  };
}

/** Runs `fn` while holding the lock `path`. */
export async function withFileLock<T>(path: string, timeoutMs: number, what: string, fn: () => Promise<T>): Promise<T> {
  const lock = await acquireFileLock(path, timeoutMs, what);
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}

// ---------------------------------------------------------------------------------------------
// Processes

interface ProcStat {
  state: string;
  ppid: number;
  startTime: string;
}

async function procStat(pid: number): Promise<ProcStat | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid ..." — comm may contain spaces and parentheses.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const [state, ppid] = fields;
  const startTime = fields[19];
  if (state === undefined || ppid === undefined || startTime === undefined) return undefined;
  return { state, ppid: Number(ppid), startTime };
}

/** The kernel's start time of `pid` (clock ticks since boot): with the pid, identifies a process. */
export async function processStartTime(pid: number): Promise<string | undefined> {
  return (await procStat(pid))?.startTime;
}

/** Whether `pid` is a live (not zombie) process, and the same one that had `startTime` if given. */
export async function processAlive(pid: number, startTime?: string): Promise<boolean> {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const st = await procStat(pid);
  if (!st || st.state === 'Z' || st.state === 'X') return false;
  return startTime === undefined || st.startTime === startTime;
}

/** Sends `signal` to `pid`, ignoring a process that is already gone. */
export function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone
  }
}

/** Waits until `pid` (with `startTime`) is gone; false on timeout. */
export async function waitForExit(pid: number, startTime: string | undefined, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (await processAlive(pid, startTime)) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

/** The direct children of `pid`. */
export async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = await readdir(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tasks) {
    try {
      const text = await readFile(`/proc/${pid}/task/${t}/children`, 'utf8');
      for (const c of text.trim().split(/\s+/)) if (c) out.push(Number(c));
    } catch {
      // task gone
    }
  }
  return out;
}

/** Whether `pid` is PID 1 of a PID namespace nested in ours (a container's init). */
export async function isPidNamespaceInit(pid: number): Promise<boolean> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const ns = /^NSpid:\s+(.*)$/m.exec(status)?.[1]?.trim().split(/\s+/) ?? [];
    return ns.length > 1 && ns[ns.length - 1] === '1';
  } catch {
    return false;
  }
}

/** The pids of all processes, with their argv. */
export async function listProcesses(): Promise<{ pid: number; argv: string[] }[]> {
  const out: { pid: number; argv: string[] }[] = [];
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const raw = await readFile(`/proc/${e}/cmdline`, 'utf8');
      if (raw) out.push({ pid: Number(e), argv: raw.replace(/\0$/, '').split('\0') });
    } catch {
      // gone
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Mounts

function unescapeMountField(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

export interface MountEntry {
  mountPoint: string;
  fsType: string;
  source: string;
  superOptions: string;
}

/** The mounts of this process's mount namespace. */
export async function listMounts(): Promise<MountEntry[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    const [left, right] = line.split(' - ');
    const l = left?.split(' ') ?? [];
    const r = right?.split(' ') ?? [];
    const mountPoint = l[4];
    if (mountPoint === undefined) continue;
    out.push({
      mountPoint: unescapeMountField(mountPoint),
      fsType: r[0] ?? '',
      source: unescapeMountField(r[1] ?? ''),
      superOptions: r[2] ?? '',
    });
  }
  return out;
}

/** Mount points at or below `path`, deepest first. */
export async function mountsUnder(path: string): Promise<string[]> {
  const base = path.replace(/\/+$/, '');
  const points = (await listMounts())
    .map((m) => m.mountPoint)
    .filter((p) => p === base || p.startsWith(`${base}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Unmounts everything at or below `path` (lazily if a plain unmount fails). */
export async function unmountUnder(path: string): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const points = await mountsUnder(path);
    if (points.length === 0) return;
    for (const p of points) {
      const r = await run('umount', [p], { check: false });
      if (r.exitCode !== 0) await run('umount', ['--lazy', p], { check: false });
    }
  }
  const left = await mountsUnder(path);
  if (left.length) throw new Error(`cannot unmount ${left.join(', ')}`);
}

/** Deletes `path` recursively after unmounting anything below it; never crosses into other file systems. */
export async function removeTree(path: string): Promise<void> {
  if (!(await exists(path))) return;
  await unmountUnder(path);
  await run('rm', ['-rf', '--one-file-system', path]);
}

// ---------------------------------------------------------------------------------------------
// cgroups

/**
 * A `sh -c` script that moves itself into the cgroups whose `cgroup.procs` files are listed in
 * `$CARLAB_CGROUP_PROCS`, then execs its arguments. systemd-nspawn with `--keep-unit` (needed
 * where systemd is not PID 1) puts the container into `payload/` below its own cgroup: without
 * a cgroup of its own per container, concurrent containers would share one.
 */
export const CGROUP_WRAPPER = 'for f in $CARLAB_CGROUP_PROCS; do echo $$ > "$f" || exit 97; done; exec "$@"';

/**
 * The cgroup hierarchies a container's processes must be placed in: the unified (v2) root on a
 * pure cgroup v2 machine; otherwise the `name=systemd` v1 hierarchy and the unified one if mounted.
 */
export async function cgroupRoots(): Promise<string[]> {
  if (await exists('/sys/fs/cgroup/cgroup.controllers')) return ['/sys/fs/cgroup'];
  const roots: string[] = [];
  for (const r of ['/sys/fs/cgroup/systemd', '/sys/fs/cgroup/unified'])
    if (await exists(join(r, 'cgroup.procs'))) roots.push(r);
  return roots;
}

/** Pids in cgroup `dir` and all cgroups below it. */
export async function cgroupPids(dir: string): Promise<number[]> {
  const out: number[] = [];
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  try {
    const text = await readFile(join(dir, 'cgroup.procs'), 'utf8');
    for (const p of text.split('\n')) if (p) out.push(Number(p));
  } catch {
    // removed meanwhile
  }
  for (const e of entries) if (e.isDirectory()) out.push(...(await cgroupPids(join(dir, e.name))));
  return out;
}

/** Removes cgroup `dir` and all cgroups below it (they must hold no process). */
export async function removeCgroupTree(dir: string): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) await removeCgroupTree(join(dir, e.name));
  for (let i = 0; ; i++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (i >= 50) throw new Error(`cannot remove cgroup ${dir}: ${String(code)}`);
      await sleep(100);
    }
  }
}

/** SIGKILLs every process in the cgroups `dirs` (recursively) until they are empty. */
export async function killCgroups(dirs: readonly string[], timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = (await Promise.all(dirs.map((d) => cgroupPids(d)))).flat();
    if (pids.length === 0) return;
    if (Date.now() > deadline) throw new Error(`processes ${pids.join(' ')} in ${dirs.join(', ')} survive SIGKILL`);
    for (const p of pids) signalProcess(p, 'SIGKILL');
    await sleep(100);
  }
}
