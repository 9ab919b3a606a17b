import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/** Root of the package (libs/cloud-init). */
export const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Committed test fixtures. */
export const FIXTURES_DIR = join(PACKAGE_DIR, 'test', 'fixtures');

/** A real ed25519 public key (its private half was thrown away). */
export const PUBLIC_KEY =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKNHnK5Kby7sl+qRyz3xP3nKZ2A9cS9fdbm+DtJHWpZI carapace@test';

/** A self-signed CA certificate used by the golden variants (its key was thrown away). */
export const GOLDEN_CA = readFileSync(join(FIXTURES_DIR, 'test-ca.pem'), 'utf8');

/** Result of a finished child process. */
export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command without blocking the event loop (the tests' HTTP servers live in this
 * process). Rejects if the command cannot be started (e.g. it is not installed).
 */
export function run(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 25_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** One entry of `write_files`. */
export interface WrittenFile {
  path: string;
  owner?: string;
  permissions?: string;
  content: string;
}

/** Parses user-data the way cloud-init's PyYAML does (YAML 1.1). */
export function parseUserData(text: string): Record<string, unknown> {
  return parse(text, { version: '1.1' }) as Record<string, unknown>;
}

/** The `write_files` entries of generated user-data, by path. */
export function writtenFiles(text: string): Map<string, WrittenFile> {
  const files = (parseUserData(text).write_files ?? []) as WrittenFile[];
  return new Map(files.map((file) => [file.path, file]));
}
