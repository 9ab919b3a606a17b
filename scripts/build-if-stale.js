// Builds TypeScript projects of a source checkout when one of their inputs is newer than their
// last build. The programs of a checkout (npm start, the embedded runner, npx carapace) import
// this before they start from their compiled output, so no separate build step is needed and a
// start with nothing changed costs a few stat() calls instead of a compiler run (an up-to-date
// `tsc -b` still takes a second or more). Inputs: each project's src/, tsconfig.json and
// package.json, tsconfig.base.json, the build config and package-lock.json (a dependency
// change). Builds are serialized by a lock (a directory holding the builder's pid) so that
// parallel starts build once. Not part of any published package: it only exists in a checkout.
//
// The web UI (apps/ui) is built the same way by `buildUiIfStale`, with Vite instead of tsc:
// inputs are its src/, public/, index.html, configs and package.json, the sources of the
// workspace libraries it imports (Vite bundles them from source) and package-lock.json; the
// build's time is that of dist/index.html, which Vite writes last.
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const LOCK = join(root, 'node_modules', '.cache', 'carapace', 'build.lock');
const STALE_LOCK_MS = 10 * 60_000;
/** The web UI's workspace. */
export const UI_DIR = join(root, 'apps', 'ui');

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

/** The directories of the `@carapace/*` workspaces `dir`'s package depends on, recursively. */
function workspaceDeps(dir, seen = new Set()) {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  for (const name of Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })) {
    if (!name.startsWith('@carapace/')) continue;
    let target;
    try {
      target = realpathSync(join(root, 'node_modules', name));
    } catch {
      continue;
    }
    if (seen.has(target)) continue;
    seen.add(target);
    workspaceDeps(target, seen);
  }
  return seen;
}

/** True when the UI in `uiDir` has no build yet or one of its inputs changed after it. */
export function isUiStale(uiDir = UI_DIR) {
  try {
    const built = newest(join(uiDir, 'dist', 'index.html'));
    if (built === 0) return true;
    let inputs = newest(join(root, 'package-lock.json'));
    for (const name of ['src', 'public', 'index.html', 'package.json', 'tsconfig.json', 'vite.config.ts']) inputs = Math.max(inputs, newest(join(uiDir, name)));
    for (const dep of workspaceDeps(uiDir)) inputs = Math.max(inputs, newest(join(dep, 'src')), newest(join(dep, 'package.json')));
    return inputs > built;
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

/** Runs `node args` as a build step; a signal meanwhile stops it, frees the lock and ends the process. */
async function runBuild(args, { cwd = root, output = 'inherit' } = {}) {
  const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', output === 'stderr' ? 2 : 'inherit', 'inherit'] });
  const onSignal = (signal) => {
    child.kill(signal);
    rmSync(LOCK, { recursive: true, force: true });
    process.kill(process.pid, signal);
  };
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of signals) process.once(s, onSignal);
  const code = await new Promise((r) => child.on('close', (c) => r(c)));
  for (const s of signals) process.removeListener(s, onSignal);
  return code;
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
    const code = await runBuild([tsc, '-b', configFile], { output });
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

/**
 * Builds the web UI (`vite build` in `uiDir`) when it is stale, as `buildIfStale` does for
 * TypeScript: resolves with 'fresh', 'built', 'no-compiler' (Vite is not installed: a
 * production install serves what is built) or 'absent' (no UI workspace); rejects when the
 * build fails.
 */
export async function buildUiIfStale({ uiDir = UI_DIR, output = 'inherit', onBuild } = {}) {
  let pkg;
  try {
    pkg = statSync(join(uiDir, 'package.json'));
  } catch {
    return 'absent';
  }
  if (!pkg.isFile() || !isUiStale(uiDir)) return 'fresh';
  let vite;
  try {
    const require = createRequire(join(uiDir, 'package.json'));
    vite = join(dirname(require.resolve('vite/package.json')), 'bin', 'vite.js');
  } catch {
    return 'no-compiler';
  }
  await acquireLock();
  try {
    if (!isUiStale(uiDir)) return 'fresh';
    onBuild?.();
    const code = await runBuild([vite, 'build', '--logLevel', 'warn'], { cwd: uiDir, output });
    if (code !== 0) throw new Error(`vite build in ${uiDir} failed (exit code ${code})`);
    return 'built';
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
