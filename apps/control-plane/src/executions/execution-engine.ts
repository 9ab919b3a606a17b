import type { ExecutionData, ExecutionState, PlaybookConfigurationData } from '@carapace/models';
import type { Bus } from '../db/bus.js';
import type { ExecutionEventsRepository } from '../db/execution-events.repository.js';
import type { LockRepository } from '../db/lock.repository.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import type { Clock } from '../ports.js';
import { checkTransition, isFinal, RUNNING_STATES } from './execution-state.js';
import type { RunEffects } from './run-effects.js';
import type { ServerService } from '../infrastructure/server.service.js';
import { EVERY_EXECUTION, parseCancel, parseEvent, type ExecutionEvent } from './execution-events.js';
import { Batcher, HEARTBEAT_BATCHING } from '../batcher.js';
import { ExecutionClaims, hostMap } from './execution-claims.js';
import { RunEnds } from './run-ends.js';
import { RunReports } from './run-reports.js';
import type { Assignment, EventCounts, EventReport, Outcome, Reconciliation, StateChange, StepReport } from './execution.types.js';
import { RunnerLoad } from './runner-load.js';
import { RemoteWork } from './remote-work.js';
import { AsyncSignal, Signal } from '../services/signal.js';

/** Where a running execution's steps come from: its runner, and server id by step host. */
interface RunningExecution {
  readonly runnerId: string;
  readonly hosts: ReadonlyMap<string, string>;
}

/**
 * The control-plane half of running executions (ARCHITECTURE.md "Executions, runners and the
 * protocol"): a queue handing out the oldest runnable execution whose servers can all be
 * locked at once, leases renewed by heartbeats and swept when they expire, steps and log
 * chunks stored once each, and the playbook's effects applied on success.
 *
 * Its signals hear of what happened through any replica sharing the database: the engine
 * publishes on the bus (`Bus`) and emits what the bus delivers, so a runner connected here
 * gets work queued through another replica, a log followed here wakes when another replica
 * stores a chunk, and a cancel reaches the replica holding the runner's stream.
 */
export class ExecutionEngine {
  /** Emitted when new work may be available (an execution queued, locks freed). */
  readonly workAvailable = new Signal<void>();
  /** Emitted for every change of an execution. */
  readonly events = new Signal<ExecutionEvent>();
  /**
   * Emitted when an execution ends (completed, failed, canceled), inside the transaction that
   * stores its final state, and waited for: a listener's writes are committed, or rolled
   * back, with it.
   */
  readonly ended = new AsyncSignal<Stored<ExecutionData>>();
  /** Emitted when a running execution must be canceled: its runner should stop it. */
  readonly cancelRequested = new Signal<{ executionId: string; runnerId: string }>();
  /**
   * The running executions' runners and host maps, so that a step costs no lookup: filled
   * when an execution is handed out, computed once on a miss (after a restart), dropped
   * when the execution ends.
   */
  private readonly running = new Map<string, RunningExecution>();
  /** The runs each runner holds, as this replica knows them (`RunnerLoad`). */
  private readonly load = new RunnerLoad();
  /** Looks at the queue for work other replicas announced (`RemoteWork`). */
  private readonly remoteWork = new RemoteWork(() => this.workAvailable.emit());
  /** Heartbeats waiting to renew their runners' leases together (`heartbeat`). */
  private readonly renewals = new Batcher<string, void>(
    async (runners) => {
      await this.locks.renew(runners, this.clock.nowMs() + this.leaseTimeoutMs);
      return runners.map(() => undefined);
    },
    HEARTBEAT_BATCHING,
  );
  /** Which queued executions start, and where (`claimFor`). */
  private readonly claims: ExecutionClaims;
  /** The ends of runs (`finish`), stored in groups. */
  private readonly ends: RunEnds;
  /** The steps and log chunks runners report (`recordEvents`), stored in groups. */
  private readonly reports: RunReports;

  constructor(
    private readonly executions: VersionedRepository<ExecutionData>,
    private readonly configurations: VersionedRepository<PlaybookConfigurationData>,
    private readonly servers: ServerService,
    private readonly locks: LockRepository,
    private readonly eventsRepo: ExecutionEventsRepository,
    private readonly effects: RunEffects,
    private readonly clock: Clock,
    private readonly leaseTimeoutMs: number,
    private readonly bus: Bus,
  ) {
    this.claims = new ExecutionClaims(executions, configurations, servers, locks, clock, leaseTimeoutMs, (changes) => this.appendMany(changes), (runnerId, executionId, hosts) => {
      this.load.hold(runnerId, executionId);
      this.running.set(executionId, { runnerId, hosts });
    });
    this.ends = new RunEnds(executions, eventsRepo, effects, locks, bus, clock, (changes) => this.appendMany(changes));
    this.reports = new RunReports(eventsRepo, clock, (executionId, host) => this.serverIdOf(executionId, host), (event) => this.publishEvent(event), () => executions.inTransaction());
    bus.subscribe('work', (_payload, from) => (from === 'here' ? this.workAvailable.emit() : this.remoteWork.announced()));
    bus.subscribe('execution', (payload) => {
      const event = parseEvent(payload);
      if (!event) return;
      if (event.final) {
        this.running.delete(event.executionId);
        this.load.release(event.executionId);
      }
      this.events.emit(event);
    });
    bus.subscribe('cancel', (payload) => {
      const cancel = parseCancel(payload);
      if (cancel) this.cancelRequested.emit(cancel);
    });
    bus.onResync(() => {
      this.events.emit({ executionId: EVERY_EXECUTION, kind: 'resync' });
      this.workAvailable.emit();
    });
  }

  private publishEvent(event: ExecutionEvent): Promise<void> {
    return this.bus.publish('execution', JSON.stringify(event));
  }

  /** The latest version of an execution, or undefined. */
  get(executionId: string): Promise<Stored<ExecutionData> | undefined> {
    return this.executions.get(executionId);
  }

  /** Says that an execution was queued (once the caller's transaction, if any, commits), to every replica. */
  queued(): Promise<void> {
    return this.bus.publish('work');
  }

  /**
   * Hands up to `slots` executions to a runner: queued executions in creation order; one
   * starts only if all its servers can be locked at once, and never ahead of an older
   * queued execution that waits for one of the same servers. Which runner, and how many
   * slots it has free, is `Dispatch`'s decision (executions/dispatch.ts), its only caller
   * outside tests; the queue order and the locks stay here, with the execution's state.
   */
  async claim(runnerId: string, slots: number): Promise<Assignment[]> {
    return (await this.claimFor([[runnerId, slots]])).map((c) => c.assignment);
  }

  /**
   * As `claim`, for several runners at once, each with its free slots, in the order given
   * (`Dispatch` puts the least loaded first): the queue is read once, a page at a time, and
   * each execution started goes to the next runner with a free slot, in turn; those of a
   * page start together, in one transaction (`ExecutionClaims`).
   */
  claimFor(runners: readonly (readonly [runnerId: string, slots: number])[]): Promise<{ runner: string; assignment: Assignment }[]> {
    if (runners.some(([, slots]) => slots > 0)) this.remoteWork.looked();
    return this.claims.claimFor(runners);
  }

  /** How many runs a runner holds (`RunnerLoad`). */
  loadOf(runnerId: string): number {
    return this.load.of(runnerId);
  }

  /**
   * Renews the leases of a runner's executions (its heartbeat). Heartbeats of 200 ms, and
   * those that arrive while others are stored, are stored together, in one statement
   * (`HEARTBEAT_BATCHING`). Resolves once they are renewed.
   */
  async heartbeat(runnerId: string): Promise<void> {
    await this.renewals.add(runnerId);
  }

  /** Renews now the leases of the heartbeats waiting for their group (before closing). */
  storeHeartbeats(): Promise<void> {
    return this.renewals.flush();
  }

  /** Whether an execution was handed to this runner (the events of others are dropped). */
  async holds(runnerId: string, executionId: string): Promise<boolean> {
    const running = this.running.get(executionId);
    if (running) return running.runnerId === runnerId;
    return (await this.executions.get(executionId))?.data.runner_id === runnerId;
  }

  /**
   * A runner says hello with the runs it still holds: fails those of its runs it forgot (it
   * restarted), and renews the leases of the others.
   */
  async reconcile(runnerId: string, claimedIds: readonly string[]): Promise<Reconciliation> {
    const claimed = new Set(claimedIds);
    const cancel: string[] = [];
    this.load.forget(runnerId);
    for (const execution of await this.runningOn(runnerId)) {
      if (!claimed.has(execution.id)) {
        await this.finish(execution.id, 'failed', `runner ${runnerId} reconnected without the run (it restarted)`);
      } else {
        this.load.hold(runnerId, execution.id);
        if (execution.data.state === 'canceling') cancel.push(execution.id);
      }
      claimed.delete(execution.id);
    }
    // Its leases renewed now, not with the next group of heartbeats: the hello waits for it.
    await this.locks.renew([runnerId], this.clock.nowMs() + this.leaseTimeoutMs);
    return { abandoned: [...claimed], cancel };
  }

  /** Stores a step once; maps the step's host to its server. */
  async recordStep(executionId: string, seq: number, report: StepReport): Promise<boolean> {
    return (await this.recordEvents([{ executionId, seq, report }], [])).steps === 1;
  }

  /** Stores a log chunk once. */
  async appendLog(executionId: string, offset: number, text: string): Promise<boolean> {
    return (await this.recordEvents([], [{ executionId, offset, text }])).logs === 1;
  }

  /**
   * Stores what runners reported, each step and log chunk once, and tells followers of each
   * execution that gained some. Returns how many were new, and the bytes of the new chunks.
   * Reports that come together are stored together (`RunReports`).
   */
  recordEvents(steps: EventReport['steps'], logs: EventReport['logs']): Promise<EventCounts> {
    return this.reports.record({ steps, logs });
  }


  /**
   * Stores a file a run handed back (`RunArtifact`), once per name, until the execution
   * ends. `late`: the execution is over (or unknown), nothing is stored; `too_many`: it has
   * `maxFiles` files already.
   */
  recordArtifact(
    executionId: string,
    seq: number,
    name: string,
    content: string,
    maxFiles: number,
  ): Promise<'stored' | 'duplicate' | 'late' | 'too_many'> {
    return this.executions.transaction(async () => {
      const latest = await this.executions.getForUpdate(executionId);
      if (!latest || isFinal(latest.data.state as ExecutionState)) return 'late';
      if (await this.eventsRepo.hasArtifact(executionId, name)) return 'duplicate';
      if ((await this.eventsRepo.countArtifacts(executionId)) >= maxFiles) return 'too_many';
      await this.eventsRepo.addArtifact(executionId, seq, name, content);
      return 'stored';
    });
  }

  /**
   * Ends a run. On success the playbook's effects are applied to the cluster and its
   * servers in the same transaction as the state change; locks are released either way.
   * A report for an execution that is already over is ignored (returns null). Ends reported
   * together are stored together (`RunEnds`).
   */
  finish(executionId: string, outcome: Outcome, reason: string | null): Promise<Stored<ExecutionData> | null> {
    return this.ends.finish({ executionId, outcome, reason });
  }


  /**
   * Moves an execution to another state if it is in one of `from`; null when it was not
   * (the caller re-reads and decides again).
   */
  transition(
    executionId: string,
    to: ExecutionState,
    patch: Partial<ExecutionData>,
    initiatorId: string | null,
    from: readonly ExecutionState[],
  ): Promise<Stored<ExecutionData> | null> {
    return this.executions.transaction(async () => {
      const latest = await this.executions.getForUpdate(executionId);
      if (!latest || !from.includes(latest.data.state as ExecutionState)) return null;
      const next = await this.append(latest, to, { ...patch, ...(isFinal(to) ? { time_finished: Math.floor(this.clock.nowMs() / 1000) } : {}) }, initiatorId);
      if (isFinal(to)) {
        await this.eventsRepo.removeArtifacts(executionId);
        await this.locks.release([executionId]);
      }
      return next;
    });
  }

  /** Marks a running execution `canceling` and asks its runner to stop it. */
  async requestCancel(executionId: string, initiatorId: string): Promise<Stored<ExecutionData> | null> {
    const next = await this.transition(executionId, 'canceling', { reason: 'canceled by a user' }, initiatorId, ['started']);
    if (next?.data.runner_id) await this.bus.publish('cancel', JSON.stringify({ executionId, runnerId: next.data.runner_id }));
    return next;
  }

  /**
   * At start: gives a full lease timeout from now to the leases of every runner no other
   * replica (`replica` is this one) has heard from in the last two heartbeats. While the
   * control plane was down no runner could renew its leases, and a run that went on
   * meanwhile must not fail for that; a runner that does not come back within the timeout
   * still loses them. The runners connected to other replicas, which go on renewing their
   * leases, keep them as they are: a replica that starts does not delay the end of a dead
   * runner's leases.
   */
  extendLeasesAtStart(replica: string, heartbeatIntervalMs: number): Promise<number> {
    const nowMs = this.clock.nowMs();
    return this.locks.renewUnattended(nowMs + this.leaseTimeoutMs, replica, nowMs - 2 * heartbeatIntervalMs);
  }

  /** Fails the executions whose leases expired (their runner vanished) and frees their servers. */
  async sweep(): Promise<string[]> {
    const expired = await this.locks.expiredExecutions(this.clock.nowMs());
    const failed: string[] = [];
    for (const id of expired) {
      const execution = await this.executions.get(id);
      const runner = execution?.data.runner_id ?? 'unknown';
      const done = await this.finish(id, 'failed', `runner ${runner} stopped answering: its lease expired`);
      if (done) failed.push(id);
      else await this.locks.release([id]);
    }
    if (expired.length) await this.bus.publish('work');
    return failed;
  }

  /** The ids of the running executions, by runner. */
  async runningByRunner(): Promise<Map<string, string[]>> {
    const items = await this.executions.liveWhere({ state: RUNNING_STATES });
    const byRunner = new Map<string, string[]>();
    for (const e of items) {
      const runner = e.data.runner_id;
      if (!runner) continue;
      const ids = byRunner.get(runner) ?? [];
      ids.push(e.id);
      byRunner.set(runner, ids);
    }
    return byRunner;
  }

  /** The executions a runner holds that are still running. */
  async runningOn(runnerId: string): Promise<Stored<ExecutionData>[]> {
    return this.executions.liveWhere({ runner_id: runnerId, state: RUNNING_STATES });
  }

  /** The server a step's host (an IP, or a server id) names among the execution's servers. */
  private async serverIdOf(executionId: string, host: string): Promise<string | null> {
    let running = this.running.get(executionId);
    if (!running) {
      const execution = await this.executions.get(executionId);
      if (!execution) return null;
      running = { runnerId: execution.data.runner_id ?? '', hosts: hostMap((await this.servers.liveMany(execution.data.server_ids)).found) };
      if (execution.data.runner_id && !isFinal(execution.data.state as ExecutionState)) this.running.set(executionId, running);
    }
    return running.hosts.get(host) ?? null;
  }

  /** Appends the next state; the caller holds the transaction. Followers hear of it once it commits. */
  private async append(latest: Stored<ExecutionData>, to: ExecutionState, patch: Partial<ExecutionData>, initiatorId: string | null): Promise<Stored<ExecutionData>> {
    return (await this.appendMany([{ latest, to, patch }], initiatorId))[0] as Stored<ExecutionData>;
  }

  /** As `append`, for several executions (a new version each, in one statement). */
  private async appendMany(changes: readonly StateChange[], initiatorId: string | null = null): Promise<Stored<ExecutionData>[]> {
    for (const { latest, to } of changes) checkTransition(latest.data.state, to);
    const next = await this.executions.appendMany(
      changes.map(({ latest, to, patch }) => ({ latest, change: { data: { ...latest.data, ...patch, state: to } } })),
      initiatorId,
      Math.floor(this.clock.nowMs() / 1000),
    );
    for (const e of next) {
      const final = isFinal(e.data.state as ExecutionState);
      await this.publishEvent({ executionId: e.id, kind: 'state', final });
      if (final) await this.ended.emit(e);
    }
    return next;
  }

}
