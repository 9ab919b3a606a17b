import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ConnectionCounts } from '../db/database.js';
import type { StatsRepository } from '../db/stats.repository.js';
import type { Clock } from '../ports.js';

/** What the metrics read through this replica at a scrape. */
export interface LocalState {
  /** Runner streams open on this replica. */
  connectedRunners(): number;
  /** Servers waiting for their facts (the whole installation: the requests are in the database). */
  factsPending(): Promise<number>;
  /** Every collected cluster's last health and numbers, with its name (the whole installation). */
  clusterStatus?(): Promise<readonly ClusterGaugeRow[]>;
  /** This replica's database connections (`Database.connections`). */
  databaseConnections(): ConnectionCounts;
}

/** A cluster's row of the status gauges. */
export interface ClusterGaugeRow {
  readonly clusterId: string;
  readonly name: string;
  /** `HEALTH_OK`, `HEALTH_WARN`, `HEALTH_ERR`, `UNREACHABLE`; null before the first attempt. */
  readonly health: string | null;
  readonly collectedAt: number | null;
  readonly osdsUp: number;
  readonly osdsIn: number;
  readonly osdsTotal: number;
  readonly rawTotalBytes: number;
  readonly rawUsedBytes: number;
}

/** `carapace_cluster_health`: Ceph's health as a number (unreachable: 3). */
export const HEALTH_VALUES: Readonly<Record<string, number>> = { HEALTH_OK: 0, HEALTH_WARN: 1, HEALTH_ERR: 2, UNREACHABLE: 3 };

/**
 * The control plane's Prometheus metrics, in a registry of its own (one per control plane,
 * so that several in one process, as in tests, do not collide). Counters and the request
 * histogram are of this replica; the gauges of executions, the queue, the leases and the facts
 * requests are read from the database at each scrape, so any replica reports the whole installation.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly logBytes: Counter;
  readonly factsResults: Counter<'result'>;
  readonly dispatched: Counter;

  constructor(stats: StatsRepository, clock: Clock, local: LocalState) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({
      name: 'carapace_http_requests_total',
      help: 'HTTP requests answered by this replica, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'carapace_http_request_duration_seconds',
      help: 'Time to answer an HTTP request on this replica, by method and route pattern.',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.logBytes = new Counter({
      name: 'carapace_execution_log_bytes_total',
      help: 'Bytes of execution logs stored through this replica.',
      registers,
    });
    this.factsResults = new Counter({
      name: 'carapace_facts_gathered_total',
      help: 'Facts gathering answers received by this replica, by result (ok, failed).',
      labelNames: ['result'],
      registers,
    });
    this.dispatched = new Counter({
      name: 'carapace_executions_dispatched_total',
      help: 'Executions handed to runners by this replica.',
      registers,
    });
    new Gauge({
      name: 'carapace_executions',
      help: 'Live executions by state (the whole installation).',
      labelNames: ['state'],
      registers,
      async collect() {
        this.reset();
        for (const [state, n] of await stats.executionsByState()) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'carapace_execution_queue_depth',
      help: 'Executions waiting for a runner (state created).',
      registers,
      async collect() {
        this.set((await stats.queue()).depth);
      },
    });
    new Gauge({
      name: 'carapace_execution_queue_oldest_age_seconds',
      help: 'How long the oldest queued execution has waited; 0 when none waits.',
      registers,
      async collect() {
        const { oldestS } = await stats.queue();
        this.set(oldestS === null ? 0 : Math.max(0, Math.floor(clock.nowMs() / 1000) - oldestS));
      },
    });
    new Gauge({
      name: 'carapace_server_leases',
      help: 'Servers locked by running executions (unexpired leases).',
      registers,
      async collect() {
        this.set(await stats.leases(clock.nowMs()));
      },
    });
    new Gauge({
      name: 'carapace_runners_connected',
      help: 'Runner streams open on this replica.',
      registers,
      collect() {
        this.set(local.connectedRunners());
      },
    });
    new Gauge({
      name: 'carapace_facts_pending',
      help: 'Servers waiting for their facts (the whole installation).',
      registers,
      async collect() {
        this.set(await local.factsPending());
      },
    });
    // The cluster gauges: one read of the statuses per scrape, shared by the gauges; labels
    // are the cluster's id and name only (bounded: one series per cluster and gauge).
    let clusterRead: { at: number; rows: Promise<readonly ClusterGaugeRow[]> } | null = null;
    const clusters = (): Promise<readonly ClusterGaugeRow[]> => {
      const now = clock.nowMs();
      if (!local.clusterStatus) return Promise.resolve([]);
      if (!clusterRead || now - clusterRead.at > 1000) clusterRead = { at: now, rows: local.clusterStatus() };
      return clusterRead.rows;
    };
    const labels = (r: ClusterGaugeRow) => ({ cluster_id: r.clusterId, cluster_name: r.name });
    const clusterGauge = (name: string, help: string, value: (r: ClusterGaugeRow) => number | null, extra?: string) =>
      new Gauge({
        name,
        help,
        labelNames: ['cluster_id', 'cluster_name', ...(extra ? [extra] : [])],
        registers,
        async collect() {
          this.reset();
          for (const r of await clusters()) {
            const v = value(r);
            if (v !== null) this.set(labels(r), v);
          }
        },
      });
    clusterGauge(
      'carapace_cluster_health',
      "Ceph's health of each cluster at its last collection: 0 HEALTH_OK, 1 HEALTH_WARN, 2 HEALTH_ERR, 3 the monitors do not answer (none before the first attempt).",
      (r) => (r.health === null ? null : (HEALTH_VALUES[r.health] ?? null)),
    );
    clusterGauge('carapace_cluster_status_collected_timestamp_seconds', "When each cluster's status was last collected (Unix seconds).", (r) => r.collectedAt);
    clusterGauge('carapace_cluster_raw_total_bytes', "Each cluster's raw capacity (ceph df), at its last collection.", (r) => (r.collectedAt === null ? null : r.rawTotalBytes));
    clusterGauge('carapace_cluster_raw_used_bytes', "Each cluster's raw space used (ceph df), at its last collection.", (r) => (r.collectedAt === null ? null : r.rawUsedBytes));
    new Gauge({
      name: 'carapace_cluster_osds',
      help: "Each cluster's OSDs at its last collection, by state: total, up, in.",
      labelNames: ['cluster_id', 'cluster_name', 'state'],
      registers,
      async collect() {
        this.reset();
        for (const r of await clusters()) {
          if (r.collectedAt === null) continue;
          this.set({ ...labels(r), state: 'total' }, r.osdsTotal);
          this.set({ ...labels(r), state: 'up' }, r.osdsUp);
          this.set({ ...labels(r), state: 'in' }, r.osdsIn);
        }
      },
    });
    new Gauge({
      name: 'carapace_database_connections',
      help: "This replica's database connections: open, busy (a statement or a transaction holds it).",
      labelNames: ['state'],
      registers,
      collect() {
        const { open, busy } = local.databaseConnections();
        this.set({ state: 'open' }, open);
        this.set({ state: 'busy' }, busy);
      },
    });
    new Gauge({
      name: 'carapace_database_waiting',
      help: 'Callers of this replica waiting for a database connection: often above 0, the pool is too small (database.poolSize).',
      registers,
      collect() {
        this.set(local.databaseConnections().waiting);
      },
    });
  }

  /** The text exposition of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
