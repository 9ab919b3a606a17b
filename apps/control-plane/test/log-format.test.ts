import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../bin/carapace-control-plane.js');
const ESC = String.fromCharCode(27);

describe('the log format of carapace-control-plane and its embedded runner', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-log-format-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('with CARAPACE_LOG_FORMAT=pretty, both write coloured lines on the shared stdout (a pipe here), to the last line', async () => {
    const { CARAPACE_RUNNER_LOG_FORMAT: _inherited, ...env } = process.env;
    const child = spawn(process.execPath, [BIN], {
      env: {
        ...env,
        CARAPACE_DATA_DIR: dir,
        CARAPACE_HTTP_PORT: '0',
        CARAPACE_GRPC_PORT: '0',
        CARAPACE_RUNNER: 'embedded',
        CARAPACE_ADMIN_PASSWORD: 'log-format-password',
        CARAPACE_LOG_FORMAT: 'pretty',
        CARAPACE_RUNNER_DRAIN_GRACE_MS: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', r));
    // The runner's own line: with its stdout a pipe it would choose JSON by itself.
    await new Promise<void>((resolveConnected, reject) => {
      const timer = setTimeout(() => reject(new Error(`the runner did not connect; stderr: ${stderr}; stdout: ${stdout}`)), 120_000);
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (stdout.includes('connected to the control plane')) {
          clearTimeout(timer);
          resolveConnected();
        }
      });
      void exited.then((code) => reject(new Error(`exited with ${code}; stderr: ${stderr}`)));
    });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    for (const line of lines) {
      expect(line.startsWith('{'), line).toBe(false);
      expect(line).toContain(ESC);
    }
    expect(lines.find((l) => l.includes('connected to the control plane'))).toContain('"runner":"embedded"');
    expect(lines.find((l) => l.includes('runner stopped'))).toContain('"runner":"embedded"');
    expect(lines.at(-1)).toContain('stopped');
  }, 180_000);
});
