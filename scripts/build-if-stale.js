// Builds TypeScript projects of a source checkout when one of their inputs is newer than their
// last build. The programs of a checkout (npm start, the embedded runner, npx carapace) import
// this before they start from their compiled output, so no separate build step is needed and a
// start with nothing changed costs a few stat() calls instead of a compiler run (an up-to-date
// `tsc -b` still takes a second or more). Inputs: each project's src/, tsconfig.json and
// package.json, tsconfig.base.json, the build config and package-lock.json (a dependency
// change). Builds are serialized by a lock (a directory holding the builder's pid) so that
// parallel starts build once. Not part of any published package: it only exists in a checkout.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const LOCK = join(root, 'node_modules', '.cache', 'carapace', 'build.lock');
const STALE_LOCK_MS = 10 * 60_000;

/** The newest modification time under `path` (0 if it does not exist). */
function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let max = stat.mtimeMs;
  for (const name of readdirSync(path)) max = Math.max(max, newest(join(path, name)));
  return max;
}

/** The directories of the projects `configFile` is or references, recursively. */
function projectDirs(configFile, seen = new Set()) {
  const dir = dirname(configFile);
  const config = JSON.parse(readFileSync(configFile, 'utf8'));
  if (config.include && !seen.has(dir)) seen.add(dir);
  for (const ref of config.references ?? []) {
    const target = resolve(dir, ref.path);
    const file = target.endsWith('.json') ? target : join(target, 'tsconfig.json');
    if (!seen.has(dirname(file))) projectDirs(file, seen);
  }
  return seen;
}

/** True when a project has no build yet or one of the inputs changed after it. */
export function isStale(configFile) {
  try {
    const dirs = [...projectDirs(configFile)];
    let built = Infinity;
    let inputs = Math.max(newest(configFile), newest(join(root, 'tsconfig.base.json')), newest(join(root, 'package-lock.json')));
    for (const dir of dirs) {
      built = Math.min(built, newest(join(dir, 'dist', '.tsbuildinfo')));
      inputs = Math.max(inputs, newest(join(dir, 'src')), newest(join(dir, 'tsconfig.json')), newest(join(dir, 'package.json')));
    }
    return built === 0 || inputs > built;
  } catch {
    return true;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

async function acquireLock() {
  mkdirSync(dirname(LOCK), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      return;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
    }
    let holder = NaN;
    try {
      holder = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
    } catch {
      // Just created, pid not written yet.
    }
    const abandoned = (Number.isInteger(holder) && holder > 0 && !alive(holder)) || Date.now() - newest(LOCK) > STALE_LOCK_MS;
    if (abandoned) rmSync(LOCK, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Builds `configFile` (a tsconfig with references) with `tsc -b` when it is stale. Resolves
 * with 'fresh' (nothing to do), 'built', or 'no-compiler' (TypeScript is not installed: a
 * production install runs what is built); rejects when the compiler fails. `output` is where the
 * compiler's messages go ('inherit', or 'stderr' for a command whose stdout is its answer).
 * A signal during the build stops the compiler, frees the lock and ends the process.
 */
export async function buildIfStale(configFile, { output = 'inherit', onBuild } = {}) {
  if (!isStale(configFile)) return 'fresh';
  let tsc;
  try {
    tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
  } catch {
    return 'no-compiler';
  }
  await acquireLock();
  try {
    if (!isStale(configFile)) return 'fresh';
    onBuild?.();
    const child = spawn(process.execPath, [tsc, '-b', configFile], { stdio: ['ignore', output === 'stderr' ? 2 : 'inherit', 'inherit'] });
    const onSignal = (signal) => {
      child.kill(signal);
      rmSync(LOCK, { recursive: true, force: true });
      process.kill(process.pid, signal);
    };
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    for (const s of signals) process.once(s, onSignal);
    const code = await new Promise((r) => child.on('close', (c) => r(c)));
    for (const s of signals) process.removeListener(s, onSignal);
    if (code !== 0) throw new Error(`tsc -b ${configFile} failed (exit code ${code})`);
    // tsc -b leaves an up-to-date project's outputs alone even when an input that is not its
    // own (package-lock.json) changed: mark them built now so the next start is cheap.
    const now = new Date();
    for (const dir of projectDirs(configFile)) utimesSync(join(dir, 'dist', '.tsbuildinfo'), now, now);
    return 'built';
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
