import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../bin/carapace-control-plane.js');

/** Starts the real command on port 0 and resolves with its URL once it listens. */
function start(dataDir: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN], {
    env: { ...process.env, CARAPACE_DATA_DIR: dataDir, CARAPACE_HTTP_PORT: '0', CARAPACE_RUNNER: 'none', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line; stderr: ${stderr}`)), 90_000);
    child.on('exit', (code) => reject(new Error(`exited with ${code}; stderr: ${stderr}`)));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const url = /"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/.exec(line)?.[1];
      if (url) {
        clearTimeout(timer);
        resolvePromise({ child, url, stderr: () => stderr });
      }
    });
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolvePromise) => {
    child.removeAllListeners('exit');
    child.on('exit', (code) => resolvePromise(code));
    child.kill('SIGTERM');
  });
}

describe('carapace-control-plane command', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-start-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates root with a generated password shown once, serves the API, and stops cleanly on SIGTERM', async () => {
    const first = await start(dir);
    const file = join(dir, 'initial-admin-password');
    const password = readFileSync(file, 'utf8').trim();
    expect(password.length).toBeGreaterThanOrEqual(16);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.stderr()).toContain(password);
    const info = await fetch(`${first.url}/v1/info/`);
    expect(info.status).toBe(200);
    const login = await fetch(`${first.url}/v1/auth/`, { method: 'POST', body: JSON.stringify({ username: 'root', password }) });
    expect(login.status).toBe(200);
    // The web UI, built by the start when it was stale, at / and at its client-side routes.
    for (const path of ['/', '/password_reset/some-token/']) {
      const page = await fetch(`${first.url}${path}`);
      expect(page.status, path).toBe(200);
      expect(page.headers.get('content-type'), path).toBe('text/html; charset=utf-8');
      expect(await page.text(), path).toContain('<div id="root">');
    }
    expect(await stop(first.child)).toBe(0);

    const second = await start(dir);
    expect(second.stderr()).not.toContain(password);
    // A warm start builds nothing: neither the TypeScript nor the web UI.
    expect(second.stderr()).not.toContain('building');
    const again = await fetch(`${second.url}/v1/auth/`, { method: 'POST', body: JSON.stringify({ username: 'root', password }) });
    expect(again.status).toBe(200);
    expect(await stop(second.child)).toBe(0);
  }, 180_000);

  it('runs one embedded runner, as npm start does: it connects with its own key pair and stops with the control plane', async () => {
    const data = mkdtempSync(join(tmpdir(), 'carapace-start-embedded-'));
    try {
      const cp = await start(data, { CARAPACE_RUNNER: 'embedded', CARAPACE_GRPC_PORT: '0', CARAPACE_ADMIN_PASSWORD: 'embedded-admin-password' });
      const login = await fetch(`${cp.url}/v1/auth/`, { method: 'POST', body: JSON.stringify({ username: 'root', password: 'embedded-admin-password' }) });
      const token = ((await login.json()) as { id: string }).id;
      let embedded: { state: string; ssh_public_key: string | null } | undefined;
      for (let i = 0; i < 240 && embedded?.state !== 'connected'; i++) {
        await new Promise((r) => setTimeout(r, 250));
        const list = (await (await fetch(`${cp.url}/v1/runner/`, { headers: { authorization: token } })).json()) as { items: { name: string; state: string; ssh_public_key: string | null }[] };
        embedded = list.items.find((r) => r.name === 'embedded');
      }
      expect(embedded?.state).toBe('connected');
      const publicKey = readFileSync(join(data, 'runner', 'id_ed25519.pub'), 'utf8').trim();
      expect(publicKey).toMatch(/^ssh-ed25519 /);
      expect(embedded?.ssh_public_key).toBe(publicKey);
      expect(statSync(join(data, 'runner', 'id_ed25519')).mode & 0o777).toBe(0o600);
      expect(await stop(cp.child)).toBe(0);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  }, 180_000);

  it('never leaves its embedded runner behind: killed with SIGKILL, the runner sees its stdin close, drains and exits', async () => {
    const data = mkdtempSync(join(tmpdir(), 'carapace-start-lifeline-'));
    let runnerPid = 0;
    try {
      const cp = await start(data, { CARAPACE_RUNNER: 'embedded', CARAPACE_GRPC_PORT: '0', CARAPACE_ADMIN_PASSWORD: 'embedded-admin-password' });
      let stdout = '';
      cp.child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
      const login = await fetch(`${cp.url}/v1/auth/`, { method: 'POST', body: JSON.stringify({ username: 'root', password: 'embedded-admin-password' }) });
      const token = ((await login.json()) as { id: string }).id;
      let state: string | undefined;
      for (let i = 0; i < 240 && state !== 'connected'; i++) {
        await new Promise((r) => setTimeout(r, 250));
        const list = (await (await fetch(`${cp.url}/v1/runner/`, { headers: { authorization: token } })).json()) as { items: { name: string; state: string }[] };
        state = list.items.find((r) => r.name === 'embedded')?.state;
      }
      expect(state).toBe('connected');
      const children = readFileSync(`/proc/${cp.child.pid}/task/${cp.child.pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
      runnerPid = children.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('carapace-runner.js')) ?? 0;
      expect(runnerPid).toBeGreaterThan(0);
      cp.child.removeAllListeners('exit');
      cp.child.kill('SIGKILL');
      const gone = () => {
        try {
          return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${runnerPid}/stat`, 'utf8'));
        } catch {
          return true;
        }
      };
      for (let i = 0; i < 150 && !gone(); i++) await new Promise((r) => setTimeout(r, 100));
      expect(gone()).toBe(true);
      expect(stdout).toContain('"signal":"stdin closed","msg":"draining, then stopping"');
      expect(stdout).toContain('"msg":"runner stopped"');
    } finally {
      // Only after a failure above.
      if (runnerPid && existsSync(`/proc/${runnerPid}`)) process.kill(runnerPid, 'SIGKILL');
      rmSync(data, { recursive: true, force: true });
    }
  }, 180_000);

  it('refuses a bad configuration with a clear message and exit code 2', async () => {
    const child = spawn(process.execPath, [BIN], { env: { ...process.env, CARAPACE_HTTP_PORT: 'nope' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(stderr).toContain('CARAPACE_HTTP_PORT');
  }, 120_000);
});
