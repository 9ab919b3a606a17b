// The control plane's cost of cluster status collection (issue 30), a row of bench:scale:
// 1,000 simulated deployed clusters collected at the default interval (30 s). What is driven
// is the control plane's own path, in this process, on a SQLite file as in production: the
// scheduler hands the due collections out (`StatusScheduler.take`, as the gRPC gateway
// does for its runners) and records each answer (`complete`: parse the six `ceph -f json`
// outputs of test/fixtures/ceph-pacific/ok, store the latest report, add a history point
// once a minute, prune the points older than 24 hours, notify on a change), at the rate the
// clusters' intervals produce (1,000 / 30 s, spread over the interval as clusters deployed
// at different times are). The history holds 24 hours of points from the start (bulk
// inserted, the repository's own columns), so each new point prunes an old one, as in
// steady state. Figures:
// - CPU: this process's CPU time over the window, as a share of one core, minus the idle
//   baseline (the same process, the same clusters, no collection, same length of time);
//   beside it, what parsing alone costs at that rate (parseCephReport, no storage);
// - storage: the bytes the two tables and their indexes take in the database (SQLite's
//   dbstat) per history point and per cluster row, times 1,440 points (one a minute over 24
//   hours) and the clusters.
// The SSH round trip and `ceph` on the monitors are the runners' and the clusters' cost, not
// the control plane's, and are not here (bench:ceph runs the real thing).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sql } from 'drizzle-orm';
import type { ClusterData } from '@carapace/models';
import { parseCephReport, schema, VersionedRepository } from '@carapace/control-plane/testing';
import { TestControlPlane } from '@carapace/test-support/control-plane';

const FIXTURES = resolve(import.meta.dirname, '../fixtures/ceph-pacific/ok');
const RUNNERS = [{ name: 'near', labels: { networks: '10.0.0.0/8' } }];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The goal of issue 30 for all the clusters: under 10 % of one core, under 1 GiB for 24 hours of history. */
export const STATUS_GOAL = { cpuPct: 10, bytes24h: 1024 ** 3 } as const;

export interface StatusCost {
  readonly clusters: number;
  readonly intervalS: number;
  readonly windowS: number;
  /** Collections recorded in the window, and per second. */
  readonly collections: number;
  readonly perSecond: number;
  /** CPU of the collection (take + complete), % of one core, the idle baseline taken off. */
  readonly cpuPct: number;
  /** The idle baseline: the same process over the same time without collection. */
  readonly idleCpuPct: number;
  /** Parsing alone at the same rate, % of one core. */
  readonly parseCpuPct: number;
  /** The 99th percentile of one `complete` (ms). */
  readonly completeP99Ms: number;
  readonly bytesPerPoint: number;
  readonly bytesPerCluster: number;
  /** Every cluster's row and 24 hours of points. */
  readonly bytes24h: number;
}

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ?? NaN;
const cpuMs = (since?: NodeJS.CpuUsage) => {
  const u = process.cpuUsage(since);
  return (u.user + u.system) / 1000;
};

/** One measurement: `clusters` deployed clusters at `intervalS`, measured over `windowS` seconds. */
export async function statusCollectionCost({ clusters = 1000, intervalS = 30, windowS = 60, historyHours = 24 } = {}): Promise<StatusCost> {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-bench-status-'));
  const cp = await TestControlPlane.start({ CARAPACE_STATUS_INTERVAL_S: String(intervalS), CARAPACE_LOG_LEVEL: 'silent' }, { sqliteFile: join(dir, 'carapace.db') });
  try {
    const status = cp.services.status;
    const read = (name: string) => readFileSync(join(FIXTURES, `${name}.json`), 'utf8');
    const outputs = { status: read('status'), df: read('df'), osdTree: read('osd_tree'), osdDump: read('osd_dump'), monDump: read('mon_dump'), mgrDump: read('mgr_dump') };

    // Deployed clusters (as cluster_deploy's effects leave them): three monitor servers each.
    const serverIds = [await cp.addServer(1), await cp.addServer(2), await cp.addServer(3)];
    const { found } = await cp.services.servers.liveMany(serverIds);
    const members = found.map((s) => ({ server_id: s.id, version: s.version, fqdn: s.data.fqdn, ip: s.data.ip, server_name: s.data.name }));
    const repo = new VersionedRepository<ClusterData>(cp.db, schema.clusters, { data: ['name', 'configuration'], defaultSort: [['name', 1]] });
    const nowS = () => Math.floor(cp.clock.nowMs() / 1000);
    const ids: string[] = [];
    await cp.db.transaction(async () => {
      for (let i = 0; i < clusters; i++) ids.push((await repo.create({ name: `sim-${i}`, configuration: { mons: members, osds: members } }, null, nowS())).id);
    });

    const pages = async () => {
      const rows = await cp.db.all<{ name: string; bytes: number }>(sql`SELECT name, sum(pgsize) AS bytes FROM dbstat WHERE name LIKE 'cluster_status%' OR name LIKE 'sqlite_autoindex_cluster_status%' GROUP BY name`);
      return rows.reduce((sum, r) => sum + Number(r.bytes), 0);
    };
    const pointCount = async () => Number((await cp.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM cluster_status_points`))?.n ?? 0);
    const before = await pages();
    // The history: one point a minute per cluster over `historyHours`, older than the ones collected.
    const first = nowS() - 120;
    const perCluster = Math.floor((historyHours * 3600) / 60) - 1;
    const ok = JSON.parse(outputs.status) as { pgmap?: { bytes_total?: number; bytes_used?: number } };
    const total = ok.pgmap?.bytes_total ?? 0;
    const used = ok.pgmap?.bytes_used ?? 0;
    for (let c = 0; c < ids.length; c += 20) {
      await cp.db.transaction(async () => {
        for (const id of ids.slice(c, c + 20)) {
          for (let k = 0; k < perCluster; k += 250) {
            const values = Array.from({ length: Math.min(250, perCluster - k) }, (_, j) => sql`(${id}, ${first - (k + j) * 60}, 'HEALTH_OK', ${total}, ${used}, 3, 3, 3)`);
            await cp.db.run(sql`INSERT INTO cluster_status_points (cluster_id, at, health, raw_total_bytes, raw_used_bytes, osds_up, osds_in, osds_total) VALUES ${sql.join(values, sql`, `)}`);
          }
        }
      });
    }
    const pointsBytes = (await pages()) - before;
    const prefilled = await pointCount();
    const bytesPerPoint = pointsBytes / Math.max(1, prefilled);

    // The idle baseline: the clusters there, nothing collected yet.
    await sleep(1000);
    const idle0 = cpuMs();
    const idleStart = performance.now();
    await sleep(windowS * 1000);
    const idleCpuPct = ((cpuMs() - idle0) / (performance.now() - idleStart)) * 100;

    // Each cluster collected once (its row and its report), the collections spread over one
    // interval as clusters deployed at different times are.
    let completed = 0;
    const durations: number[] = [];
    // What the control plane's ticker does every second (StatusScheduler.start: wake the
    // dispatcher when a row is due), then what its dispatcher does for its runners.
    let tickAt = 0;
    const drive = async () => {
      if (performance.now() - tickAt >= 1000) {
        tickAt = performance.now();
        status.requested.emit();
      }
      for (const job of await status.take(RUNNERS)) {
        const at = performance.now();
        await status.complete(job.runner, { requestId: job.request.requestId, clusterId: job.request.clusterId, monitor: job.request.monitors[0]?.address ?? '', durationMs: 300, ok: true, outputs });
        durations.push(performance.now() - at);
        completed += 1;
      }
    };
    const spreadStart = performance.now();
    for (let i = 0; i < ids.length; i++) {
      await status.executionEnded(ids[i] as string);
      await drive();
      const due = spreadStart + ((i + 1) * intervalS * 1000) / ids.length;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
    }
    const newPoints = (await pointCount()) - prefilled;
    const bytesPerCluster = ((await pages()) - before - pointsBytes - newPoints * bytesPerPoint) / clusters;

    // The measured window, at the rate the intervals give, in steady state.
    completed = 0;
    durations.length = 0;
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    while (performance.now() - start < windowS * 1000) {
      await drive();
      await sleep(50);
    }
    const elapsed = performance.now() - start;
    const used0 = cpuMs(cpu0);
    const collections = completed;
    const cpuPct = (used0 / elapsed) * 100 - idleCpuPct;

    // Parsing alone, as many times.
    const parse0 = process.cpuUsage();
    for (let i = 0; i < collections; i++) parseCephReport(outputs);
    const parseCpuPct = (cpuMs(parse0) / elapsed) * 100;

    return {
      clusters,
      intervalS,
      windowS,
      collections,
      perSecond: collections / (elapsed / 1000),
      cpuPct,
      idleCpuPct,
      parseCpuPct,
      completeP99Ms: percentile(durations, 99),
      bytesPerPoint,
      bytesPerCluster,
      bytes24h: clusters * (bytesPerCluster + ((24 * 3600) / Math.max(60, intervalS)) * bytesPerPoint),
    };
  } finally {
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The row of bench:scale, with the ratios to the goal. */
export function printStatusCost(r: StatusCost): void {
  const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const mib = (b: number) => `${f(b / 1024 ** 2)} MiB`;
  console.log(`\nstatus collection (issue 30): ${r.clusters} deployed clusters at ${r.intervalS} s, measured over ${r.windowS} s, SQLite file, 24 h of history in place\n`);
  console.log('| clusters | interval | collections/s (expected) | control-plane CPU (idle baseline taken off) | idle baseline | of which parsing alone | complete p99 | bytes per point | bytes per cluster row | storage for 24 h |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  console.log(
    `| ${r.clusters} | ${r.intervalS} s | ${f(r.perSecond)} (${f(r.clusters / r.intervalS)}) | ${f(r.cpuPct, 2)} % of a core | ${f(r.idleCpuPct, 2)} % | ${f(r.parseCpuPct, 2)} % | ${f(r.completeP99Ms, 2)} ms | ${f(r.bytesPerPoint)} B | ${f(r.bytesPerCluster / 1024)} KiB | ${mib(r.bytes24h)} |`,
  );
  console.log(
    `status collection of ${r.clusters} clusters: CPU ${f(r.cpuPct, 2)} % / goal ${STATUS_GOAL.cpuPct} % = ${f(r.cpuPct / STATUS_GOAL.cpuPct, 3)} (${r.cpuPct < STATUS_GOAL.cpuPct ? 'PASS' : 'MISS'}); ` +
      `storage for 24 h ${mib(r.bytes24h)} / goal 1 GiB = ${f(r.bytes24h / STATUS_GOAL.bytes24h, 3)} (${r.bytes24h < STATUS_GOAL.bytes24h ? 'PASS' : 'MISS'}); ` +
      `against the idle baseline of the same run: ${f((r.cpuPct + r.idleCpuPct) / Math.max(0.01, r.idleCpuPct), 1)} × idle`,
  );
}

// `node ... test/bench/status.bench.ts`: this row alone.
if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  printStatusCost(
    await statusCollectionCost({
      clusters: Number(process.env.BENCH_SCALE_STATUS_CLUSTERS ?? 1000),
      windowS: Number(process.env.BENCH_SCALE_STATUS_S ?? 60),
      historyHours: Number(process.env.BENCH_SCALE_STATUS_HISTORY_H ?? 24),
    }),
  );
  process.exit(0);
}
