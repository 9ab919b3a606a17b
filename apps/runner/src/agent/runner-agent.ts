import type { Logger } from 'pino';
import type { RunResult } from '../executor/index.js';
import { assertNever, StateMachine } from '../state-machine.js';
import type { AgentOptions, AgentPorts, AgentStatus, AgentTelemetry, ControlCommand, ExecutionAssignment, FactsRequest, StatusRequest } from './agent.types.js';
import { ended, ExecutionRun } from './execution-run.js';
import { StreamSession, type SessionOwner } from './stream-session.js';

type Lifecycle = 'idle' | 'serving' | 'draining' | 'stopped';

const LIFECYCLE: Readonly<Record<Lifecycle, readonly Lifecycle[]>> = {
  idle: ['serving', 'draining', 'stopped'],
  serving: ['draining', 'stopped'],
  draining: ['stopped'],
  stopped: [],
};

/** An `AgentTelemetry` that records nothing. */
export const NO_TELEMETRY: AgentTelemetry = {
  connected: () => undefined,
  streamFailed: () => undefined,
  resent: () => undefined,
  runStarted: () => undefined,
  runFinished: () => undefined,
};

/** How long a drain waits for the control plane to acknowledge the last events. */
const LAST_ACKS_WAIT_MS = 5000;

interface Running {
  readonly run: ExecutionRun;
  /** Resolves when the run's result is in the outbox. */
  readonly done: Promise<void>;
}

/**
 * The runner agent: keeps one `RunnerService.Connect` stream to the control plane open
 * (`StreamSession`), runs the executions it is assigned against its free slots
 * (`ExecutionRun`), relays cancels, gathers facts, and drains on shutdown.
 */
export class RunnerAgent implements SessionOwner {
  /** Resolves when the agent has stopped (after `stop()` or `drain()`). */
  readonly stopped: Promise<void>;
  private readonly lifecycle: StateMachine<Lifecycle>;
  private readonly session: StreamSession;
  private readonly running = new Map<string, Running>();
  private assignments = 0;
  private drainPromise: Promise<void> | null = null;
  private stopResolve: () => void = () => undefined;

  constructor(
    private readonly options: AgentOptions,
    private readonly ports: AgentPorts,
    private readonly log: Logger,
    private readonly telemetry: AgentTelemetry = NO_TELEMETRY,
  ) {
    this.lifecycle = new StateMachine<Lifecycle>('runner', 'idle', LIFECYCLE, log);
    this.session = new StreamSession(options, this, log, telemetry);
    this.stopped = new Promise((resolve) => (this.stopResolve = resolve));
  }

  /** Counters for tests and the log. */
  get stats(): { readonly connects: number; readonly assignments: number; readonly resent: number } {
    return { ...this.session.stats, assignments: this.assignments };
  }

  /** Executions under way. */
  get runningIds(): string[] {
    return [...this.running.keys()];
  }

  /** Unacknowledged events. */
  get pendingEvents(): number {
    return this.session.pendingEvents;
  }

  get draining(): boolean {
    return this.lifecycle.state === 'draining';
  }

  /** Slots, outbox and connection as they are now (read by the metrics at each scrape). */
  status(): AgentStatus {
    return {
      slots: this.options.slots,
      busySlots: this.running.size,
      draining: this.draining,
      controlPlane: this.session.controlPlane,
      outboxEvents: this.session.pendingEvents,
      outboxMemoryBytes: this.session.pendingMemoryBytes,
    };
  }

  /** Opens the stream (and keeps it open). */
  start(): void {
    if (this.lifecycle.state !== 'idle') return;
    this.lifecycle.transition('serving');
    // A runner that died (SIGKILL, power loss) leaves its ansible-playbook process groups
    // behind; the control plane fails those executions, so their processes must not go on
    // changing servers.
    for (const orphan of this.ports.records.recover()) {
      this.log.warn(orphan, 'killed the processes of a run left by a previous runner process');
    }
    this.session.open();
  }

  /**
   * Graceful shutdown: tells the control plane it takes no new work, lets running executions
   * finish within the grace period, cancels the rest, waits for their results to be
   * acknowledged (bounded), then closes.
   */
  drain(reason = 'runner shutting down'): Promise<void> {
    switch (this.lifecycle.state) {
      case 'stopped':
        return Promise.resolve();
      case 'draining':
        return this.drainPromise ?? Promise.resolve();
      case 'idle':
      case 'serving':
        this.drainPromise = this.drainRuns(reason);
        return this.drainPromise;
      default:
        return assertNever(this.lifecycle.state);
    }
  }

  /** Closes at once (running executions are left to their leases). */
  stop(): void {
    if (this.lifecycle.state === 'stopped') return;
    this.lifecycle.transition('stopped');
    this.session.close();
    for (const { run } of this.running.values()) run.stopTimers();
    this.stopResolve();
  }

  /** Drops the stream as a network failure would (tests of reconnection). */
  interrupt(): void {
    this.session.interrupt();
  }

  hello(): { slots: number; runningExecutionIds: string[] } {
    return { slots: this.draining ? 0 : this.options.slots, runningExecutionIds: this.runningIds };
  }

  freeSlots(): number {
    return Math.max(0, this.options.slots - this.running.size);
  }

  abandoned(executionId: string): void {
    this.running.get(executionId)?.run.cancel('the control plane gave the execution up');
  }

  command(command: ControlCommand): void {
    switch (command.kind) {
      case 'assignment':
        this.assign(command.assignment);
        return;
      case 'cancel':
        this.running.get(command.executionId)?.run.cancel(command.reason);
        return;
      case 'drain':
        void this.drain(command.reason);
        return;
      case 'gather_facts':
        void this.gatherFacts(command.request);
        return;
      case 'collect_status':
        void this.collectStatus(command.request);
        return;
      default:
        assertNever(command);
    }
  }

  private async drainRuns(reason: string): Promise<void> {
    this.lifecycle.transition('draining');
    this.session.announceDraining(reason);
    this.log.info({ running: this.runningIds, graceMs: this.options.drainGraceMs }, 'draining');
    const all = () => Promise.all([...this.running.values()].map((r) => r.done)).then(() => undefined);
    const finished = await within(all(), this.options.drainGraceMs);
    if (!finished) {
      for (const { run } of this.running.values()) run.cancel('the runner shut down before the run ended');
      await all();
    }
    // Give the control plane a moment to acknowledge the last events, also while the stream
    // is down: it may come back in time (the session keeps reconnecting).
    await within(Promise.race([this.session.delivered(), this.stopped]), LAST_ACKS_WAIT_MS);
    this.stop();
  }

  private assign(assignment: ExecutionAssignment): void {
    const id = assignment.executionId;
    if (this.running.has(id)) return; // a repeat after a reconnect
    this.assignments += 1;
    this.telemetry.runStarted();
    this.log.info({ executionId: id, playbook: assignment.playbookId }, 'execution assigned');
    if (this.draining) {
      this.report(id, ended('failed', `runner ${this.options.name} was shutting down`));
      return;
    }
    const configuration = assignment.configuration;
    if (configuration === null) {
      this.report(id, ended('failed', 'the configuration sent by the control plane is not valid'));
      return;
    }
    const run = new ExecutionRun(
      { ...assignment, configuration },
      this.ports,
      { runnerName: this.options.name, logChunkChars: this.options.logChunkChars, logFlushMs: this.options.logFlushMs },
      {
        step: (step) => this.session.emit(id, { kind: 'step', step }),
        log: (offset, text) => this.session.emit(id, { kind: 'log', offset, text }),
      },
      this.log,
    );
    const done = run.result
      .then((result) => {
        this.running.delete(id);
        this.report(id, result);
      })
      .catch((err: unknown) => this.log.error({ err, executionId: id }, 'cannot report the end of an execution'));
    this.running.set(id, { run, done });
  }

  private report(id: string, result: RunResult): void {
    // Before the result, in the same sequence: acknowledged and resent like every event, and
    // stored by the control plane by the time the result makes it apply them.
    if (result.outcome === 'completed') {
      for (const artifact of result.artifacts ?? []) this.session.emit(id, { kind: 'artifact', artifact });
    }
    this.session.emit(id, { kind: 'result', outcome: result.outcome, reason: result.reason });
    this.telemetry.runFinished(result.outcome);
    this.log.info({ executionId: id, outcome: result.outcome, reason: result.reason }, 'execution ended');
  }

  private async gatherFacts(request: FactsRequest): Promise<void> {
    const ids = { requestId: request.requestId, serverId: request.serverId };
    try {
      const { facts, hostKey } = await this.ports.gatherFacts(request.target);
      this.session.answerFacts({ ...ids, ok: true, facts, hostKey });
    } catch (err) {
      this.session.answerFacts({ ...ids, ok: false, error: (err as Error).message });
    }
  }

  // Not a slot's work: a collection is a few seconds of SSH, run beside the executions.
  private async collectStatus(request: StatusRequest): Promise<void> {
    const ids = { requestId: request.requestId, clusterId: request.clusterId };
    try {
      this.session.answerStatus({ ...ids, ...(await this.ports.collectStatus(request)) });
    } catch (err) {
      this.session.answerStatus({ ...ids, ok: false, error: (err as Error).message, monitor: request.monitors.at(-1)?.address ?? '', durationMs: 0 });
    }
  }
}

/** Whether `promise` settled within `ms` (the timer does not keep the process alive). */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
