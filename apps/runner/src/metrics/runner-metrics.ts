import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { AgentStatus, AgentTelemetry } from '../agent/index.js';
import type { RunOutcome } from '../executor/index.js';

/** Every outcome a run may end with: each `runs_finished_total` series exists from the start. */
const OUTCOMES: readonly RunOutcome[] = ['completed', 'failed', 'canceled'];

/** What the metrics name: the runner and the addresses it may connect to. */
export interface RunnerMetricsOptions {
  readonly name: string;
  readonly version: string;
  readonly controlPlanes: readonly string[];
}

/**
 * The runner's Prometheus metrics, in a registry of its own (never prom-client's global one,
 * so that several agents in one process keep theirs apart): what the agent reports as it goes
 * (`AgentTelemetry`: connects, stream failures, runs) as counters, and its state (slots,
 * outbox, the connected control plane) read from the agent at each scrape, plus prom-client's
 * default process and Node.js metrics.
 */
export class RunnerMetrics implements AgentTelemetry {
  readonly registry = new Registry();
  private status: (() => AgentStatus) | null = null;
  private readonly reconnects: Counter;
  private readonly streamFailures: Counter<'address'>;
  private readonly eventsResent: Counter;
  private readonly runsStarted: Counter;
  private readonly runsFinished: Counter<'outcome'>;

  constructor(options: RunnerMetricsOptions) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    const current = (): AgentStatus | null => this.status?.() ?? null;
    // A gauge read at scrape time: prom-client calls `collect` with the gauge as `this`.
    const read = (pick: (status: AgentStatus) => number) =>
      function collect(this: Gauge) {
        const status = current();
        if (status) this.set(pick(status));
      };
    new Gauge({
      name: 'carapace_runner_info',
      help: 'The runner: its name and version (always 1).',
      labelNames: ['name', 'version'],
      registers,
    }).set({ name: options.name, version: options.version }, 1);
    new Gauge({ name: 'carapace_runner_slots', help: 'Executions this runner may run at once.', registers, collect: read((s) => s.slots) });
    new Gauge({ name: 'carapace_runner_slots_busy', help: 'Executions running now.', registers, collect: read((s) => s.busySlots) });
    new Gauge({ name: 'carapace_runner_draining', help: '1 while the runner drains (takes no new work), else 0.', registers, collect: read((s) => (s.draining ? 1 : 0)) });
    new Gauge({
      name: 'carapace_runner_outbox_events',
      help: 'Events (steps, log chunks, files, results) not yet acknowledged by the control plane, in memory and spilled to disk.',
      registers,
      collect: read((s) => s.outboxEvents),
    });
    new Gauge({
      name: 'carapace_runner_outbox_memory_bytes',
      help: 'Bytes of the unacknowledged events kept in memory (past the bound they spill to disk).',
      registers,
      collect: read((s) => s.outboxMemoryBytes),
    });
    new Gauge({
      name: 'carapace_runner_control_plane_connected',
      help: 'Per configured control-plane address: 1 when the runner stream is connected to it, else 0.',
      labelNames: ['address'],
      registers,
      collect(this: Gauge<'address'>) {
        const connected = current()?.controlPlane ?? null;
        for (const address of options.controlPlanes) this.set({ address }, address === connected ? 1 : 0);
      },
    });
    this.reconnects = new Counter({ name: 'carapace_runner_reconnects_total', help: 'Streams to the control plane established again after the first one.', registers });
    this.streamFailures = new Counter({
      name: 'carapace_runner_stream_failures_total',
      help: 'Streams to a control-plane address that were lost or could not be opened.',
      labelNames: ['address'],
      registers,
    });
    this.eventsResent = new Counter({ name: 'carapace_runner_events_resent_total', help: 'Unacknowledged events sent again after a reconnect.', registers });
    this.runsStarted = new Counter({ name: 'carapace_runner_runs_started_total', help: 'Executions assigned to this runner.', registers });
    this.runsFinished = new Counter({
      name: 'carapace_runner_runs_finished_total',
      help: 'Executions of this runner that ended, by outcome.',
      labelNames: ['outcome'],
      registers,
    });
    for (const address of options.controlPlanes) this.streamFailures.inc({ address }, 0);
    for (const outcome of OUTCOMES) this.runsFinished.inc({ outcome }, 0);
  }

  /** Reads the agent's state at every scrape from now on. */
  watch(agent: { status(): AgentStatus }): void {
    this.status = () => agent.status();
  }

  connected(_address: string, reconnect: boolean): void {
    if (reconnect) this.reconnects.inc();
  }

  streamFailed(address: string): void {
    this.streamFailures.inc({ address });
  }

  resent(count: number): void {
    this.eventsResent.inc(count);
  }

  runStarted(): void {
    this.runsStarted.inc();
  }

  runFinished(outcome: RunOutcome): void {
    this.runsFinished.inc({ outcome });
  }
}
