import type { ClusterData, ExecutionData, ExecutionState, PlaybookConfigurationData, ServerData } from '@carapace/models';
import { getPlugin, type PlaybookConfiguration } from '@carapace/playbooks';
import type { ClusterFileRepository } from '../db/cluster-file.repository.js';
import type { ExecutionEventsRepository, StepInput } from '../db/execution-events.repository.js';
import type { LockRepository } from '../db/lock.repository.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import type { Clock } from '../ports.js';
import { checkTransition, isFinal } from './execution-state.js';
import { pluginCluster, pluginServer } from './playbook-configuration.service.js';
import type { ServerService } from './server.service.js';
import { Signal } from './signal.js';

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

/** How a run ended, as a runner reports it. */
export type Outcome = 'completed' | 'failed' | 'canceled';

/** Something happened to an execution: a log chunk, a step, a state change. */
export interface ExecutionEvent {
  readonly executionId: string;
  readonly kind: 'log' | 'step' | 'state';
}

/**
 * The control-plane half of running executions (ARCHITECTURE.md "Executions, runners and the
 * protocol"): a queue handing out the oldest runnable execution whose servers can all be
 * locked at once, leases renewed by heartbeats and swept when they expire, steps and log
 * chunks stored once each, and the playbook's effects applied on success.
 */
export class ExecutionEngine {
  /** Emitted when new work may be available (an execution queued, locks freed). */
  readonly workAvailable = new Signal<void>();
  /** Emitted for every change of an execution. */
  readonly events = new Signal<ExecutionEvent>();
  /**
   * Emitted when an execution ends (completed, failed, canceled), inside the transaction that
   * stores its final state: a listener's writes are committed, or rolled back, with it.
   */
  readonly ended = new Signal<Stored<ExecutionData>>();
  /** Emitted when a running execution must be canceled: its runner should stop it. */
  readonly cancelRequested = new Signal<{ executionId: string; runnerId: string }>();
  /**
   * The running executions' runners and host maps, so that a step costs no lookup: filled
   * when an execution is handed out, computed once on a miss (after a restart), dropped
   * when the execution ends.
   */
  private readonly running = new Map<string, RunningExecution>();

  constructor(
    private readonly executions: VersionedRepository<ExecutionData>,
    private readonly configurations: VersionedRepository<PlaybookConfigurationData>,
    private readonly clusterRepo: VersionedRepository<ClusterData>,
    private readonly servers: ServerService,
    private readonly locks: LockRepository,
    private readonly eventsRepo: ExecutionEventsRepository,
    private readonly files: ClusterFileRepository,
    private readonly clock: Clock,
    private readonly leaseTimeoutMs: number,
  ) {}

  /** The latest version of an execution, or undefined. */
  get(executionId: string): Stored<ExecutionData> | undefined {
    return this.executions.get(executionId);
  }

  /** Says that an execution was queued. */
  queued(): void {
    this.workAvailable.emit();
  }

  /**
   * Hands up to `slots` executions to a runner: queued executions in creation order; one
   * starts only if all its servers can be locked at once, and never ahead of an older
   * queued execution that waits for one of the same servers. Which runner, and how many
   * slots it has free, is `Dispatch`'s decision (services/dispatch.ts), its only caller
   * outside tests; the queue order and the locks stay here, with the execution's state.
   */
  claim(runnerId: string, slots: number): Assignment[] {
    if (slots <= 0) return [];
    const nowMs = this.clock.nowMs();
    const queued = this.executions.list({
      page: 1,
      perPage: 1,
      all: true,
      filter: JSON.stringify({ state: 'created' }),
      sortBy: JSON.stringify({ time_created: 1 }),
    }).items;
    const assignments: Assignment[] = [];
    const reserved = new Set<string>();
    for (const candidate of queued) {
      if (assignments.length >= slots) break;
      const ids = candidate.data.server_ids;
      const blocked = ids.some((id) => reserved.has(id));
      const started = !blocked && this.executions.transaction(() => {
        const latest = this.executions.get(candidate.id);
        if (latest?.data.state !== 'created') return null;
        if (!this.locks.lockAll(ids, candidate.id, runnerId, nowMs + this.leaseTimeoutMs, nowMs)) return null;
        return this.append(latest, 'started', { time_started: Math.floor(nowMs / 1000), runner_id: runnerId }, null);
      });
      if (!started) {
        for (const id of ids) reserved.add(id);
        continue;
      }
      assignments.push(this.assignment(started));
    }
    return assignments;
  }

  /** Renews the leases of a runner's executions (its heartbeat). */
  heartbeat(runnerId: string): void {
    this.locks.renew(runnerId, this.clock.nowMs() + this.leaseTimeoutMs);
  }

  /** Whether an execution was handed to this runner (the events of others are dropped). */
  holds(runnerId: string, executionId: string): boolean {
    const running = this.running.get(executionId);
    if (running) return running.runnerId === runnerId;
    return this.executions.get(executionId)?.data.runner_id === runnerId;
  }

  /**
   * A runner says hello with the runs it still holds: fails those of its runs it forgot (it
   * restarted), and renews the leases of the others.
   */
  reconcile(runnerId: string, claimedIds: readonly string[]): Reconciliation {
    const claimed = new Set(claimedIds);
    const cancel: string[] = [];
    for (const execution of this.runningOn(runnerId)) {
      if (!claimed.has(execution.id)) {
        this.finish(execution.id, 'failed', `runner ${runnerId} reconnected without the run (it restarted)`);
      } else if (execution.data.state === 'canceling') cancel.push(execution.id);
      claimed.delete(execution.id);
    }
    this.heartbeat(runnerId);
    return { abandoned: [...claimed], cancel };
  }

  /** Stores a step once; maps the step's host to its server. */
  recordStep(executionId: string, seq: number, report: StepReport): boolean {
    const { host, ...rest } = report;
    const step: StepInput = { ...rest, serverId: this.serverIdOf(executionId, host) };
    const added = this.eventsRepo.addStep(executionId, seq, step, Math.floor(this.clock.nowMs() / 1000));
    if (added) this.events.emit({ executionId, kind: 'step' });
    return added;
  }

  /** Stores a log chunk once. */
  appendLog(executionId: string, offset: number, text: string): boolean {
    const added = this.eventsRepo.appendLog(executionId, offset, text);
    if (added) this.events.emit({ executionId, kind: 'log' });
    return added;
  }

  /**
   * Stores a file a run handed back (`RunArtifact`), once per name, until the execution
   * ends. `late`: the execution is over (or unknown), nothing is stored; `too_many`: it has
   * `maxFiles` files already.
   */
  recordArtifact(executionId: string, seq: number, name: string, content: string, maxFiles: number): 'stored' | 'duplicate' | 'late' | 'too_many' {
    return this.executions.transaction(() => {
      const latest = this.executions.get(executionId);
      if (!latest || isFinal(latest.data.state as ExecutionState)) return 'late';
      if (this.eventsRepo.hasArtifact(executionId, name)) return 'duplicate';
      if (this.eventsRepo.countArtifacts(executionId) >= maxFiles) return 'too_many';
      this.eventsRepo.addArtifact(executionId, seq, name, content);
      return 'stored';
    });
  }

  /**
   * Ends a run. On success the playbook's effects are applied to the cluster and its
   * servers in the same transaction as the state change; locks are released either way.
   * A report for an execution that is already over is ignored (returns null).
   */
  finish(executionId: string, outcome: Outcome, reason: string | null): Stored<ExecutionData> | null {
    const nowS = Math.floor(this.clock.nowMs() / 1000);
    const finished = this.executions.transaction(() => {
      const latest = this.executions.get(executionId);
      if (!latest || isFinal(latest.data.state as ExecutionState)) return null;
      // `canceled` is what a user asked for. A run the runner stopped on its own (its drain
      // ran out of grace) was not: it failed, with the runner's reason.
      const selfCanceled = outcome === 'canceled' && latest.data.state !== 'canceling';
      const to: ExecutionState = outcome === 'completed' ? 'completed' : outcome === 'canceled' && !selfCanceled ? 'canceled' : 'failed';
      const why = selfCanceled ? `runner ${latest.data.runner_id ?? 'unknown'} stopped the run: ${reason ?? 'no reason given'}` : reason;
      const done = this.append(latest, to, { time_finished: nowS, reason: why }, null);
      if (to === 'completed') this.applyEffects(done, nowS);
      // the run's files served their purpose (or the run did not complete): none stays
      this.eventsRepo.removeArtifacts(executionId);
      this.locks.release(executionId);
      return done;
    });
    if (finished) this.workAvailable.emit();
    return finished;
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
  ): Stored<ExecutionData> | null {
    return this.executions.transaction(() => {
      const latest = this.executions.get(executionId);
      if (!latest || !from.includes(latest.data.state as ExecutionState)) return null;
      const next = this.append(latest, to, { ...patch, ...(isFinal(to) ? { time_finished: Math.floor(this.clock.nowMs() / 1000) } : {}) }, initiatorId);
      if (isFinal(to)) {
        this.eventsRepo.removeArtifacts(executionId);
        this.locks.release(executionId);
      }
      return next;
    });
  }

  /** Marks a running execution `canceling` and asks its runner to stop it. */
  requestCancel(executionId: string, initiatorId: string): Stored<ExecutionData> | null {
    const next = this.transition(executionId, 'canceling', { reason: 'canceled by a user' }, initiatorId, ['started']);
    if (next?.data.runner_id) this.cancelRequested.emit({ executionId, runnerId: next.data.runner_id });
    return next;
  }

  /**
   * At start: gives every lease a full lease timeout from now. While the control plane was
   * down no runner could renew its leases, and a run that went on meanwhile must not fail
   * for that; a runner that does not come back within the timeout still loses them.
   */
  extendLeasesAtStart(): number {
    return this.locks.renewAll(this.clock.nowMs() + this.leaseTimeoutMs);
  }

  /** Fails the executions whose leases expired (their runner vanished) and frees their servers. */
  sweep(): string[] {
    const expired = this.locks.expiredExecutions(this.clock.nowMs());
    const failed: string[] = [];
    for (const id of expired) {
      const execution = this.executions.get(id);
      const runner = execution?.data.runner_id ?? 'unknown';
      const done = this.finish(id, 'failed', `runner ${runner} stopped answering: its lease expired`);
      if (done) failed.push(id);
      else this.locks.release(id);
    }
    if (expired.length) this.workAvailable.emit();
    return failed;
  }

  /** The executions a runner holds that are still running. */
  runningOn(runnerId: string): Stored<ExecutionData>[] {
    return this.executions.list({
      page: 1,
      perPage: 1,
      all: true,
      filter: JSON.stringify({ runner_id: runnerId, state: { in: ['started', 'canceling'] } }),
    }).items;
  }

  /** The assignment of a started execution; remembers its runner and host map. */
  private assignment(execution: Stored<ExecutionData>): Assignment {
    const config = this.configurations.getVersion(execution.data.playbook_configuration.id, execution.data.playbook_configuration.version);
    if (!config) throw new Error(`configuration of execution ${execution.id} is missing`);
    const serverIds: Record<string, string> = {};
    const hostKeys: Record<string, string> = {};
    const servers = this.servers.liveMany(execution.data.server_ids).found;
    for (const server of servers) {
      if (server.data.ip) serverIds[server.data.ip] = server.id;
      if (server.data.ssh_host_key && server.data.ip) hostKeys[server.data.ip] = server.data.ssh_host_key;
    }
    if (execution.data.runner_id) this.running.set(execution.id, { runnerId: execution.data.runner_id, hosts: hostMap(servers) });
    return { execution, playbookId: config.data.playbook_id, configuration: config.data.configuration, serverIds, hostKeys };
  }

  /** The server a step's host (an IP, or a server id) names among the execution's servers. */
  private serverIdOf(executionId: string, host: string): string | null {
    let running = this.running.get(executionId);
    if (!running) {
      const execution = this.executions.get(executionId);
      if (!execution) return null;
      running = { runnerId: execution.data.runner_id ?? '', hosts: hostMap(this.servers.liveMany(execution.data.server_ids).found) };
      if (execution.data.runner_id && !isFinal(execution.data.state as ExecutionState)) this.running.set(executionId, running);
    }
    return running.hosts.get(host) ?? null;
  }

  private append(latest: Stored<ExecutionData>, to: ExecutionState, patch: Partial<ExecutionData>, initiatorId: string | null): Stored<ExecutionData> {
    checkTransition(latest.data.state, to);
    const next = this.executions.append(latest, { data: { ...latest.data, ...patch, state: to } }, initiatorId, Math.floor(this.clock.nowMs() / 1000));
    this.events.emit({ executionId: latest.id, kind: 'state' });
    if (isFinal(to)) {
      this.running.delete(latest.id);
      this.ended.emit(next);
    }
    return next;
  }

  private applyEffects(execution: Stored<ExecutionData>, nowS: number): void {
    const plugin = getPlugin(execution.data.playbook_configuration.playbook_name);
    const cluster = this.clusterRepo.get(execution.data.cluster_id);
    const config = this.configurations.getVersion(execution.data.playbook_configuration.id, execution.data.playbook_configuration.version);
    if (!plugin || !cluster || !config) throw new Error(`cannot apply the effects of execution ${execution.id}`);
    const servers = this.servers.liveMany(execution.data.server_ids).found;
    const artifacts = this.eventsRepo.listArtifacts(execution.id);
    const effect = plugin.onSuccess(pluginCluster(cluster), servers.map(pluginServer), config.data.configuration, artifacts);
    if (effect.files) {
      this.files.removeAll(cluster.id);
      for (const file of effect.files) this.files.put(cluster.id, file.name, file.content, nowS);
    }
    for (const id of effect.join) this.servers.setCluster(id, cluster.id, nowS);
    for (const id of effect.leave) this.servers.setCluster(id, null, nowS);
    const latest = this.clusterRepo.get(cluster.id);
    if (!latest) return;
    const updated = this.clusterRepo.append(latest, { data: { ...latest.data, configuration: effect.configuration } }, null, nowS);
    if (effect.deleteCluster) {
      this.clusterRepo.append(updated, { time_deleted: nowS }, null, nowS);
      this.files.removeAll(cluster.id);
    }
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
