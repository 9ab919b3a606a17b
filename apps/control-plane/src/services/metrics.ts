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
  /** This replica's database connections (`Database.connections`). */
  databaseConnections(): ConnectionCounts;
}

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
