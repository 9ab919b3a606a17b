// The documented backup and restore of the test's engine, run as docs/guide/backups.md says, on a
// running populated installation: on SQLite `carapace-control-plane backup` / `restore`, on
// PostgreSQL `pg_dump --format=custom` / `pg_restore --single-transaction` into a new
// database. The restored installation gives the same answers to the same list queries, and
// opens its secrets only with the installation's key.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addServer } from '@carapace/test-support/facts';
import { testDialect } from '@carapace/test-support/database';
import { Harness } from '@carapace/test-support/harness';
import { findPostgresBinDir, testPostgresDatabase, type TestDatabase } from '@carapace/test-support/postgres';
import { completedHelloWorld } from '@carapace/test-support/runner';
import { buildApp, createContainer, createLogger, loadConfig, openDatabase, restoreBackup, SecretsError, takeBackup } from '../src/index.js';

function run(bin: string, args: string[]): void {
  const dir = findPostgresBinDir();
  if (!dir) throw new Error('PostgreSQL client binaries not found');
  const out = spawnSync(join(dir, bin), args, { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`${bin} failed (${out.status}): ${out.stderr}`);
}

describe(`the documented backup and restore (${testDialect()})`, { timeout: 90_000 }, () => {
  let root: string;
  let target: TestDatabase | null = null;
  const answers = new Map<string, string>();
  const paths: string[] = [];
  let token = '';
  let restoredAt = '';
  const keyFile = () => join(root, 'live', 'secrets.key');

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'carapace-backup-answers-'));
  });
  afterAll(async () => {
    await target?.drop();
    rmSync(root, { recursive: true, force: true });
  });

  it('backs up a running installation and restores it into a new database', async () => {
    const live = join(root, 'live');
    const h = await Harness.start({ CARAPACE_DATA_DIR: live }, testDialect() === 'sqlite' ? { databaseFile: join(live, 'carapace.db') } : {});
    try {
      token = await h.rootToken();
      const { id: userId } = await h.userWith('operator', ['view_cluster', 'view_server', 'view_execution', 'view_execution_steps']);
      const cluster = await h.request('POST', '/v1/cluster/', { token, body: { name: 'kept' } });
      await h.request('PUT', `/v1/cluster/${cluster.json.id}/`, { token, body: { ...cluster.json, data: { ...cluster.json.data, name: 'kept-renamed' } } });
      const servers = [await addServer(h), await addServer(h)];
      const { executionId } = await completedHelloWorld(h, { token, clusterId: cluster.json.id, serverIds: servers.map((s) => s.id), runnerName: 'backup-runner' });
      paths.push(
        '/v1/user/',
        `/v1/user/${userId}/version/`,
        '/v1/role/',
        '/v1/cluster/',
        `/v1/cluster/${cluster.json.id}/version/`,
        '/v1/server/',
        '/v1/playbook_configuration/',
        '/v1/execution/',
        `/v1/execution/${executionId}/steps/`,
        `/v1/execution/${executionId}/log/`,
        `/v1/cluster/?filter=${encodeURIComponent(JSON.stringify({ name: 'kept-renamed' }))}`,
      );
      for (const path of paths) answers.set(path, (await h.request('GET', path, { token, headers: { accept: 'application/json' } })).body);

      // The backup, while the control plane runs.
      const file = join(root, testDialect() === 'sqlite' ? 'carapace.backup' : 'carapace.pgdump');
      if (testDialect() === 'sqlite') {
        await takeBackup(h.config, file);
      } else {
        run('pg_dump', ['--format=custom', `--file=${file}`, h.databaseUrl ?? '']);
      }

      const restored = join(root, 'restored');
      const restoredConfig = loadConfig({ env: { CARAPACE_DATA_DIR: restored, CARAPACE_SECRETS_KEY_FILE: keyFile() } });
      if (testDialect() === 'sqlite') {
        await restoreBackup(restoredConfig, file);
        restoredAt = join(restored, 'carapace.db');
      } else {
        target = await testPostgresDatabase();
        run('pg_restore', ['--no-owner', '--exit-on-error', '--single-transaction', `--dbname=${target.url}`, file]);
        restoredAt = target.url;
      }
    } finally {
      await h.stop();
    }
  });

  it('serves the same answers to the same list queries from the restored database', async () => {
    const env = { CARAPACE_DATA_DIR: join(root, 'restored'), CARAPACE_RUNNER: 'none', CARAPACE_LOG_LEVEL: 'silent', CARAPACE_DISCOVERY_TOKEN: 'restored-discovery-token-0123456789' };
    const logger = createLogger('silent');
    const mailer = { send: async () => undefined, close: async () => undefined };
    // Without the installation's key, its secrets do not open: the control plane does not start.
    const other = join(root, 'other.key');
    writeFileSync(other, `${Buffer.alloc(32, 9).toString('base64')}\n`, { mode: 0o600 });
    const keyless = await openDatabase(restoredAt);
    await expect(createContainer(loadConfig({ env: { ...env, CARAPACE_SECRETS_KEY_FILE: other } }), keyless, logger, { mailer })).rejects.toThrow(SecretsError);
    await keyless.close();

    const container = await createContainer(loadConfig({ env: { ...env, CARAPACE_SECRETS_KEY_FILE: keyFile() } }), await openDatabase(restoredAt), logger, { mailer });
    const app = await buildApp({ services: container.services, logger });
    try {
      for (const path of paths) {
        const res = await app.inject({ method: 'GET', url: path, headers: { authorization: token, accept: 'application/json' } });
        expect(res.statusCode, path).toBe(200);
        expect(JSON.parse(res.body), path).toEqual(JSON.parse(answers.get(path) ?? 'null'));
      }
    } finally {
      await app.close();
      await container.close();
    }
  });
});
