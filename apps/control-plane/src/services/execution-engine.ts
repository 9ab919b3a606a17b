import type { ExecutionData, ExecutionState, PlaybookConfigurationData, ServerData } from '@carapace/models';
import type { PlaybookConfiguration } from '@carapace/playbooks';
import type { Bus } from '../db/bus.js';
import type { EventKey, ExecutionEventsRepository, LogChunkInput, StepInput } from '../db/execution-events.repository.js';
import type { LockRepository } from '../db/lock.repository.js';
import { UniqueViolation } from '../errors.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import type { Clock } from '../ports.js';
import { checkTransition, isFinal } from './execution-state.js';
import type { RunEffects } from './run-effects.js';
import type { ServerService } from './server.service.js';
import { EVERY_EXECUTION, parseCancel, parseEvent, type ExecutionEvent } from './execution-events.js';
import { Batcher } from './batcher.js';
import { RunnerLoad } from './runner-load.js';
import { AsyncSignal, Signal } from './signal.js';

/** An execution handed to a runner, with what it needs to run. */
export interface Assignment {
  readonly execution: Stored<ExecutionData>;
  readonly playbookId: string;
  readonly configuration: PlaybookConfiguration;
  /** Server id by inventory host (the server's IP), to turn step hosts into server ids. */
  readonly serverIds: Readonly<Record<string, string>>;
  /** The recorded SSH host key of each server that has one, by IP: the runner enforces them. */
  readonly hostKeys: Readonly<Record<string, string>>;
}

/** A step as a runner reports it: the stored step, with the inventory host it ran on. */
export type StepReport = Omit<StepInput, 'serverId'> & { readonly host: string };

/** What a runner that reconnects must be told about the runs it claims to hold. */
export interface Reconciliation {
  /** Runs it claims that the control plane does not give it: it should drop them. */
  readonly abandoned: string[];
  /** Runs being canceled: it should stop them. */
  readonly cancel: string[];
}

/** Where a running execution's steps come from: its runner, and server id by step host. */
interface RunningExecution {
  readonly runnerId: string;
  readonly hosts: ReadonlyMap<string, string>;
}

/** How long after another replica announced work this one looks at the queue (ms). */
const REMOTE_WORK_DELAY_MS = 20;

/** The most queued executions one read of the queue takes (a page). */
const CLAIM_PAGE_MAX = 500;

/** How a run ended, as a runner reports it. */
export type Outcome = 'completed' | 'failed' | 'canceled';

/** A run's end to store (`ExecutionEngine.finish`). */
interface EndReport {
  readonly executionId: string;
  readonly outcome: Outcome;
  readonly reason: string | null;
}

/** What runners reported of their runs' progress (`ExecutionEngine.recordEvents`). */
interface EventReport {
  readonly steps: readonly { executionId: string; seq: number; report: StepReport }[];
  readonly logs: readonly LogChunkInput[];
}

/** How many of the steps and log chunks reported were new, and the bytes of the new chunks. */
export interface EventCounts {
  readonly steps: number;
  readonly logs: number;
  readonly logBytes: number;
}

/** The most ends of runs stored in one transaction. */
const END_BATCH_MAX = 256;
/** The most reports of steps and log chunks stored together, and about the most bytes of their chunks. */
const EVENT_BATCH_MAX = 256;
const EVENT_BATCH_BYTES = 4 * 1024 * 1024;

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
  /** A look at the queue after work announced by another replica, when one is due. */
  private remoteWork: NodeJS.Timeout | null = null;
  /** Heartbeats waiting to renew their runners' leases together (`heartbeat`). */
  private readonly renewals = new Batcher<string, void>(
    async (runners) => {
      await this.locks.renew(runners, this.clock.nowMs() + this.leaseTimeoutMs);
      return runners.map(() => undefined);
    },
    { maxItems: END_BATCH_MAX * 4 },
  );
  /** Ends of runs reported while others are stored, stored together next (`finish`). */
  private readonly ends = new Batcher<EndReport, Stored<ExecutionData> | null>((ends) => this.finishMany(ends), { maxItems: END_BATCH_MAX });
  /** Steps and log chunks reported while others are stored, stored together next (`recordEvents`). */
  private readonly reports = new Batcher<EventReport, EventCounts>((reports) => this.storeEvents(reports), {
    maxItems: EVENT_BATCH_MAX,
    maxWeight: EVENT_BATCH_BYTES,
    weight: (r) => r.logs.reduce((n, c) => n + c.text.length, 0),
  });

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
    // Work another replica announced is first its own runners' (it dispatches at once): this
    // replica looks a moment later, for what is still queued then, instead of racing it for
    // the same executions.
    bus.subscribe('work', (_payload, from) => {
      if (from === 'here') this.workAvailable.emit();
      else this.remoteWork ??= setTimeout(() => {
        this.remoteWork = null;
        this.workAvailable.emit();
      }, REMOTE_WORK_DELAY_MS).unref();
    });
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
   * slots it has free, is `Dispatch`'s decision (services/dispatch.ts), its only caller
   * outside tests; the queue order and the locks stay here, with the execution's state.
   */
  async claim(runnerId: string, slots: number): Promise<Assignment[]> {
    return (await this.claimFor([[runnerId, slots]])).map((c) => c.assignment);
  }

  /**
   * As `claim`, for several runners at once, each with its free slots, in the order given
   * (`Dispatch` puts the least loaded first): the queue is read once, a page at a time, and
   * each execution started goes to the next runner with a free slot, in turn. The
   * executions of a page that can start are started together, in one transaction whose
   * statements do not grow in number with them (`startMany`).
   */
  async claimFor(runners: readonly (readonly [runnerId: string, slots: number])[]): Promise<{ runner: string; assignment: Assignment }[]> {
    const free = runners.filter(([, n]) => n > 0).map(([name, n]) => ({ name, n }));
    let left = free.reduce((sum, r) => sum + r.n, 0);
    if (left === 0) return [];
    const nowMs = this.clock.nowMs();
    const claimed: { runner: string; assignment: Assignment }[] = [];
    // Servers of executions started, busy or waited for: a later execution needing one of
    // them waits, so that none starts ahead of an older one on the same server.
    const reserved = new Set<string>();
    const perPage = Math.min(CLAIM_PAGE_MAX, left * 2 + 16);
    let turn = 0;
    for (let page = 1; left > 0; page++) {
      const { items: queued } = await this.executions.list({
        page,
        perPage,
        all: false,
        filter: JSON.stringify({ state: 'created' }),
        sortBy: JSON.stringify({ time_created: 1 }),
        withoutTotal: true,
      });
      for (const id of await this.locks.lockedAmong([...new Set(queued.flatMap((e) => e.data.server_ids))])) reserved.add(id);
      let next = 0;
      // Picks as many as there are free slots; those that could not start (another replica
      // took them meanwhile) give their slot back to the executions after them.
      while (left > 0 && next < queued.length) {
        const picks: { execution: Stored<ExecutionData>; runner: { name: string; n: number } }[] = [];
        for (; next < queued.length && left > 0; next++) {
          const candidate = queued[next] as Stored<ExecutionData>;
          const ids = candidate.data.server_ids;
          const blocked = ids.some((id) => reserved.has(id));
          for (const id of ids) reserved.add(id);
          if (blocked) continue;
          let runner = free[turn % free.length];
          while (runner && runner.n === 0) runner = free[++turn % free.length];
          if (!runner) break;
          runner.n -= 1;
          left -= 1;
          turn += 1;
          picks.push({ execution: candidate, runner });
        }
        if (picks.length === 0) break;
        // The servers (for the assignments) are read beside the start, on another connection.
        const [started, servers] = await Promise.all([
          this.startMany(picks.map((p) => ({ execution: p.execution, runnerId: p.runner.name })), nowMs),
          this.servers.liveMany([...new Set(picks.flatMap((p) => p.execution.data.server_ids))]),
        ]);
        const assignments = await this.assignments([...started.values()], servers.found);
        for (const { execution, runner } of picks) {
          const assignment = assignments.get(execution.id);
          if (!assignment) {
            runner.n += 1;
            left += 1;
            continue;
          }
          this.load.hold(runner.name, execution.id);
          claimed.push({ runner: runner.name, assignment });
        }
      }
      if (queued.length < perPage) break;
    }
    return claimed;
  }

  /** How many runs a runner holds (`RunnerLoad`). */
  loadOf(runnerId: string): number {
    return this.load.of(runnerId);
  }

  /**
   * Starts queued executions on their runners, in one transaction: each one that is still
   * queued, that no other replica is handing out right now, and all of whose servers can
   * be locked at once. Returns the started ones by id; the others stay queued.
   */
  private async startMany(picks: readonly { execution: Stored<ExecutionData>; runnerId: string }[], nowMs: number): Promise<Map<string, Stored<ExecutionData>>> {
    try {
      return await this.startManyOnce(picks, nowMs);
    } catch (e) {
      // One of them was changed by another replica just before this read it: none starts
      // now; they wait for the next look at the queue (see `tryGetManyForUpdate`).
      if (e instanceof UniqueViolation) return new Map();
      throw e;
    }
  }

  private startManyOnce(picks: readonly { execution: Stored<ExecutionData>; runnerId: string }[], nowMs: number): Promise<Map<string, Stored<ExecutionData>>> {
    return this.executions.transaction(async () => {
      // Another replica handing one out right now: skipped, not waited for.
      const latest = await this.executions.tryGetManyForUpdate(picks.map((p) => p.execution.id));
      const queued = picks.filter((p) => latest.get(p.execution.id)?.data.state === 'created');
      const locked = await this.locks.lockEach(
        queued.map((p) => ({ executionId: p.execution.id, serverIds: p.execution.data.server_ids, owner: p.runnerId })),
        nowMs + this.leaseTimeoutMs,
      );
      const go = queued.filter((p) => locked.has(p.execution.id));
      const started = await this.appendMany(
        go.map((p) => ({
          latest: latest.get(p.execution.id) as Stored<ExecutionData>,
          to: 'started' as const,
          patch: { time_started: Math.floor(nowMs / 1000), runner_id: p.runnerId },
        })),
      );
      return new Map(started.map((e) => [e.id, e]));
    });
  }

  /**
   * Renews the leases of a runner's executions (its heartbeat). Heartbeats that arrive while
   * others are stored are stored together next, in one statement (`Batcher`).
   */
  async heartbeat(runnerId: string): Promise<void> {
    await this.renewals.add(runnerId);
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
    await this.heartbeat(runnerId);
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
   * Reports that come while others are stored are stored together next: one statement for
   * their steps, one for their chunks (`Batcher`).
   */
  recordEvents(steps: EventReport['steps'], logs: EventReport['logs']): Promise<EventCounts> {
    if (steps.length === 0 && logs.length === 0) return Promise.resolve({ steps: 0, logs: 0, logBytes: 0 });
    if (this.executions.inTransaction()) return this.storeEvents([{ steps, logs }]).then((counts) => counts[0] as EventCounts);
    return this.reports.add({ steps, logs });
  }

  /** Stores several reports at once (see `recordEvents`); the counts of each. */
  private async storeEvents(reports: readonly EventReport[]): Promise<EventCounts[]> {
    const inputs: (StepInput & EventKey)[] = [];
    for (const { steps } of reports) {
      for (const { executionId, seq, report } of steps) {
        const { host, ...rest } = report;
        inputs.push({ ...rest, executionId, seq, serverId: await this.serverIdOf(executionId, host) });
      }
    }
    const nowS = Math.floor(this.clock.nowMs() / 1000);
    const addedSteps = await this.eventsRepo.addSteps(inputs, nowS);
    const addedLogs = await this.eventsRepo.appendLogs(reports.flatMap((r) => r.logs));
    for (const id of new Set(addedSteps.map((k) => k.executionId))) await this.publishEvent({ executionId: id, kind: 'step' });
    for (const id of new Set(addedLogs.map((c) => c.executionId))) await this.publishEvent({ executionId: id, kind: 'log' });
    // Each new step and chunk counts for the first report that brought it.
    const newSteps = new Set(addedSteps.map((k) => `${k.seq} ${k.executionId}`));
    const newLogs = new Set(addedLogs.map((c) => `${c.offset} ${c.executionId}`));
    return reports.map(({ steps, logs }) => {
      const counts = { steps: 0, logs: 0, logBytes: 0 };
      for (const { executionId, seq } of steps) if (newSteps.delete(`${seq} ${executionId}`)) counts.steps += 1;
      for (const c of logs) {
        if (!newLogs.delete(`${c.offset} ${c.executionId}`)) continue;
        counts.logs += 1;
        counts.logBytes += Buffer.byteLength(c.text);
      }
      return counts;
    });
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
   * A report for an execution that is already over is ignored (returns null).
   *
   * Ends reported while others are being stored wait for them and are then stored together,
   * in one transaction whose statements do not grow in number with them (`finishMany`): under
   * load, a burst of results costs a few round trips, not a few per run. One alone is stored
   * at once. Inside the caller's transaction, it is stored in that transaction.
   */
  finish(executionId: string, outcome: Outcome, reason: string | null): Promise<Stored<ExecutionData> | null> {
    const end = { executionId, outcome, reason };
    if (this.executions.inTransaction()) return this.finishMany([end]).then((done) => done[0] ?? null);
    return this.ends.add(end);
  }

  /** Ends runs in one transaction (see `finish`); null for each one already over, or named twice. */
  private finishMany(ends: readonly EndReport[]): Promise<(Stored<ExecutionData> | null)[]> {
    const nowS = Math.floor(this.clock.nowMs() / 1000);
    return this.executions.transaction(async () => {
      const latest = await this.executions.getManyForUpdate(ends.map((e) => e.executionId));
      const changes: { latest: Stored<ExecutionData>; to: ExecutionState; patch: Partial<ExecutionData> }[] = [];
      const at: number[] = [];
      const seen = new Set<string>();
      for (const [i, end] of ends.entries()) {
        const current = latest.get(end.executionId);
        if (!current || isFinal(current.data.state as ExecutionState) || seen.has(end.executionId)) continue;
        seen.add(end.executionId);
        // `canceled` is what a user asked for. A run the runner stopped on its own (its drain
        // ran out of grace) was not: it failed, with the runner's reason.
        const selfCanceled = end.outcome === 'canceled' && current.data.state !== 'canceling';
        const to: ExecutionState = end.outcome === 'completed' ? 'completed' : end.outcome === 'canceled' && !selfCanceled ? 'canceled' : 'failed';
        const why = selfCanceled ? `runner ${current.data.runner_id ?? 'unknown'} stopped the run: ${end.reason ?? 'no reason given'}` : end.reason;
        changes.push({ latest: current, to, patch: { time_finished: nowS, reason: why } });
        at.push(i);
      }
      const out: (Stored<ExecutionData> | null)[] = ends.map(() => null);
      if (changes.length === 0) return out;
      const done = await this.appendMany(changes);
      // the runs' files serve their effects (when they completed), then none stays
      const artifacts = await this.eventsRepo.takeArtifacts(done.map((e) => e.id));
      for (const execution of done) {
        if (execution.data.state === 'completed') await this.effects.apply(execution, artifacts.get(execution.id) ?? [], nowS);
      }
      await this.locks.release(done.map((e) => e.id));
      await this.bus.publish('work');
      done.forEach((execution, k) => (out[at[k] as number] = execution));
      return out;
    });
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
    const { items } = await this.executions.list({ page: 1, perPage: 1, all: true, filter: JSON.stringify({ state: { in: ['started', 'canceling'] } }) });
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
    const { items } = await this.executions.list({
      page: 1,
      perPage: 1,
      all: true,
      filter: JSON.stringify({ runner_id: runnerId, state: { in: ['started', 'canceling'] } }),
    });
    return items;
  }

  /** The assignments of started executions, by id, from their live servers; remembers their runners and host maps. */
  private async assignments(executions: readonly Stored<ExecutionData>[], live: readonly Stored<ServerData>[]): Promise<Map<string, Assignment>> {
    const out = new Map<string, Assignment>();
    const servers = new Map(live.map((s) => [s.id, s]));
    for (const execution of executions) {
      const ref = execution.data.playbook_configuration;
      const config = await this.configurations.getVersion(ref.id, ref.version);
      if (!config) throw new Error(`configuration of execution ${execution.id} is missing`);
      const own = execution.data.server_ids.flatMap((id) => servers.get(id) ?? []);
      const serverIds: Record<string, string> = {};
      const hostKeys: Record<string, string> = {};
      for (const server of own) {
        if (server.data.ip) serverIds[server.data.ip] = server.id;
        if (server.data.ssh_host_key && server.data.ip) hostKeys[server.data.ip] = server.data.ssh_host_key;
      }
      if (execution.data.runner_id) this.running.set(execution.id, { runnerId: execution.data.runner_id, hosts: hostMap(own) });
      out.set(execution.id, { execution, playbookId: config.data.playbook_id, configuration: config.data.configuration, serverIds, hostKeys });
    }
    return out;
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
    checkTransition(latest.data.state, to);
    const next = await this.executions.append(latest, { data: { ...latest.data, ...patch, state: to } }, initiatorId, Math.floor(this.clock.nowMs() / 1000));
    await this.publishEvent({ executionId: latest.id, kind: 'state', final: isFinal(to) });
    if (isFinal(to)) await this.ended.emit(next);
    return next;
  }
  /** As `append`, for several executions (a new version each, in one statement). */
  private async appendMany(changes: readonly { latest: Stored<ExecutionData>; to: ExecutionState; patch: Partial<ExecutionData> }[]): Promise<Stored<ExecutionData>[]> {
    for (const { latest, to } of changes) checkTransition(latest.data.state, to);
    const nowS = Math.floor(this.clock.nowMs() / 1000);
    const next = await this.executions.appendMany(
      changes.map(({ latest, to, patch }) => ({ latest, change: { data: { ...latest.data, ...patch, state: to } } })),
      null,
      nowS,
    );
    for (const e of next) {
      const final = isFinal(e.data.state as ExecutionState);
      await this.publishEvent({ executionId: e.id, kind: 'state', final });
      if (final) await this.ended.emit(e);
    }
    return next;
  }


}

/** Server id by step host: each server's IP and its id, the first server naming a host winning. */
function hostMap(servers: readonly Stored<ServerData>[]): ReadonlyMap<string, string> {
  const hosts = new Map<string, string>();
  for (const server of servers) {
    for (const host of [server.data.ip, server.id]) if (host && !hosts.has(host)) hosts.set(host, server.id);
  }
  return hosts;
}
