// An online backup of a busy installation, end to end: a control plane and a runner as real
// processes, a lab host that joined by itself, hello_world runs streaming steps and logs. The
// backup (`carapace-control-plane backup FILE`, a process of its own) is taken while they
// run, with requests timed around it; it restores (`restore FILE`) into a new data
// directory, a control plane starts on it, and everything the API had answered before the
// backup started is there: models, versions, steps, log lines.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '@carapace/control-plane';
import { controlPlaneAccess, discoverLab } from '../lab/discover.js';
import { ensureBridge, generateKeyPair, LAB_GATEWAY, type Lab } from '../lab/lab.js';
import { ADMIN_PASSWORD, Api, CONTROL_PLANE_BIN, ControlPlane, DISCOVERY_TOKEN, startRunner, type Proc } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

type Json = Record<string, any>;
const run = promisify(execFile);

/** A history that makes the database weigh what a used installation does (~40 MB of old log). */
async function seedHistory(dataDir: string): Promise<void> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = await openDatabase(join(dataDir, 'carapace.db'));
  const line = `${'x'.repeat(1990)}\n`;
  await db.transaction(async () => {
    for (let i = 0; i < 20_000; i++) {
      await db.run(sql`INSERT INTO execution_log_chunks (execution_id, "offset", text) VALUES ('00000000-0000-4000-8000-0000000000aa', ${i * line.length}, ${line})`);
    }
  });
  await db.close();
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

describe('an online backup of a busy installation restores everything acknowledged before it', { timeout: 300_000 }, () => {
  let dir: string;
  let lab: Lab;
  let cp: ControlPlane;
  let restoredCp: ControlPlane | null = null;
  let api: Api;
  let runner: Proc;
  let clusterId: string;
  let server: Json;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-e2e-backup-'));
    const key = await generateKeyPair(dir);
    await ensureBridge();
    const dataDir = join(dir, 'live');
    await seedHistory(dataDir);
    cp = await ControlPlane.start({ dataDir, httpHost: LAB_GATEWAY, runner: 'none' });
    api = new Api(cp.url);
    await api.login();
    const token = (await api.ok('POST', '/v1/runner/', { name: 'backup-runner', labels: { site: 'lab' } })).token as string;
    runner = await startRunner({ controlPlane: cp.grpcAddress, token, workDir: join(dir, 'runner'), sshKeyFile: key.privateKeyPath, slots: 2 });
    const access = await controlPlaneAccess({
      dataDir: cp.dataDir,
      url: cp.url,
      publicKeyFile: key.publicKeyPath,
      env: { CARAPACE_DISCOVERY_TOKEN: DISCOVERY_TOKEN, CARAPACE_ADMIN_PASSWORD: ADMIN_PASSWORD },
    });
    const discovered = await discoverLab({ hosts: 1, name: 'e2e-backup', access, timeoutMs: 120_000 });
    lab = discovered.lab;
    server = discovered.hosts[0]?.server as Json;
    clusterId = (await api.ok('POST', '/v1/cluster/', { name: 'backed-up' })).id;
  }, 10 * 60_000);

  afterAll(async () => {
    await runner?.stop();
    await restoredCp?.stop();
    await cp?.stop();
    await lab?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  /** What the API answers now of every model, version, step and log line. */
  async function snapshot(on: Api): Promise<Map<string, Json[] | string>> {
    const seen = new Map<string, Json[] | string>();
    for (const model of ['user', 'role', 'cluster', 'server', 'playbook_configuration', 'execution']) {
      const items = (await on.ok('GET', `/v1/${model}/?all=true`)).items as Json[];
      for (const item of items) seen.set(`${model}/${item.id}/version`, (await on.ok('GET', `/v1/${model}/${item.id}/version/?all=true`)).items as Json[]);
      if (model !== 'execution') continue;
      for (const item of items) {
        seen.set(`execution/${item.id}/steps`, (await on.ok('GET', `/v1/execution/${item.id}/steps/?all=true`)).items as Json[]);
        seen.set(`execution/${item.id}/log`, (await on.call('GET', `/v1/execution/${item.id}/log/`, undefined, true, { accept: 'text/plain' })).text);
      }
    }
    return seen;
  }

  /** Times requests, one after another, until `until` settles; their durations (ms). */
  async function timeRequests(until: Promise<unknown>): Promise<number[]> {
    let done = false;
    void until.finally(() => (done = true));
    const times: number[] = [];
    while (!done) {
      const t = performance.now();
      const res = await api.call('GET', `/v1/execution/?per_page=25`);
      expect(res.status).toBe(200);
      times.push(performance.now() - t);
    }
    return times;
  }

  it('backs up while executions run and logs stream; the restored installation holds all that was acknowledged', async () => {
    const config = await api.ok('POST', '/v1/playbook_configuration/', { name: 'busy', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [server.id] });
    const start = async () => (await api.ok('POST', '/v1/execution/', { playbook_configuration: { id: config.id, version: config.version } })).id as string;
    // Three runs on the one host: one runs (its steps and log streaming), the others wait for it.
    const running = await start();
    await start();
    const queued = await start();
    await eventually('a streaming log', async () => {
      const text = (await api.call('GET', `/v1/execution/${running}/log/`, undefined, true, { accept: 'text/plain' })).text;
      return text.includes('TASK [') ? true : undefined;
    }, 120_000);

    const usual = await timeRequests(new Promise((r) => setTimeout(r, 2000)));
    const acknowledged = await snapshot(api);
    const file = join(dir, 'busy.backup');
    const env = { ...process.env, CARAPACE_DATA_DIR: cp.dataDir, CARAPACE_SKIP_BUILD: '1', CARAPACE_LOG_LEVEL: 'silent' };
    const backup = run(process.execPath, [CONTROL_PLANE_BIN, 'backup', file], { env });
    const during = await timeRequests(backup);
    const { stderr } = await backup;
    expect(stderr).toMatch(/backup written: .*busy\.backup/);
    const line = (name: string, t: number[]) => `${name}: ${t.length} requests, p50 ${percentile(t, 50).toFixed(1)} ms, p99 ${percentile(t, 99).toFixed(1)} ms, max ${Math.max(...t).toFixed(1)} ms`;
    process.stdout.write(`\nGET /v1/execution/ ${line('before the backup', usual)}\nGET /v1/execution/ ${line('during the backup', during)}\n${stderr}`);
    expect(during.length).toBeGreaterThan(0);
    expect(percentile(during, 99)).toBeLessThan(Math.max(4 * percentile(usual, 99), 250));

    // Restored into a new data directory with the installation's key, and served.
    const restoredDir = join(dir, 'restored');
    const keyEnv = { CARAPACE_SECRETS_KEY_FILE: join(cp.dataDir, 'secrets.key') };
    const restored = await run(process.execPath, [CONTROL_PLANE_BIN, 'restore', file], { env: { ...env, ...keyEnv, CARAPACE_DATA_DIR: restoredDir } });
    expect(restored.stderr).toMatch(/restored the backup of /);
    restoredCp = await ControlPlane.start({ dataDir: restoredDir, runner: 'none', env: keyEnv });
    const restoredApi = new Api(restoredCp.url);
    await restoredApi.login();
    const now = await snapshot(restoredApi);
    for (const [key, before] of acknowledged) {
      const after = now.get(key);
      expect(after, key).toBeDefined();
      if (typeof before === 'string') {
        expect((after as string).startsWith(before), key).toBe(true);
        continue;
      }
      // Every version and step acknowledged is there, as it was.
      const byKey = new Map((after as Json[]).map((x) => [`${x.id}/${x.version ?? ''}`, x]));
      for (const item of before) expect(byKey.get(`${item.id}/${item.version ?? ''}`), `${key} ${item.id} v${item.version}`).toEqual(item);
    }
    expect(acknowledged.get(`execution/${running}/log`)).toContain('TASK [');
    expect((acknowledged.get(`execution/${running}/steps`) as Json[]).length).toBeGreaterThan(0);
    // Runs were under way when the backup began: the last one had not even started.
    expect((acknowledged.get(`execution/${queued}/version`) as Json[])[0]?.data.state).toMatch(/^(created|started)$/);
    expect(now.has(`execution/${queued}/version`)).toBe(true);
    // The original goes on: its runs end.
    await eventually('the queued run', async () => ((await api.ok('GET', `/v1/execution/${queued}/`)).data.state === 'completed' ? true : undefined), 180_000);
  });
});
