import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { CephReport, ClusterData, ClusterStatus, ClusterStatusPoint, HealthCheck, ServerData } from '@carapace/models';
import type { ClusterStatusRepository, StoredClusterStatus } from '../db/cluster-status.repository.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import type { Clock } from '../ports.js';
import { CephOutputError, parseCephReport, type CephOutputs } from './ceph-report.js';
import { runnerServes } from './facts.scheduler.js';
import { Signal } from '../services/signal.js';

/** A monitor host as a runner reaches it. */
export interface MonitorTarget {
  readonly address: string;
  readonly username: string;
  /** The recorded host key; a monitor without one is not tried (status collection records no key). */
  readonly expectedHostKey: string | null;
}

/** A request for a runner to collect a cluster's status. */
export interface StatusRequest {
  readonly requestId: string;
  readonly clusterId: string;
  readonly monitors: readonly MonitorTarget[];
  readonly cephCluster: string;
  readonly connectTimeoutS: number;
}

/** A runner's answer to a `StatusRequest`, decoded where it arrived. */
export type StatusAnswer = { readonly requestId: string; readonly clusterId: string; readonly monitor: string; readonly durationMs: number } & (
  | { readonly ok: true; readonly outputs: CephOutputs }
  | { readonly ok: false; readonly error: string }
);

/** A change of a cluster's health, as notified (`StatusNotifier`). */
export interface HealthChange {
  readonly clusterId: string;
  readonly clusterName: string | null;
  readonly previous: string | null;
  readonly current: string;
  readonly time: number;
  readonly checks: readonly HealthCheck[];
  readonly unreachable: { readonly reason: string; readonly since: number } | null;
}

/** Queues the notifications of a health change, in the caller's transaction. */
export interface StatusNotifier {
  clusterHealthChanged(change: HealthChange): Promise<void>;
}

/** Settings of the scheduler. */
export interface StatusSchedulerOptions {
  /** Seconds between collections of a cluster; 0: no collection. */
  readonly intervalS: number;
  /** `ceph --connect-timeout`. */
  readonly connectTimeoutS: number;
  /** How long a runner has to answer; by default what the runner may take on every monitor. */
  readonly answerTimeoutMs?: number;
}

/** Points are kept this long, one a minute at most. */
export const HISTORY_S = 24 * 3600;
const POINT_EVERY_S = 60;
/** How many due rows `take` reads and locks at a time. */
const TAKE_PAGE = 200;
/** A cluster no runner of this replica serves is looked at again after this. */
const NO_RUNNER_RETRY_MS = 5_000;
/** How many clusters the start collects at once, the next ones a second later each. */
const RESUME_PER_SECOND = 50;
/** The most monitors a request lists (STATUS_LIMITS.maxMonitors of the protocol). */
const MAX_MONITORS = 16;

type Health = 'HEALTH_OK' | 'HEALTH_WARN' | 'HEALTH_ERR' | 'UNREACHABLE';

/**
 * Cluster status collection (issue 30): every `intervalS` seconds, and at once after an
 * execution on the cluster ended, one runner serving a cluster's monitor addresses
 * (`runnerServes`) is asked to run Ceph's status commands there (`CollectStatus`); its
 * answer replaces the cluster's row of `cluster_statuses`, adds a history point (one a
 * minute, and one at each change of health; 24 hours kept), and, when the health changed, queues the notifications in
 * the same transaction.
 *
 * The rows are shared by the replicas as `facts_requests` rows are (`FactsScheduler`): one
 * replica claims a due row (`FOR UPDATE SKIP LOCKED` on PostgreSQL), gives it a new request
 * id and the answer's deadline; the answer is recorded by whichever replica receives it if it
 * carries that request id. So one runner collects a cluster per interval, and one replica
 * records (and notifies) each collection. An answer that does not come in time (a runner
 * that died, or one older than this message, which ignores it) counts as a failed attempt.
 * No server lock is taken: collection reads, and runs beside the executions.
 */
export class StatusScheduler {
  /** Emitted when collections may be due (this replica's or another's). */
  readonly requested = new Signal<void>();
  private readonly intervalMs: number;
  private look = true;
  private lookAtMs = Infinity;
  private readonly offs: (() => void)[] = [];

  constructor(
    private readonly clusters: VersionedRepository<ClusterData>,
    private readonly servers: { liveMany(ids: readonly string[]): Promise<{ found: Stored<ServerData>[] }> },
    private readonly repo: ClusterStatusRepository,
    private readonly notifier: StatusNotifier,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: StatusSchedulerOptions,
  ) {
    this.intervalMs = options.intervalS * 1000;
    this.offs.push(this.requested.on(() => (this.look = true)));
  }

  /**
   * How long a runner has to answer a request with `monitors` hosts: what it may take on each
   * (the SSH login, 10 s by default, and the script: six commands of `connectTimeoutS` each,
   * plus 5 s), and 15 s more.
   */
  private answerTimeoutMs(monitors: number): number {
    return this.options.answerTimeoutMs ?? 15_000 + Math.max(1, monitors) * (6 * this.options.connectTimeoutS * 1000 + 15_000);
  }

  /** Whether collection is on (`status.intervalS` > 0). */
  get enabled(): boolean {
    return this.intervalMs > 0;
  }

  /** Rows for every cluster with monitors that has none yet (at start: clusters deployed before this release). */
  async resume(): Promise<void> {
    if (!this.enabled) return;
    const nowMs = this.clock.nowMs();
    const page = await this.clusters.list({ page: 1, perPage: 1, all: true });
    let n = 0;
    for (const cluster of page.items) {
      if ((cluster.data.configuration.mons ?? []).length === 0) continue;
      // Many clusters start spread, RESUME_PER_SECOND a second (within the interval), and
      // stay spread: each is due again an interval after its own attempt.
      const delayMs = Math.min(this.intervalMs, Math.floor(n / RESUME_PER_SECOND) * 1000);
      await this.repo.ensure(cluster.id, nowMs + delayMs);
      n += 1;
    }
    if (n > 0) this.requested.emit();
  }

  /**
   * An execution on the cluster ended (in its transaction): collect it at once, also when
   * the execution deployed it (its first monitors). Never rejects.
   */
  async executionEnded(clusterId: string): Promise<void> {
    if (!this.enabled) return;
    try {
      await this.repo.transaction(() => this.repo.collectSoon(clusterId, this.clock.nowMs()));
      this.repo.afterCommit(() => this.requested.emit());
    } catch (err) {
      this.log.warn({ err, clusterId }, 'cannot ask for the status of the cluster');
    }
  }

  /**
   * Hands due collections to the given runners (this replica's), round-robin among those
   * that serve a monitor of the cluster. What is returned is claimed: it must be sent.
   */
  async take(runners: readonly { name: string; labels: Readonly<Record<string, string>> }[]): Promise<{ runner: string; request: StatusRequest }[]> {
    const nowMs = this.clock.nowMs();
    if (!this.enabled || runners.length === 0 || (!this.look && nowMs < this.lookAtMs)) return [];
    this.look = false;
    this.lookAtMs = Infinity;
    if (!(await this.repo.anyDue(nowMs))) return [];
    const expired: { clusterId: string; runner: string }[] = [];
    const out = await this.repo.transaction(async () => {
      const out: { runner: string; request: StatusRequest }[] = [];
      let turn = 0;
      let after: { dueMs: number; clusterId: string } | undefined;
      for (;;) {
        const page = await this.repo.due(nowMs, TAKE_PAGE, after);
        const last = page.at(-1);
        if (!last) break;
        after = { dueMs: last.dueMs, clusterId: last.clusterId };
        const clusters = await this.clusters.getMany(page.map((r) => r.clusterId));
        const memberIds = [...clusters.values()].flatMap((c) => (c.data.configuration.mons ?? []).map((m) => m.server_id));
        const servers = new Map((await this.servers.liveMany(memberIds)).found.map((s) => [s.id, s]));
        for (const row of page) {
          const cluster = clusters.get(row.clusterId);
          const mons = cluster && cluster.time_deleted === 0 ? (cluster.data.configuration.mons ?? []) : [];
          if (mons.length === 0) {
            await this.repo.remove(row.clusterId); // deleted, purged: nothing to collect
            continue;
          }
          const targets: MonitorTarget[] = mons.flatMap((m) => {
            const server = servers.get(m.server_id);
            const address = server?.data.ip || m.ip || server?.data.fqdn || m.fqdn;
            if (!address) return [];
            return [{ address, username: server?.data.username ?? 'ansible', expectedHostKey: server?.data.ssh_host_key ?? null }];
          });
          if (row.runner !== null) {
            // The answer's deadline passed: a failed attempt (a runner that died, or one older
            // than this message, which ignores it); collected again at the next interval.
            const full = await this.repo.get(row.clusterId);
            const waitedMs = Math.max(0, row.dueMs - (row.sentMs ?? row.dueMs));
            const why = `runner ${row.runner} did not answer within ${Math.round(waitedMs / 1000)} s (a runner older than the status collection ignores it)`;
            const attempt = JSON.stringify({ runner: row.runner, monitor: targets[0]?.address ?? '', duration_ms: waitedMs });
            if (full) await this.record(full, row.requestId, Math.floor(nowMs / 1000), attempt, null, why);
            expired.push({ clusterId: row.clusterId, runner: row.runner });
            continue;
          }
          const eligible = runners.filter((r) => targets.some((t) => runnerServes(r.labels, t.address)));
          const runner = eligible[turn++ % Math.max(1, eligible.length)];
          if (!runner) {
            await this.repo.postpone(row.clusterId, nowMs + NO_RUNNER_RETRY_MS);
            this.lookAtMs = Math.min(this.lookAtMs, nowMs + NO_RUNNER_RETRY_MS);
            continue;
          }
          const requestId = randomUUID();
          const monitors = targets.filter((t) => runnerServes(runner.labels, t.address)).slice(0, MAX_MONITORS);
          const deadlineMs = nowMs + this.answerTimeoutMs(monitors.length);
          await this.repo.claim(row.clusterId, requestId, runner.name, nowMs, deadlineMs);
          this.lookAtMs = Math.min(this.lookAtMs, deadlineMs);
          out.push({
            runner: runner.name,
            request: {
              requestId,
              clusterId: row.clusterId,
              monitors,
              cephCluster: 'ceph',
              connectTimeoutS: this.options.connectTimeoutS,
            },
          });
        }
        if (page.length < TAKE_PAGE) break;
      }
      return out;
    });
    for (const e of expired) this.log.warn({ clusterId: e.clusterId, runner: e.runner }, 'no status answer in time; collected again at the next interval');
    return out;
  }

  /**
   * Records a runner's answer, whichever replica handed the request out: only the answer to
   * the request the row holds, from the runner it was handed to.
   */
  async complete(runner: string, answer: StatusAnswer): Promise<void> {
    const row = await this.repo.get(answer.clusterId);
    if (!row || row.requestId !== answer.requestId || row.runner !== runner) {
      this.log.info({ runner, clusterId: answer.clusterId }, 'ignored a status answer nobody waits for');
      return;
    }
    const nowS = Math.floor(this.clock.nowMs() / 1000);
    let report: CephReport | null = null;
    let error = answer.ok ? null : answer.error;
    if (answer.ok) {
      try {
        report = parseCephReport(answer.outputs, await this.hostNames(answer.clusterId));
      } catch (err) {
        if (!(err instanceof CephOutputError)) throw err;
        error = `${answer.monitor}: ${err.message}`;
      }
    }
    const collection = JSON.stringify({ runner, monitor: answer.monitor, duration_ms: Math.max(0, Math.round(answer.durationMs)) });
    const recorded = await this.record(row, answer.requestId, nowS, collection, report, error);
    if (!recorded) this.log.info({ runner, clusterId: answer.clusterId }, 'ignored a status answer nobody waits for any more');
    else if (report) this.log.debug({ runner, clusterId: answer.clusterId, health: report.health.status, durationMs: answer.durationMs }, 'cluster status collected');
    else this.log.info({ runner, clusterId: answer.clusterId, error }, 'cluster status not collected: the monitors did not answer');
  }

  /** Records an attempt, its history point and its notification in one transaction; whether the row still held the request. */
  private async record(row: StoredClusterStatus, requestId: string, nowS: number, collection: string, report: CephReport | null, error: string | null): Promise<boolean> {
    const health: Health = report ? report.health.status : 'UNREACHABLE';
    const since = report ? null : (row.unreachableSince ?? nowS);
    const numbers = report
      ? {
          osdsUp: report.osds.up,
          osdsIn: report.osds.in,
          osdsTotal: report.osds.total,
          rawTotalBytes: report.capacity.raw_total_bytes,
          rawUsedBytes: report.capacity.raw_used_bytes,
        }
      : { osdsUp: row.osdsUp, osdsIn: row.osdsIn, osdsTotal: row.osdsTotal, rawTotalBytes: row.rawTotalBytes, rawUsedBytes: row.rawUsedBytes };
    const dueMs = this.clock.nowMs() + this.intervalMs;
    this.lookAtMs = Math.min(this.lookAtMs, dueMs);
    return this.repo.transaction(async () => {
      const changed = await this.repo.record(row.clusterId, requestId, {
        dueMs,
        attemptedAt: nowS,
        collection,
        health,
        success: report ? { report: JSON.stringify(report), collectedAt: nowS, numbers } : null,
        failure: report ? null : { reason: (error ?? 'unknown').slice(0, 2000), since: since ?? nowS },
      });
      if (!changed) return false;
      // A point a minute, and one at every change of health: a short outage stays on the chart.
      if (row.pointAt === null || nowS - row.pointAt >= POINT_EVERY_S || (row.health !== null && row.health !== health)) {
        await this.repo.addPoint(row.clusterId, { at: nowS, health, ...numbers }, nowS - HISTORY_S);
      }
      // Read again under the row's lock (taken by the update): the health last notified.
      const notified = (await this.repo.get(row.clusterId))?.notifiedHealth ?? null;
      if (notified !== health) {
        await this.repo.setNotified(row.clusterId, health);
        // The first report of a healthy cluster is no change worth a message.
        if (!(notified === null && health === 'HEALTH_OK')) {
          const cluster = await this.clusters.get(row.clusterId);
          await this.notifier.clusterHealthChanged({
            clusterId: row.clusterId,
            clusterName: cluster?.data.name ?? null,
            previous: notified,
            current: health,
            time: nowS,
            checks: report?.health.checks ?? [],
            unreachable: report ? null : { reason: (error ?? 'unknown').slice(0, 2000), since: since ?? nowS },
          });
        }
      }
      return true;
    });
  }

  /** The cluster's servers by host name (FQDN, its first label, the facts' hostname, the server's name). */
  private async hostNames(clusterId: string): Promise<Map<string, string>> {
    const cluster = await this.clusters.get(clusterId);
    const ids = [...new Set(Object.values(cluster?.data.configuration ?? {}).flatMap((members) => members.map((m) => m.server_id)))];
    const out = new Map<string, string>();
    for (const s of (await this.servers.liveMany(ids)).found) {
      const facts = s.data.facts as { hostname?: unknown };
      for (const name of [s.data.fqdn, s.data.fqdn.split('.')[0], typeof facts.hostname === 'string' ? facts.hostname : '', s.data.name]) {
        if (name && !out.has(name)) out.set(name, s.id);
      }
    }
    return out;
  }

  /** A cluster's status for the API (the cluster exists and the caller may view it). */
  async status(cluster: Stored<ClusterData>): Promise<ClusterStatus> {
    return this.toApi(cluster, await this.repo.get(cluster.id));
  }

  /** The status of each of these clusters, in their order. */
  async statuses(clusters: readonly Stored<ClusterData>[]): Promise<ClusterStatus[]> {
    const rows = new Map((await this.repo.getMany(clusters.map((c) => c.id))).map((r) => [r.clusterId, r]));
    return clusters.map((c) => this.toApi(c, rows.get(c.id)));
  }

  /** The points of the last `hours`, oldest first. */
  async history(clusterId: string, hours: number): Promise<ClusterStatusPoint[]> {
    const since = Math.floor(this.clock.nowMs() / 1000) - hours * 3600;
    const points = await this.repo.history(clusterId, since);
    return points.map((p) => ({
      at: p.at,
      health: p.health as ClusterStatusPoint['health'],
      raw_total_bytes: p.rawTotalBytes,
      raw_used_bytes: p.rawUsedBytes,
      osds_up: p.osdsUp,
      osds_in: p.osdsIn,
      osds_total: p.osdsTotal,
    }));
  }

  private toApi(cluster: Stored<ClusterData>, row: StoredClusterStatus | undefined): ClusterStatus {
    const hasMons = (cluster.data.configuration.mons ?? []).length > 0;
    const base = { cluster_id: cluster.id };
    if (!row || row.attemptedAt === null) {
      return { ...base, state: hasMons ? 'pending' : 'not_deployed', collected_at: null, attempted_at: null, unreachable: null, collection: null, ceph: null };
    }
    const unreachable = row.unreachableReason !== null ? { reason: row.unreachableReason, since: row.unreachableSince ?? row.attemptedAt } : null;
    return {
      ...base,
      state: !hasMons ? 'not_deployed' : unreachable ? 'unreachable' : 'collected',
      collected_at: row.collectedAt,
      attempted_at: row.attemptedAt,
      unreachable,
      collection: row.collection ? (JSON.parse(row.collection) as ClusterStatus['collection']) : null,
      ceph: row.report ? (JSON.parse(row.report) as CephReport) : null,
    };
  }

  /** Every cluster's health and numbers, for `/metrics`. */
  gauges(): ReturnType<ClusterStatusRepository['gauges']> {
    return this.repo.gauges();
  }

  /**
   * Looks at the rows every second (wakes the dispatcher when one is due) and drops the
   * history older than 24 hours every ten minutes. Returns its stop.
   */
  start(): () => void {
    if (!this.enabled) return () => undefined;
    let looking = false;
    let ticks = 0;
    const timer = setInterval(() => {
      if (looking) return;
      looking = true;
      const nowMs = this.clock.nowMs();
      const prune = ticks++ % 600 === 0 ? this.repo.prune(Math.floor(nowMs / 1000) - HISTORY_S) : Promise.resolve(0);
      Promise.all([this.repo.anyDue(nowMs), prune])
        .then(([due]) => {
          if (due) this.requested.emit();
        })
        .catch((err: unknown) => this.log.warn({ err }, 'could not look at the cluster statuses'))
        .finally(() => (looking = false));
    }, 1000);
    timer.unref();
    return () => clearInterval(timer);
  }

  close(): void {
    for (const off of this.offs) off();
  }
}
