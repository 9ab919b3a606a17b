// npm run bench:compare -- REV [--rounds N] [--only api,log] (issue 34): the request path of the
// working tree against a base revision in one command. REV is checked out in a worktree of its
// own (kept under the system's temporary directory for the next comparison), with this
// checkout's installed packages hard-linked in (npm ci there when the lockfiles differ); then
// `bench:api` (its GET and list rows) and `bench:log` run on each tree in turn, alternating
// which goes first, round after round in the same period, so that both meet the same machine.
// Printed: each figure's median per tree, and the working tree's figure ÷ REV's.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** One figure of a bench report: its name, its value, and whether more is better. */
export interface Figure {
  readonly name: string;
  readonly value: number;
  readonly higherIsBetter: boolean;
}

const number = (text: string | undefined): number => Number(String(text ?? '').replace(/,/g, '').trim());

/**
 * The figures of `bench:api`'s summary table: per scenario its ratio to the bare twin ("vs
 * bare", higher is better), its server CPU time per request and its p99 (lower is better).
 */
export function parseApiSummary(output: string): Figure[] {
  const lines = output.split('\n');
  const start = lines.findIndex((l) => l.startsWith('summary ('));
  if (start < 0) return [];
  const header = (lines[start + 1] ?? '').trim().split(/\s{2,}/);
  const col = (name: string) => header.indexOf(name);
  const figures: Figure[] = [];
  for (const line of lines.slice(start + 3)) {
    if (line.trim() === '') break;
    const cells = line.trim().split(/\s{2,}/);
    const scenario = cells[0] ?? '';
    const add = (column: string, suffix: string, higherIsBetter: boolean) => {
      const value = number(cells[col(column)]);
      if (col(column) >= 0 && Number.isFinite(value)) figures.push({ name: `${scenario} ${suffix}`, value, higherIsBetter });
    };
    add('vs bare', 'vs bare', true);
    add('µs/req', 'µs/req', false);
    add('p99 ms', 'p99 ms', false);
  }
  return figures;
}

/** The figures of `bench:log`'s report: lines/s reaching a follower, and its ratio to the bare stream. */
export function parseLogReport(output: string): Figure[] {
  const row = (label: string): string | undefined => {
    const line = output.split('\n').find((l) => l.startsWith(`| ${label} |`));
    return line?.split('|')[2];
  };
  const figures: Figure[] = [];
  const rate = number(row('lines/s reaching a follow client'));
  const ratio = number(row('ratio to baseline'));
  if (Number.isFinite(rate) && row('lines/s reaching a follow client') !== undefined) figures.push({ name: 'log follow lines/s', value: rate, higherIsBetter: true });
  if (Number.isFinite(ratio) && row('ratio to baseline') !== undefined) figures.push({ name: 'log follow vs bare stream', value: ratio, higherIsBetter: true });
  return figures;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The side-by-side table: each figure's median on both trees and the working tree's ÷ the base's. */
export function compareTable(rev: string, here: ReadonlyMap<string, number[]>, base: ReadonlyMap<string, number[]>, better: ReadonlyMap<string, boolean>): string {
  const rows = [['figure', 'working tree', rev, 'ratio', 'better is']];
  for (const [name, values] of here) {
    const theirs = base.get(name);
    if (!theirs?.length || !values.length) continue;
    const a = median(values);
    const b = median(theirs);
    rows.push([name, a.toFixed(3), b.toFixed(3), b === 0 ? '-' : (a / b).toFixed(3), better.get(name) ? 'higher' : 'lower']);
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ')).join('\n');
}

function git(cwd: string, args: string[]): string {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

function sh(cwd: string, argv: string[], env: NodeJS.ProcessEnv = process.env): { status: number; stdout: string } {
  const r = spawnSync(argv[0] as string, argv.slice(1), { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 });
  return { status: r.status ?? 1, stdout: r.stdout ?? '' };
}

/** A worktree of REV with this checkout's packages (hard links where the file system allows). */
function prepare(root: string, sha: string): string {
  const dir = join(tmpdir(), `carapace-compare-${sha.slice(0, 12)}`);
  if (!existsSync(join(dir, 'package.json'))) git(root, ['worktree', 'add', '--force', '--detach', dir, sha]);
  const packageDirs = ['.', ...['apps', 'libs'].flatMap((group) => (existsSync(join(root, group)) ? readdirSync(join(root, group)).map((d) => join(group, d)) : []))];
  for (const d of packageDirs) {
    const from = join(root, d, 'node_modules');
    const to = join(dir, d, 'node_modules');
    if (!existsSync(from) || existsSync(to) || !existsSync(join(dir, d))) continue;
    if (sh(root, ['cp', '-al', from, to]).status !== 0 && sh(root, ['cp', '-a', from, to]).status !== 0) throw new Error(`cannot copy ${from} to ${to}`);
  }
  const lock = (p: string) => (existsSync(join(p, 'package-lock.json')) ? readFileSync(join(p, 'package-lock.json'), 'utf8') : '');
  if (lock(root) !== lock(dir)) {
    process.stderr.write(`bench:compare: ${sha.slice(0, 12)} has other dependencies: npm ci there\n`);
    if (sh(dir, ['npm', 'ci', '--no-audit', '--no-fund']).status !== 0) throw new Error(`npm ci failed in ${dir}`);
  }
  return dir;
}

function main(): number {
  const args = process.argv.slice(2);
  const positional: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--rounds' || a === '--only') flags[a] = args[++i] ?? '';
    else positional.push(a);
  }
  const [rev] = positional;
  const rounds = Number(flags['--rounds'] ?? 3);
  const only = (flags['--only'] ?? 'api,log').split(',');
  if (!rev || positional.length !== 1 || !Number.isInteger(rounds) || rounds < 1 || only.some((b) => b !== 'api' && b !== 'log')) {
    process.stderr.write('usage: npm run bench:compare -- REV [--rounds N] [--only api,log]\n');
    return 2;
  }
  const root = resolve(import.meta.dirname, '../..');
  const sha = git(root, ['rev-parse', '--verify', `${rev}^{commit}`]);
  const base = prepare(root, sha);
  const trees: [string, string][] = [
    ['working tree', root],
    [rev, base],
  ];
  const results = new Map<string, Map<string, number[]>>(trees.map(([label]) => [label, new Map()]));
  const better = new Map<string, boolean>();
  const env = { ...process.env, BENCH_ONLY: 'get,users,servers', BENCH_ROUNDS: '1' };
  for (let round = 0; round < rounds; round++) {
    for (const [label, dir] of round % 2 === 0 ? trees : [...trees].reverse()) {
      for (const bench of only) {
        process.stderr.write(`bench:compare: round ${round + 1} of ${rounds}, bench:${bench} on ${label}\n`);
        const run = sh(dir, ['npm', 'run', '--silent', `bench:${bench}`], env);
        if (run.status !== 0) throw new Error(`bench:${bench} failed on ${label}`);
        const figures = bench === 'api' ? parseApiSummary(run.stdout) : parseLogReport(run.stdout);
        if (figures.length === 0) throw new Error(`bench:${bench} on ${label}: no figure found in its report`);
        for (const f of figures) {
          const by = results.get(label) as Map<string, number[]>;
          by.set(f.name, [...(by.get(f.name) ?? []), f.value]);
          better.set(f.name, f.higherIsBetter);
        }
      }
    }
  }
  process.stdout.write(`\nbench:compare: working tree against ${rev} (${sha.slice(0, 12)}), median of ${rounds} round(s), alternating which runs first\n\n`);
  process.stdout.write(`${compareTable(rev, results.get('working tree') as Map<string, number[]>, results.get(rev) as Map<string, number[]>, better)}\n`);
  process.stdout.write(`\nthe base's worktree is kept in ${base} (git worktree remove ${base} to drop it)\n`);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = main();
