// Cluster status across two control-plane replicas on one PostgreSQL database: each due
// collection is handed to one runner in all (the rows are claimed with FOR UPDATE SKIP
// LOCKED), an answer is recorded by whichever replica receives it, and the same answer
// arriving twice (at both replicas at once) is recorded, and notified, once.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ClusterData } from '@carapace/models';
import { testPostgresDatabase, type TestDatabase } from '@carapace/test-support/postgres';
import { Replica } from '@carapace/test-support/replica';
import { schema, VersionedRepository } from '../src/testing.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures/ceph-pacific/warn');
const read = (name: string) => readFileSync(join(FIXTURES, `${name}.json`), 'utf8');
const WARN = { status: read('status'), df: read('df'), osdTree: read('osd_tree'), osdDump: read('osd_dump'), monDump: read('mon_dump'), mgrDump: read('mgr_dump') };

describe('cluster status across replicas on one PostgreSQL database', { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let dir: string;
  let a: Replica;
  let b: Replica;
  const clusterIds: string[] = [];

  beforeAll(async () => {
    database = await testPostgresDatabase();
    dir = mkdtempSync(join(tmpdir(), 'carapace-status-replicas-'));
    const file = join(dir, 'carapace.yaml');
    // Nothing listens there: the deliveries stay queued, which is what is counted.
    writeFileSync(file, stringify({ notifications: { webhooks: [{ url: 'http://127.0.0.1:9/hook', secret: 'webhook-secret-0123456789abcdef', events: ['cluster_health'] }] } }));
    const env = { CARAPACE_CONFIG: file, CARAPACE_STATUS_INTERVAL_S: '3600' };
    a = await Replica.start(database.url, env);
    b = await Replica.start(database.url, env);
    const token = await a.login();
    const repo = new VersionedRepository<ClusterData>(a.db, schema.clusters, { data: ['name', 'configuration'], defaultSort: [['name', 1]] });
    const member = { server_id: '00000000-0000-4000-a000-000000000001', version: 1, fqdn: 'mon1.example.com', ip: '10.9.0.1', server_name: 'mon1' };
    for (let i = 0; i < 30; i += 1) {
      const id = (await a.api('POST', '/v1/cluster/', { name: `c${i}` }, token)).json.id as string;
      const latest = await repo.get(id);
      await a.db.transaction(() => repo.append(latest!, { data: { ...latest!.data, configuration: { mons: [member] } } }, null, 1));
      clusterIds.push(id);
    }
    await Promise.all([a.container.services.status.resume(), b.container.services.status.resume()]);
  });

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('hands each cluster to one runner in all, records answers wherever they arrive, and notifies each change once', async () => {
    const [onA, onB] = await Promise.all([
      a.container.services.status.take([{ name: 'runner-a', labels: {} }]),
      b.container.services.status.take([{ name: 'runner-b', labels: {} }]),
    ]);
    const handed = [...onA, ...onB].map((j) => j.request.clusterId);
    expect(handed.sort()).toEqual([...clusterIds].sort());
    // Nothing more is due on either replica.
    expect(await a.container.services.status.take([{ name: 'runner-a', labels: {} }])).toEqual([]);
    expect(await b.container.services.status.take([{ name: 'runner-b', labels: {} }])).toEqual([]);

    // Every answer delivered to both replicas at once (a runner that reconnected elsewhere).
    await Promise.all(
      [...onA, ...onB].flatMap((job) => {
        const answer = { requestId: job.request.requestId, clusterId: job.request.clusterId, ok: true as const, outputs: WARN, monitor: '10.9.0.1', durationMs: 5 };
        return [a.container.services.status.complete(job.runner, answer), b.container.services.status.complete(job.runner, answer)];
      }),
    );
    const rows = await a.db.all<{ health: string; n: number }>(sql`SELECT health, count(*) AS n FROM cluster_statuses GROUP BY health`);
    expect(rows.map((r) => [r.health, Number(r.n)])).toEqual([['HEALTH_WARN', 30]]);
    const points = await a.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM cluster_status_points`);
    expect(Number(points?.n)).toBe(30);
    // Each cluster first seen unhealthy: one webhook each, not two.
    const deliveries = await a.db.all<{ id: string; n: number }>(
      sql`SELECT execution_id AS id, count(*) AS n FROM notification_deliveries WHERE event = 'cluster.health_changed' GROUP BY execution_id`,
    );
    expect(deliveries).toHaveLength(30);
    expect(deliveries.every((d) => Number(d.n) === 1)).toBe(true);
  });
});
