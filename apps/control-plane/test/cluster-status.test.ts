// Cluster status (issue 30) through the API, on the real database (SQLite, and PostgreSQL in
// the twin run), with the scheduler driven as the gateway drives it: a runner is handed the
// collection of a cluster whose configuration has monitors, its answers (Pacific outputs of
// test/fixtures/ceph-pacific, an error, none in time) become the status, the history and the
// notifications (one per change of health, e-mailed to a real SMTP sink).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ClusterData } from '@carapace/models';
import { addServer } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';
import { schema, VersionedRepository } from '../src/testing.js';
import type { StatusAnswer } from '../src/infrastructure/status.scheduler.js';
import { decodeStatusResult } from '../src/grpc/runner.codec.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures/ceph-pacific');
const read = (kind: string, name: string) => readFileSync(join(FIXTURES, kind, `${name}.json`), 'utf8');
const outputs = (kind: 'ok' | 'warn') => ({
  status: read(kind, 'status'),
  df: read(kind, 'df'),
  osdTree: read(kind, 'osd_tree'),
  osdDump: read(kind, 'osd_dump'),
  monDump: read(kind, 'mon_dump'),
  mgrDump: read(kind, 'mgr_dump'),
});

describe('cluster status', () => {
  let h: Harness;
  let dir: string;
  let token: string;
  let clusterId: string;
  let monIps: string[];
  const runners = [{ name: 'near', labels: { networks: '10.0.0.0/8' } }];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-status-'));
    const file = join(dir, 'carapace.yaml');
    writeFileSync(file, stringify({ notifications: { email: [{ to: 'ops@example.com', events: ['cluster_health'] }, { to: 'runs@example.com', events: ['failed'] }] } }));
    h = await Harness.start({ CARAPACE_CONFIG: file, CARAPACE_STATUS_INTERVAL_S: '30', CARAPACE_TOKEN_TTL_S: '86400' });
    token = await h.rootToken();
    clusterId = (await h.request('POST', '/v1/cluster/', { token, body: { name: 'ceph-a' } })).json.id;
    const servers = [await addServer(h), await addServer(h)];
    monIps = servers.map((s) => s.data.ip);
    // Deployed, as a cluster_deploy's effects leave it: its monitors in the configuration.
    const repo = new VersionedRepository<ClusterData>(h.db, schema.clusters, { data: ['name', 'configuration'], defaultSort: [['name', 1]] });
    const latest = await repo.get(clusterId);
    const members = servers.map((s) => ({ server_id: s.id, version: s.version, fqdn: s.data.fqdn, ip: s.data.ip, server_name: s.data.name }));
    await h.db.transaction(() => repo.append(latest!, { data: { ...latest!.data, configuration: { mons: members, osds: members } } }, null, nowS()));
    // What the start of the control plane does for clusters deployed before it ran.
    await h.container.services.status.resume();
  });
  afterAll(async () => {
    await h?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const nowS = () => Math.floor(h.clock.nowMs() / 1000);
  /** Within the second or two the test took. */
  const aboutNow = () => expect.toSatisfy((t: number) => Math.abs(t - nowS()) <= 2);
  const status = async () => (await h.request('GET', `/v1/cluster/${clusterId}/status/`, { token })).json;

  async function collect(answer: (requestId: string) => Omit<StatusAnswer, 'requestId' | 'clusterId'>): Promise<void> {
    const [job] = await h.container.services.status.take(runners);
    expect(job?.runner).toBe('near');
    const a = answer(job?.request.requestId ?? '');
    await h.container.services.status.complete('near', { ...a, requestId: job?.request.requestId ?? '', clusterId } as StatusAnswer);
  }

  it('serves pending before any collection, 404 for an unknown cluster, 400 for bad input, 401 without a token', async () => {
    expect(await status()).toEqual({ cluster_id: clusterId, state: 'pending', collected_at: null, attempted_at: null, unreachable: null, collection: null, ceph: null });
    const other = (await h.request('POST', '/v1/cluster/', { token, body: { name: 'empty' } })).json.id;
    expect((await h.request('GET', `/v1/cluster/${other}/status/`, { token })).json.state).toBe('not_deployed');
    expect((await h.request('GET', '/v1/cluster/00000000-0000-4000-8000-00000000dead/status/', { token })).status).toBe(404);
    expect((await h.request('GET', '/v1/cluster/00000000-0000-4000-8000-00000000dead/status/history/', { token })).status).toBe(404);
    // As every route of an id: what is no UUID names nothing.
    expect((await h.request('GET', '/v1/cluster/not-a-uuid/status/', { token })).status).toBe((await h.request('GET', '/v1/cluster/not-a-uuid/', { token })).status);
    expect((await h.request('GET', `/v1/cluster/${clusterId}/status/history/?hours=25`, { token })).status).toBe(400);
    expect((await h.request('GET', `/v1/cluster/${clusterId}/status/history/?hours=x`, { token })).status).toBe(400);
    expect((await h.request('GET', `/v1/cluster/${clusterId}/status/`)).status).toBe(401);
    const viewer = await h.userWith('nobody', ['view_server']);
    expect((await h.request('GET', `/v1/cluster/${clusterId}/status/`, { token: viewer.token })).status).toBe(403);
    expect((await h.request('GET', '/v1/cluster_status/', { token: viewer.token })).status).toBe(403);
  });

  it('hands the collection to a runner serving a monitor, with the monitors in order and their host keys; not twice while in flight', async () => {
    expect(await h.container.services.status.take([{ name: 'far', labels: { networks: '192.168.0.0/16' } }])).toEqual([]);
    h.clock.advance(6); // the 5 s a cluster no runner served waits
    const [job] = await h.container.services.status.take(runners);
    expect(job?.request).toMatchObject({
      clusterId,
      cephCluster: 'ceph',
      connectTimeoutS: 10,
      monitors: monIps.map((address) => ({ address, username: 'ansible', expectedHostKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake' })),
    });
    expect(await h.container.services.status.take(runners)).toEqual([]);
    // An answer to another request id, or from another runner, changes nothing.
    await h.container.services.status.complete('other', { requestId: job?.request.requestId ?? '', clusterId, ok: true, outputs: outputs('ok'), monitor: monIps[0] ?? '', durationMs: 5 });
    await h.container.services.status.complete('near', { requestId: 'stale', clusterId, ok: true, outputs: outputs('ok'), monitor: monIps[0] ?? '', durationMs: 5 });
    expect((await status()).state).toBe('pending');
    await h.container.services.status.complete('near', { requestId: job?.request.requestId ?? '', clusterId, ok: true, outputs: outputs('ok'), monitor: monIps[0] ?? '', durationMs: 1234 });
    const s = await status();
    expect(s).toMatchObject({ state: 'collected', collected_at: aboutNow(), attempted_at: aboutNow(), unreachable: null, collection: { runner: 'near', monitor: monIps[0], duration_ms: 1234 } });
    expect(s.ceph.health).toEqual({ status: 'HEALTH_OK', checks: [] });
    expect(s.ceph.osds).toMatchObject({ total: 3, up: 3, in: 3 });
    // The first report of a healthy cluster notifies nobody.
    expect(h.mail.mails.filter((m) => m.to === 'ops@example.com')).toEqual([]);
  });

  it('collects again after the interval, and at once after an execution on the cluster ended', async () => {
    expect(await h.container.services.status.take(runners)).toEqual([]);
    h.clock.advance(31);
    const [job] = await h.container.services.status.take(runners);
    expect(job?.request.clusterId).toBe(clusterId);
    await h.container.services.status.complete('near', { requestId: job?.request.requestId ?? '', clusterId, ok: true, outputs: outputs('ok'), monitor: monIps[0] ?? '', durationMs: 10 });
    expect(await h.container.services.status.take(runners)).toEqual([]);
    await h.container.services.status.executionEnded(clusterId);
    const [soon] = await h.container.services.status.take(runners);
    expect(soon?.request.clusterId).toBe(clusterId);
    await h.container.services.status.complete('near', { requestId: soon?.request.requestId ?? '', clusterId, ok: true, outputs: outputs('ok'), monitor: monIps[0] ?? '', durationMs: 10 });
  });

  it('notifies once per change of health with the checks, keeps a point a minute, and says since when the monitors do not answer', async () => {
    h.clock.advance(61);
    await collect(() => ({ ok: true, outputs: outputs('warn'), monitor: monIps[0] ?? '', durationMs: 10 }));
    const warn = await h.mail.waitFor('ops@example.com', 'is HEALTH_WARN (was HEALTH_OK)');
    expect(warn.text).toContain('HEALTH_WARN OSD_DOWN: 1 osds down [playbook replace_osd]');
    expect(warn.text).toContain(`/v1/cluster/${clusterId}/status/`);
    const s = await status();
    expect(s.ceph.health.checks.find((c: { code: string }) => c.code === 'OSD_DOWN')).toEqual({ code: 'OSD_DOWN', severity: 'HEALTH_WARN', summary: '1 osds down', count: 1, muted: false, playbook: 'replace_osd' });
    // Still WARN: no second message.
    h.clock.advance(31);
    await collect(() => ({ ok: true, outputs: outputs('warn'), monitor: monIps[0] ?? '', durationMs: 10 }));
    // The monitors stop answering: unreachable since the first failure of the run.
    h.clock.advance(31);
    const firstFailure = nowS();
    await collect(() => ({ ok: false, error: `${monIps[0]}: connection refused; ${monIps[1]}: connection refused`, monitor: monIps[1] ?? '', durationMs: 3 }));
    h.clock.advance(31);
    await collect(() => ({ ok: false, error: `${monIps[0]}: timed out after 10000 ms`, monitor: monIps[1] ?? '', durationMs: 3 }));
    const down = await status();
    expect(down).toMatchObject({ state: 'unreachable', attempted_at: aboutNow(), unreachable: { reason: `${monIps[0]}: timed out after 10000 ms`, since: expect.toSatisfy((t: number) => Math.abs(t - firstFailure) <= 2) } });
    expect(down.ceph.health.status).toBe('HEALTH_WARN'); // the last report stays
    const unreachable = await h.mail.waitFor('ops@example.com', 'is UNREACHABLE (was HEALTH_WARN)');
    expect(unreachable.text).toContain('connection refused');
    // Back, healthy.
    h.clock.advance(31);
    await collect(() => ({ ok: true, outputs: outputs('ok'), monitor: monIps[0] ?? '', durationMs: 10 }));
    await h.mail.waitFor('ops@example.com', 'is HEALTH_OK (was UNREACHABLE)');
    expect((await status()).unreachable).toBeNull();
    const subjects = h.mail.mails.filter((m) => m.to === 'ops@example.com').map((m) => m.subject);
    expect(subjects).toEqual([
      'Carapace: cluster ceph-a is HEALTH_WARN (was HEALTH_OK)',
      'Carapace: cluster ceph-a is UNREACHABLE (was HEALTH_WARN)',
      'Carapace: cluster ceph-a is HEALTH_OK (was UNREACHABLE)',
    ]);
    expect(h.mail.mails.some((m) => m.to === 'runs@example.com')).toBe(false);

    const history = (await h.request('GET', `/v1/cluster/${clusterId}/status/history/?hours=1`, { token })).json;
    expect(history.cluster_id).toBe(clusterId);
    const healths = history.points.map((p: { health: string }) => p.health);
    // A point a minute, and one at each change of health: of the attempts 31 s apart, those a
    // minute after the last point and every change (the WARN, the outage and the return).
    expect(history.points.length).toBeGreaterThanOrEqual(4);
    for (let i = 1; i < history.points.length; i += 1) {
      const [a, b] = [history.points[i - 1], history.points[i]];
      expect(b.at - a.at >= 60 || b.health !== a.health, `${JSON.stringify(a)} then ${JSON.stringify(b)}`).toBe(true);
    }
    expect(healths.slice(-3)).toEqual(['HEALTH_WARN', 'UNREACHABLE', 'HEALTH_OK']);
    expect(history.points[0]).toMatchObject({ health: 'HEALTH_OK', osds_up: 3, osds_in: 3, osds_total: 3 });
    expect(history.points[0].raw_total_bytes).toBeGreaterThan(0);
  });

  it('lists every cluster with its status, and exports the gauges on /metrics', async () => {
    const res = await h.request('GET', '/v1/cluster_status/', { token });
    expect(res.status, res.body).toBe(200);
    const list = res.json;
    expect(list.items.map((s: { cluster_id: string; state: string }) => s.state)).toEqual(['collected', 'not_deployed']);
    expect(list.items[0].cluster_id).toBe(clusterId);
    const metrics = (await h.request('GET', '/metrics')).body;
    const labels = `cluster_id="${clusterId}",cluster_name="ceph-a"`;
    expect(metrics).toContain(`carapace_cluster_health{${labels}} 0`);
    expect(metrics).toContain(`carapace_cluster_osds{${labels},state="up"} 3`);
    expect(metrics).toContain(`carapace_cluster_osds{${labels},state="total"} 3`);
    expect(metrics).toMatch(new RegExp(`carapace_cluster_raw_total_bytes\\{${labels}\\} [1-9]`));
    const collected = Number(new RegExp(`carapace_cluster_status_collected_timestamp_seconds\\{${labels}\\} (\\d+)`).exec(metrics)?.[1]);
    expect(Math.abs(collected - nowS())).toBeLessThanOrEqual(2);
  });

  it('counts an answer that does not come in time as a failure, and refuses oversized or invalid outputs with a reason', async () => {
    h.clock.advance(31);
    const [job] = await h.container.services.status.take(runners);
    expect(job).toBeDefined();
    h.clock.advance(3600); // past the answer's deadline
    expect(await h.container.services.status.take(runners)).toEqual([]);
    expect(await status()).toMatchObject({ state: 'unreachable', unreachable: { reason: expect.stringMatching(/^runner near did not answer within \d+ s/) } });
    h.clock.advance(31);
    await collect(() => ({ ok: true, outputs: { ...outputs('ok'), df: 'Error initializing cluster client: ObjectNotFound' }, monitor: monIps[0] ?? '', durationMs: 10 }));
    expect((await status()).unreachable.reason).toBe(`${monIps[0]}: ceph df did not print JSON: "Error initializing cluster client: ObjectNotFound"`);
    const big = decodeStatusResult('near', {
      request_id: 'r', cluster_id: clusterId, status_json: 'x'.repeat(5 * 1024 * 1024), df_json: '', osd_tree_json: '', osd_dump_json: '', mon_dump_json: '', mgr_json: '', error: '', monitor: 'm', duration_ms: 1,
    });
    expect(big).toMatchObject({ ok: false, error: expect.stringMatching(/more than 4194304/) });
  });

  it('forgets a cluster without monitors any more, its history with it', async () => {
    const repo = new VersionedRepository<ClusterData>(h.db, schema.clusters, { data: ['name', 'configuration'], defaultSort: [['name', 1]] });
    const latest = await repo.get(clusterId);
    await h.db.transaction(() => repo.append(latest!, { data: { ...latest!.data, configuration: {} } }, null, nowS()));
    h.clock.advance(31);
    expect(await h.container.services.status.take(runners)).toEqual([]);
    expect((await status()).state).toBe('not_deployed');
    const points = await h.db.all<{ n: number }>(sql`SELECT count(*) AS n FROM cluster_status_points WHERE cluster_id = ${clusterId}`);
    expect(Number(points[0]?.n)).toBe(0);
  });
});
