#!/usr/bin/env node
// Runs the carapace command from its compiled output. From a source checkout (TypeScript
// present), it first rebuilds the command and the libraries it uses when one of their
// source files is newer than their last build; a lock makes parallel runs build only once.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const project = resolve(here, '..');
const entry = join(project, 'dist', 'main.js');
const baseConfig = resolve(project, '../../tsconfig.base.json');

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

/** The project and the projects it references, recursively. */
function projects(dir, seen = new Set()) {
  if (seen.has(dir)) return seen;
  seen.add(dir);
  const config = JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8'));
  for (const ref of config.references ?? []) projects(resolve(dir, ref.path), seen);
  return seen;
}

function stale() {
  try {
    for (const dir of projects(project)) {
      const built = newest(join(dir, 'dist', '.tsbuildinfo'));
      const sources = Math.max(newest(join(dir, 'src')), newest(join(dir, 'tsconfig.json')), newest(join(dir, 'package.json')), newest(baseConfig));
      if (built === 0 || sources > built) return true;
    }
    return false;
  } catch {
    return true;
  }
}

async function withLock(fn) {
  const lock = join(project, 'dist', '.build.lock');
  mkdirSync(dirname(lock), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      if (Date.now() - newest(lock) > 5 * 60_000) rmSync(lock, { recursive: true, force: true });
      else await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

if (existsSync(baseConfig) && stale()) {
  let tsc = null;
  try {
    tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  } catch {
    // A production install without TypeScript runs what is already built.
  }
  if (tsc) {
    await withLock(() => {
      if (!stale()) return;
      try {
        // The compiler's messages go to stderr: stdout is the command's answer.
        execFileSync(process.execPath, [tsc, '-b', join(project, 'tsconfig.json')], { stdio: ['ignore', 2, 2] });
      } catch {
        process.stderr.write('carapace: building the command failed (see above).\n');
        process.exit(70);
      }
    });
  }
}
if (!existsSync(entry)) {
  process.stderr.write('carapace: not built, and TypeScript is not installed to build it (run npm ci).\n');
  process.exit(70);
}
process.stdout.on('error', (err) => {
  // The reader went away (`carapace execution log ID | head`): nothing more to say.
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});
const { main } = await import(entry);
process.exitCode = await main(process.argv.slice(2));
