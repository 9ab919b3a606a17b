// `carapace-control-plane migrate-to postgres://…`: a populated SQLite installation copied
// into PostgreSQL serves the same answers there, and goes on from where it was.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, createContainer, createLogger, loadConfig, main, openDatabase } from '@carapace/control-plane';
import { addServer } from '@carapace/test-support/facts';
import { Harness, ROOT_PASSWORD } from '@carapace/test-support/harness';
import { testPostgresDatabase, type TestDatabase } from '@carapace/test-support/postgres';
import { completedHelloWorld } from '@carapace/test-support/runner';

describe('migrate-to: an SQLite installation copied into PostgreSQL', { timeout: 120_000 }, () => {
  let dir: string;
  let target: TestDatabase;
  const answers = new Map<string, string>();
  const paths: string[] = [];
  let executionId = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-migrate-'));
    target = await testPostgresDatabase();
  });
  afterAll(async () => {
    await target?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies every table, all or nothing, and the copy answers as the original did', async () => {
    // A populated installation on an SQLite file: users, roles, clusters, servers with facts,
    // configurations, an execution with steps and a log, versions of each.
    const file = join(dir, 'carapace.db');
    // The data directory (and its secrets key) the PostgreSQL copy is served with below.
    const h = await Harness.start({ CARAPACE_DATA_DIR: dir }, { databaseFile: file });
    const root = await h.rootToken();
    const { id: userId } = await h.userWith('operator', ['view_cluster', 'view_server', 'view_execution', 'view_execution_steps']);
    const cluster = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'migrated' } });
    await h.request('PUT', `/v1/cluster/${cluster.json.id}/`, { token: root, body: { ...cluster.json, data: { ...cluster.json.data, name: 'migrated-renamed' } } });
    const servers = [await addServer(h), await addServer(h)];
    ({ executionId } = await completedHelloWorld(h, { token: root, clusterId: cluster.json.id, serverIds: servers.map((s) => s.id), runnerName: 'migrating-runner' }));
    paths.push(
      '/v1/user/',
      `/v1/user/${userId}/version/`,
      '/v1/role/',
      '/v1/cluster/',
      `/v1/cluster/${cluster.json.id}/version/`,
      '/v1/server/',
      `/v1/server/${servers[0]?.id}/`,
      '/v1/playbook_configuration/',
      '/v1/execution/',
      `/v1/execution/${executionId}/version/`,
      `/v1/execution/${executionId}/steps/`,
      `/v1/execution/${executionId}/log/`,
    );
    for (const path of paths) answers.set(path, (await h.request('GET', path, { token: root, headers: { accept: 'application/json' } })).body);
    await h.stop();

    // The command, as an operator runs it: the URL's password is never printed.
    const { code, output } = await captureStderr(() => main(['migrate-to', target.url, '--from', file]));
    expect(code, output).toBe(0);
    expect(output).toMatch(/users: \d+ rows/);
    expect(output).not.toContain(new URL(target.url).password);

    // Copying again into the now populated database is refused, and changes nothing.
    const again = await captureStderr(() => main(['migrate-to', target.url, '--from', file]));
    expect(again.code).toBe(1);
    expect(again.output).toMatch(/not empty/);
  });

  it('serves the copied installation on PostgreSQL with the same answers, and goes on (new versions, rows, logins)', async () => {
    const config = loadConfig({ env: { CARAPACE_DATA_DIR: dir, CARAPACE_RUNNER: 'none', CARAPACE_LOG_LEVEL: 'silent', CARAPACE_THROTTLE_LOGIN_DELAY_BASE_MS: '0' } });
    const db = await openDatabase(target.url);
    const logger = createLogger('silent');
    const container = await createContainer(config, db, logger, { mailer: { send: async () => undefined, close: async () => undefined } });
    expect(container.bootstrap.created).toBe(false);
    const app = await buildApp({ services: container.services, logger });
    try {
      const login = await app.inject({ method: 'POST', url: '/v1/auth/', payload: { username: 'root', password: ROOT_PASSWORD } });
      expect(login.statusCode).toBe(200);
      const token = login.json<{ id: string }>().id;
      for (const path of paths) {
        const res = await app.inject({ method: 'GET', url: path, headers: { authorization: token, accept: 'application/json' } });
        expect(JSON.parse(res.body), path).toEqual(JSON.parse(answers.get(path) ?? 'null'));
      }
      // New rows get new keys (the sequences moved past the copied ones).
      const cluster = await app.inject({ method: 'POST', url: '/v1/cluster/', headers: { authorization: token }, payload: { name: 'after-migration' } });
      expect(cluster.statusCode).toBe(200);
      const list = await app.inject({ method: 'GET', url: '/v1/cluster/', headers: { authorization: token } });
      expect(list.json<{ total: number }>().total).toBe(2);
    } finally {
      await app.close();
      await container.close();
    }
  });
});

async function captureStderr(fn: () => Promise<number>): Promise<{ code: number; output: string }> {
  const errors: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = (chunk: string | Uint8Array) => {
    errors.push(String(chunk));
    return true;
  };
  try {
    return { code: await fn(), output: errors.join('') };
  } finally {
    process.stderr.write = write;
  }
}
