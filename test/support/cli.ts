import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The `carapace` command as users run it. */
export const CLI_BIN = resolve(import.meta.dirname, '../../apps/cli/bin/carapace.js');

/** What a finished command printed and its exit status. */
export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of a command run. */
export interface CliRun {
  /** Environment variables added to a clean environment (no CARAPACE_* from outside). */
  readonly env?: Record<string, string>;
  /** Text written to stdin (stdin is closed either way). */
  readonly input?: string;
  readonly timeoutMs?: number;
}

let emptyConfigHome: string | null = null;

/**
 * The settings directory of this test process (empty at first), so that no session stored
 * on the machine running the tests (`carapace login`) reaches a command that does not name
 * its own XDG_CONFIG_HOME.
 */
function configHome(): string {
  emptyConfigHome ??= mkdtempSync(join(tmpdir(), 'carapace-cli-config-'));
  return emptyConfigHome;
}

function environment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('CARAPACE_') && !['EDITOR', 'VISUAL', 'NODE_EXTRA_CA_CERTS', 'COLUMNS'].includes(key)) env[key] = value;
  }
  return { ...env, XDG_CONFIG_HOME: configHome(), ...extra };
}

/** A command under way: its output so far, and its end. */
export class RunningCli {
  stdout = '';
  stderr = '';
  readonly done: Promise<CliResult>;
  private readonly listeners = new Set<() => void>();

  constructor(readonly child: ChildProcess, timeoutMs: number) {
    child.stdout?.on('data', (d: Buffer) => {
      this.stdout += d.toString();
      for (const l of this.listeners) l();
    });
    child.stderr?.on('data', (d: Buffer) => {
      this.stderr += d.toString();
      for (const l of this.listeners) l();
    });
    this.done = new Promise((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`carapace ${child.spawnargs.slice(2).join(' ')} did not end within ${timeoutMs} ms; stderr: ${this.stderr}`));
      }, timeoutMs);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolvePromise({ code, stdout: this.stdout, stderr: this.stderr });
      });
    });
  }

  /** Waits until stdout or stderr (`which`) matches `pattern`. */
  async waitFor(pattern: RegExp, which: 'stdout' | 'stderr' = 'stdout', timeoutMs = 15_000): Promise<void> {
    if (pattern.test(this[which])) return;
    await new Promise<void>((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(check);
        reject(new Error(`no ${String(pattern)} on ${which} within ${timeoutMs} ms: ${this[which]}`));
      }, timeoutMs);
      const check = () => {
        if (!pattern.test(this[which])) return;
        clearTimeout(timer);
        this.listeners.delete(check);
        resolvePromise();
      };
      this.listeners.add(check);
    });
  }
}

/** Starts `carapace args...` as a subprocess. */
export function startCli(args: readonly string[], run: CliRun = {}): RunningCli {
  const child = spawn(process.execPath, [CLI_BIN, ...args], { env: environment(run.env), stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin?.end(run.input ?? '');
  return new RunningCli(child, run.timeoutMs ?? 60_000);
}

/** Runs `carapace args...` to its end. */
export function runCli(args: readonly string[], run: CliRun = {}): Promise<CliResult> {
  return startCli(args, run).done;
}

/**
 * Makes sure the command is built before the tests time it: the first run of the bin
 * builds what is out of date (under the bin's own lock, so parallel test files build once).
 */
export async function buildCli(): Promise<void> {
  const result = await runCli(['--version'], { timeoutMs: 300_000 });
  if (result.code !== 0) throw new Error(`carapace --version failed (${String(result.code)}): ${result.stderr}`);
}

/** Parses the JSON a command printed. */
export function parsed(result: CliResult): any {
  try {
    return JSON.parse(result.stdout);
  } catch {
    throw new Error(`stdout is not JSON (exit ${String(result.code)}): ${result.stdout}\nstderr: ${result.stderr}`);
  }
}
