import type { ExecutionData, PlaybookConfigurationData, ServerData } from '@carapace/models';
import { getPlugin } from '@carapace/playbooks';
import type { LockRepository } from '../db/lock.repository.js';
import type { Condition } from '../db/condition.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import { UniqueViolation } from '../errors.js';
import type { Clock } from '../ports.js';
import type { Assignment, StateChange } from './execution.types.js';
import type { ServerService } from '../infrastructure/server.service.js';

/** The most queued executions one read of the queue takes (a page). */
const CLAIM_PAGE_MAX = 500;
/** The most queued executions a pass keeps for the next one (`queuePage`): about 20 MB at most. */
const SEEN_MAX = 10_000;

/** A runner with the slots it has free while a claim hands out work. */
interface FreeRunner {
  readonly name: string;
  n: number;
}

/**
 * Which queued executions start, and on which runner (`ExecutionEngine.claimFor`): oldest
 * first (in the order they were stored); one starts only if all its servers can be locked
 * at once, and never ahead of an older queued execution that waits for one of the same
 * servers; another replica's claim is skipped, not waited for.
 */
export class ExecutionClaims {
  /** The condition of a queued execution (state `created`), as the queue's index reads it. */
  private readonly queued: Condition;
  /** The queued executions the last pass read, by id (`queuePage`). */
  private seen = new Map<string, Stored<ExecutionData>>();

  /**
   * `appendMany` stores new states (the engine's); `started` is told of each execution
   * handed out, with its runner and its server id by step host.
   */
  constructor(
    private readonly executions: VersionedRepository<ExecutionData>,
    private readonly configurations: VersionedRepository<PlaybookConfigurationData>,
    private readonly servers: ServerService,
    private readonly locks: LockRepository,
    private readonly clock: Clock,
    private readonly leaseTimeoutMs: number,
    private readonly appendMany: (changes: readonly StateChange[]) => Promise<Stored<ExecutionData>[]>,
    private readonly started: (runnerId: string, executionId: string, hosts: ReadonlyMap<string, string>) => void,
  ) {
    this.queued = executions.fieldEquals('state', 'created');
  }

  /**
   * As `claim`, for several runners at once, each with its free slots, in the order given
   * (`Dispatch` puts the least loaded first): the queue is read once, a page at a time, and
   * each execution started goes to the next runner with a free slot, in turn. The
   * executions of a page that can start are started together, in one transaction whose
   * statements do not grow in number with them (`startMany`).
   */
  async claimFor(runners: readonly (readonly [runnerId: string, slots: number])[]): Promise<{ runner: string; assignment: Assignment }[]> {
    const free: FreeRunner[] = runners.filter(([, n]) => n > 0).map(([name, n]) => ({ name, n }));
    let left = free.reduce((sum, r) => sum + r.n, 0);
    if (left === 0) return [];
    const nowMs = this.clock.nowMs();
    const claimed: { runner: string; assignment: Assignment }[] = [];
    // Servers of executions started, busy or waited for: a later execution needing one of
    // them waits, so that none starts ahead of an older one on the same server.
    const reserved = new Set<string>();
    const perPage = Math.min(CLAIM_PAGE_MAX, left * 2 + 16);
    let turn = 0;
    const seen = new Map<string, Stored<ExecutionData>>();
    for (let after = 0; left > 0; ) {
      const { queued, length, last } = await this.queuePage(after, perPage, seen);
      after = last;
      // The locks of their servers, by primary key: a second round trip, cheaper in
      // PostgreSQL than reading each queued execution's servers out of its JSON there.
      for (const id of await this.locks.lockedAmong([...new Set(queued.flatMap((e) => e.data.server_ids))])) reserved.add(id);
      let next = 0;
      // Picks as many as there are free slots; those that could not start (another replica
      // took them meanwhile) give their slot back to the executions after them.
      while (left > 0 && next < queued.length) {
        const picks: { execution: Stored<ExecutionData>; runner: FreeRunner }[] = [];
        for (; next < queued.length && left > 0; next++) {
          const candidate = queued[next] as Stored<ExecutionData>;
          // A preview locks no server (only a lease of its own, `leaseKeys`): it neither
          // waits for the servers' locks nor holds back a run queued after it.
          if (candidate.data.preview !== true) {
            const ids = candidate.data.server_ids;
            const blocked = ids.some((id) => reserved.has(id));
            for (const id of ids) reserved.add(id);
            if (blocked) continue;
          }
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
          const handed = assignments.get(execution.id);
          if (!handed) {
            runner.n += 1;
            left += 1;
            continue;
          }
          this.started(runner.name, execution.id, handed.hosts);
          claimed.push({ runner: runner.name, assignment: handed.assignment });
        }
      }
      if (length < perPage) break;
    }
    this.seen = seen;
    return claimed;
  }

  /**
   * A page of the queue, oldest first, after the key `after`: the keys, ids and versions in
   * the order the executions were stored, through the queue's own index (`executions_queued`,
   * on pk, whose predicate the literal state matches: only the page is read, however many
   * executions have ended or wait, and nothing of a row is computed), then the models of
   * those the last pass did not read at that version. Most of a long queue waits for busy
   * servers, pass after pass, and each replica looks at it: its models are read and parsed
   * once. Those no longer queued by the second read are left out; `length` is the page's
   * length as listed, `last` its last key. Each one returned is added to `seen`.
   */
  private async queuePage(after: number, perPage: number, seen: Map<string, Stored<ExecutionData>>): Promise<{ queued: Stored<ExecutionData>[]; length: number; last: number }> {
    const heads = await this.executions.idsInStoredOrder(this.queued, 'executions_queued', after, perPage);
    const known = (id: string, version: number) => {
      const model = this.seen.get(id);
      return model?.version === version ? model : undefined;
    };
    const read = await this.executions.getMany(heads.filter((h) => !known(h.id, h.version)).map((h) => h.id));
    const queued: Stored<ExecutionData>[] = [];
    for (const { id, version } of heads) {
      const model = known(id, version) ?? read.get(id);
      if (!model || model.data.state !== 'created' || model.time_deleted !== 0) continue;
      if (seen.size < SEEN_MAX) seen.set(id, model);
      queued.push(model);
    }
    return { queued, length: heads.length, last: heads.at(-1)?.pk ?? after };
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
      // Another replica handing one out right now: skipped, not waited for. The servers of
      // those still queued are locked in the same statement (one round trip on PostgreSQL).
      const requests = picks.map((p) => ({ executionId: p.execution.id, serverIds: leaseKeys(p.execution), owner: p.runnerId }));
      const { models: latest, written } = await this.executions.tryGetManyForUpdateAnd<{ executionId: string }>(
        picks.map((p) => p.execution.id),
        this.queued,
        (queuedIds) => this.locks.lockStatement(requests, nowMs + this.leaseTimeoutMs, queuedIds),
      );
      const queued = picks.filter((p) => latest.get(p.execution.id)?.data.state === 'created');
      const locked = await this.locks.settle(
        requests.filter((r) => latest.get(r.executionId)?.data.state === 'created'),
        written,
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

  /** The assignments of started executions, by id, from their live servers, with their server id by step host. */
  private async assignments(
    executions: readonly Stored<ExecutionData>[],
    live: readonly Stored<ServerData>[],
  ): Promise<Map<string, { assignment: Assignment; hosts: ReadonlyMap<string, string> }>> {
    const out = new Map<string, { assignment: Assignment; hosts: ReadonlyMap<string, string> }>();
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
      const limit = execution.data.limit_server_ids;
      let limitHosts: readonly string[] = [];
      if (limit) {
        const ips = own.filter((s) => limit.includes(s.id) && s.data.ip).map((s) => s.data.ip);
        // Servers of the limit gone meanwhile: their ids match no host, and Ansible refuses the
        // run. Else the groups the playbook works through run too (PlaybookPlugin.relaunchWith).
        limitHosts = ips.length === 0 ? limit : [...ips, ...(getPlugin(config.data.playbook_id)?.relaunchWith ?? [])];
      }
      out.set(execution.id, {
        assignment: {
          execution,
          playbookId: config.data.playbook_id,
          configuration: config.data.configuration,
          serverIds,
          hostKeys,
          checkMode: execution.data.preview === true,
          limitHosts,
        },
        hosts: hostMap(own),
      });
    }
    return out;
  }
}

/** Server id by step host: each server's IP and its id, the first server naming a host winning. */
export function hostMap(servers: readonly Stored<ServerData>[]): ReadonlyMap<string, string> {
  const hosts = new Map<string, string>();
  for (const server of servers) {
    for (const host of [server.data.ip, server.id]) if (host && !hosts.has(host)) hosts.set(host, server.id);
  }
  return hosts;
}

/**
 * The keys an execution locks in `server_locks`: its servers; for a preview, one key of its
 * own (`preview:<id>`), which no server has: the lease that the runner's heartbeat renews and
 * the sweep fails when it expires, without holding any server.
 */
export function leaseKeys(execution: Stored<ExecutionData>): readonly string[] {
  return execution.data.preview === true ? [`preview:${execution.id}`] : execution.data.server_ids;
}
