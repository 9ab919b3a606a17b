// Health and metrics for load balancers and monitoring, on both databases (the postgres
// project runs this file too).
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addServer } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';
import { eventually } from '@carapace/test-support/eventually';

/** The value of a metric line (`name{labels} value`) of a Prometheus text exposition. */
function metric(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(labels ? `${name}{${labels}}` : `${name} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('health and metrics', () => {
  let h: Harness;
  let root: string;
  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_METRICS_TOKEN: 'metrics-token-0123456789' });
    root = await h.rootToken();
  });
  afterAll(() => h.stop());

  it('answers live and ready without a token, and not ready with the reason when the migrations are behind', async () => {
    expect((await h.request('GET', '/v1/health/live/')).json).toEqual({ status: 'ok' });
    const ready = await h.request('GET', '/v1/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.json).toEqual({ status: 'ok' });
    // A database that lacks one of this release's migrations cannot serve it.
    await h.db.run(sql`DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)`);
    const behind = await h.request('GET', '/v1/health/ready');
    expect(behind.status).toBe(503);
    expect(behind.json).toMatchObject({ status: 'unavailable', reason: expect.stringMatching(/migrations of this release/) });
    expect((await h.request('GET', '/v1/health/live')).status).toBe(200);
  });

  it('serves Prometheus metrics to the holder of the metrics token only: requests, executions by state, queue, leases', async () => {
    expect((await h.request('GET', '/metrics')).status).toBe(401);
    expect((await h.request('GET', '/metrics', { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
    const server = await addServer(h);
    const cluster = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'metered' } });
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'm', cluster_id: cluster.json.id, playbook_id: 'hello_world', server_ids: [server.id] },
    });
    const queued = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: config.json.version } } });
    const running = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: config.json.version } } });
    const scrape = async () => {
      const res = await h.request('GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      return res.body;
    };
    h.clock.advance(90);
    let text = await scrape();
    expect(metric(text, 'carapace_executions', 'state="created"')).toBe(2);
    expect(metric(text, 'carapace_execution_queue_depth')).toBe(2);
    expect(metric(text, 'carapace_execution_queue_oldest_age_seconds')).toBeGreaterThanOrEqual(90);
    expect(metric(text, 'carapace_server_leases')).toBe(0);
    expect(metric(text, 'carapace_http_requests_total', 'method="POST",route="/v1/execution",status="200"')).toBe(2);
    expect(text).toMatch(/carapace_http_request_duration_seconds_bucket\{le="0.005",method="POST",route="\/v1\/execution"\}/);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    // One starts on a runner: a lease.
    const claimed = await h.container.services.engine.claim('metered-runner', 1);
    expect(claimed.map((a) => a.execution.id)).toEqual([queued.json.id]);
    text = await scrape();
    expect(metric(text, 'carapace_server_leases')).toBe(1);
    expect(metric(text, 'carapace_executions', 'state="started"')).toBe(1);
    expect(metric(text, 'carapace_execution_queue_depth')).toBe(1);
    expect(running.status).toBe(200);
  });

  it("reports this replica's database connections: open, busy, and callers waiting for one", async () => {
    const text = (await h.request('GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } })).body;
    const open = metric(text, 'carapace_database_connections', 'state="open"') ?? 0;
    expect(open).toBeGreaterThanOrEqual(1);
    expect(metric(text, 'carapace_database_connections', 'state="busy"')).toBeLessThanOrEqual(open);
    expect(metric(text, 'carapace_database_waiting')).toBeGreaterThanOrEqual(0);
    // Transactions held open take every connection; the next ones wait for one.
    const releases: (() => void)[] = [];
    let ending = false;
    const hold = () => h.db.transaction(() => new Promise<void>((r) => (ending ? r() : releases.push(r))));
    const held = Array.from({ length: 40 }, hold);
    await eventually('a transaction to wait for a connection', () => h.db.connections().waiting > 0);
    expect(h.db.connections().busy).toBeGreaterThanOrEqual(releases.length);
    expect(h.db.connections().busy).toBeLessThanOrEqual(h.db.connections().open);
    ending = true;
    for (const release of releases) release();
    await Promise.all(held);
    await eventually('no connection to be busy or waited for', () => h.db.connections().busy === 0 && h.db.connections().waiting === 0);
  });

  it('answers JSON, not the web UI, for the health paths; and 404 for what is not there', async () => {
    expect((await h.request('GET', '/v1/health/')).status).toBe(404);
    expect((await h.request('POST', '/v1/health/ready')).status).toBe(405);
  });
});
