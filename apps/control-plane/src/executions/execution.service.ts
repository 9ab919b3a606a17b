import type {
  ExecutionCreate,
  ExecutionData,
  ExecutionPreview,
  ExecutionRelaunch,
  ExecutionState,
  ExecutionStepData,
  PlaybookConfigurationData,
  PreviewHost,
} from '@carapace/models';
import { parseBoolean } from '@carapace/config';
import { getPlugin } from '@carapace/playbooks';
import type { ExecutionEventsRepository } from '../db/execution-events.repository.js';
import { Conditions, type Condition } from '../db/condition.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import { mapCursor, type ListCursor, type ListItem, type ListRequest, type Page, type Stored } from '../domain/list-types.js';
import { ApiError, badRequest, conflict, forbidden, notFound } from '../errors.js';
import type { Clock } from '../ports.js';
import type { ClusterService } from '../infrastructure/cluster.service.js';
import type { ExecutionEngine } from './execution-engine.js';
import { EVERY_EXECUTION } from './execution-events.js';
import { isFinal } from './execution-state.js';
import { hasPlaybook, type Principal } from '../accounts/principal.js';
import { VersionedService } from '../services/versioned.service.js';

function unknownConfiguration(id: string, version: number): ApiError {
  return new ApiError(400, 'UnknownPlaybookConfiguration', `No live playbook configuration ${id} at version ${version}.`);
}

/** Log chunks read at once by a follower (each up to 32 KiB from the runner). */
const FOLLOW_READ_CHUNKS = 64;

/** How a runner's reason begins when a host failed the SSH check before Ansible started (`ExecutionRun`). */
const PREFLIGHT_FAILED = 'pre-flight failed';

/** The most steps the result of one preview holds (`GET /v1/execution/{id}/preview/`). */
const PREVIEW_MAX_STEPS = 20_000;

/** What a new execution is besides its configuration: a preview, a relaunch (issue 31). */
type ExecutionExtras = Pick<ExecutionData, 'preview' | 'relaunch_of' | 'relaunch' | 'limit_server_ids'>;

/** Executions as the API sees them: create (queue), cancel, steps and log. Runs are the engine's. */
export class ExecutionService extends VersionedService<ExecutionData> {
  constructor(
    repo: VersionedRepository<ExecutionData>,
    clock: Clock,
    private readonly configurations: VersionedRepository<PlaybookConfigurationData>,
    private readonly clusters: ClusterService,
    private readonly engine: ExecutionEngine,
    private readonly events: ExecutionEventsRepository,
    private readonly servers: {
      /** A condition: one of the servers is live and in maintenance (through an index). */
      anyInMaintenance(ids: readonly string[]): Condition;
      /** The live servers of `ids` in maintenance. */
      inMaintenance(ids: readonly string[]): Promise<string[]>;
    },
  ) {
    super('execution', repo, clock);
  }

  /**
   * Queues an execution of a configuration at a version. Needs the playbook permission of
   * the configuration's playbook (403 otherwise).
   */
  async create(body: ExecutionCreate, principal: Principal): Promise<Stored<ExecutionData>> {
    const id = body.playbook_configuration?.id ?? body.playbook_configuration_id;
    const version = body.playbook_configuration?.version ?? body.playbook_configuration_version;
    if (!id || !version) {
      throw badRequest('The body needs "playbook_configuration": {"id", "version"} (or "playbook_configuration_id" and "playbook_configuration_version").');
    }
    const execution = await this.store(id, version, principal, body.preview === true ? { preview: true } : {});
    await this.engine.queued();
    return execution;
  }

  /**
   * `POST /v1/execution/{id}/relaunch/` (issue 31): a new execution of the same configuration
   * version, on every host or only on those that failed or were unreachable (`--limit`),
   * recorded as `relaunch_of` in it and `relaunched_by` in the original, in one transaction.
   * A preview relaunches as a preview. Only a finished execution can be relaunched (409), and
   * only a failed or canceled one for its failed hosts (409). Where the playbook does not
   * allow a subset (`PlaybookPlugin.relaunchSubset`), or no host failed on its own, it runs on
   * every host (`relaunch.whole`) and `relaunch.note` says why.
   */
  async relaunch(id: string, body: ExecutionRelaunch, principal: Principal): Promise<Stored<ExecutionData>> {
    const original = await this.get(id);
    const hosts = body.hosts ?? 'all';
    const state = original.data.state as ExecutionState;
    if (!isFinal(state)) {
      throw conflict('ExecutionNotFinished', `The execution ${id} is ${state}: only a completed, failed or canceled execution can be relaunched.`);
    }
    if (hosts === 'failed' && state !== 'failed' && state !== 'canceled') {
      throw conflict('CannotRelaunchFailedHosts', `The execution ${id} is ${state}: only a failed or canceled execution has failed hosts to relaunch.`);
    }
    const ref = original.data.playbook_configuration;
    let limit: string[] | undefined;
    let note: string | null = null;
    if (hosts === 'failed') {
      const plugin = getPlugin(ref.playbook_name);
      if (!plugin?.relaunchSubset) {
        note = `The playbook ${ref.playbook_name} does not run on a subset of its hosts (${plugin?.relaunchSubsetReason ?? 'unknown playbook'}): the relaunch runs on every host.`;
      } else if (original.data.reason?.startsWith(PREFLIGHT_FAILED)) {
        // The runner stops before Ansible when a host fails its SSH check: no host ran at all.
        note = `The run stopped at the pre-flight SSH check, before any host ran (${original.data.reason}): the relaunch runs on every host it was to run on.`;
        if (original.data.limit_server_ids) limit = [...original.data.limit_server_ids];
      } else {
        const failed = new Set(await this.events.failedServers(id));
        const subset = original.data.server_ids.filter((s) => failed.has(s));
        if (subset.length > 0) limit = subset;
        else if (original.data.limit_server_ids) {
          limit = [...original.data.limit_server_ids];
          note = `No host failed on its own (${original.data.reason ?? 'the run failed as a whole'}): the relaunch runs on the hosts the execution ran on.`;
        } else note = `No host failed on its own (${original.data.reason ?? 'the run failed as a whole'}): the relaunch runs on every host.`;
      }
    }
    const extras: ExecutionExtras = {
      ...(original.data.preview === true ? { preview: true } : {}),
      relaunch_of: id,
      relaunch: { hosts, whole: limit === undefined, note },
      ...(limit ? { limit_server_ids: limit } : {}),
    };
    const execution = await this.repo.transaction(async () => {
      const created = await this.store(ref.id, ref.version, principal, extras);
      const latest = await this.getForUpdate(id);
      await this.repo.append(latest, { data: { ...latest.data, relaunched_by: [...(latest.data.relaunched_by ?? []), created.id] } }, null, created.time_updated);
      return created;
    });
    await this.engine.queued();
    return execution;
  }

  /**
   * `GET /v1/execution/{id}/preview/`: the verdicts of a preview's steps, per server in the
   * order of its `server_ids`; 404 when the id is unknown or the execution is no preview.
   */
  async preview(id: string): Promise<ExecutionPreview> {
    const execution = await this.get(id);
    if (execution.data.preview !== true) throw notFound(`The execution ${id} is not a preview: its steps are GET /v1/execution/${id}/steps/.`);
    const hosts = new Map<string | null, PreviewHost>();
    const hostOf = (serverId: string | null): PreviewHost => {
      let host = hosts.get(serverId);
      if (!host) {
        host = { server_id: serverId, counts: { would_change: 0, unchanged: 0, would_fail: 0, unknown: 0 }, tasks: [] };
        hosts.set(serverId, host);
      }
      return host;
    };
    for (const serverId of execution.data.limit_server_ids ?? execution.data.server_ids) hostOf(serverId);
    for (const step of await this.events.previewSteps(id, PREVIEW_MAX_STEPS)) {
      const host = hostOf(step.serverId);
      host.counts[step.preview.status] += 1;
      host.tasks.push({ role: step.role, name: step.name, ...step.preview });
    }
    return { execution_id: id, state: execution.data.state, hosts: [...hosts.values()] };
  }

  /** The list: real runs, or previews only with `?preview=true` (issue 31). */
  override list(request: ListRequest, query?: Readonly<Record<string, unknown>>): Promise<Page<Stored<ExecutionData>>> {
    return this.repo.list(request, this.scope(query));
  }

  override async listCursor(request: ListRequest, query?: Readonly<Record<string, unknown>>): Promise<ListCursor<ListItem<ExecutionData>>> {
    return mapCursor(await this.repo.cursor(request, this.scope(query)), (row) => this.listItem(row));
  }

  private scope(query: Readonly<Record<string, unknown>> | undefined): Condition {
    const raw = query?.preview;
    const previews = raw === undefined ? false : typeof raw === 'string' ? parseBoolean(raw) : undefined;
    if (previews === undefined) throw badRequest('Query parameter "preview" takes a boolean.');
    return this.repo.fieldIsTrue('preview', previews);
  }

  /** Stores a queued execution of a configuration version, with its extras; the checks of `create`. */
  private async store(id: string, version: number, principal: Principal, extras: ExecutionExtras): Promise<Stored<ExecutionData>> {
    // A version never changes once stored (and is cached): whether the configuration and its
    // cluster are still live is checked by the statement that stores the execution.
    const config = await this.configurations.getVersion(id, version);
    if (!config) throw unknownConfiguration(id, version);
    const playbook = config.data.playbook_id;
    if (!hasPlaybook(principal, playbook)) {
      if (!(await this.configurations.getLive(id))) throw unknownConfiguration(id, version);
      throw forbidden(`Running the playbook ${playbook} needs the playbook permission ${playbook}.`);
    }
    const clusterId = config.data.cluster_id;
    const now = this.now();
    // A server in maintenance (maintenance_enter) is touched by no playbook but
    // maintenance_exit, also through a configuration made before it entered: checked by the
    // statement that stores the execution, like the rest.
    const serverIds = config.data.server_ids;
    const touchesMaintenance = playbook !== 'maintenance_exit' && serverIds.length > 0;
    const execution = await this.repo.createIf(
      Conditions.all(
        this.configurations.liveCondition(id),
        this.clusters.liveCondition(clusterId),
        touchesMaintenance ? Conditions.not(this.servers.anyInMaintenance(serverIds)) : undefined,
      ),
      {
        playbook_configuration: { id, version, playbook_name: playbook },
        state: 'created',
        cluster_id: clusterId,
        server_ids: config.data.server_ids,
        time_created: now,
        time_started: null,
        time_finished: null,
        runner_id: null,
        reason: null,
        ...extras,
      },
      principal.user.id,
      now,
    );
    if (!execution) {
      if (!(await this.configurations.getLive(id))) throw unknownConfiguration(id, version);
      const inMaintenance = touchesMaintenance ? await this.servers.inMaintenance(serverIds) : [];
      if (inMaintenance.length > 0) {
        throw conflict('ServerInMaintenanceError', `Servers in maintenance, which only maintenance_exit may touch: ${inMaintenance.join(', ')}.`);
      }
      throw new ApiError(400, 'UnknownClusterError', `The cluster ${clusterId} of this configuration is deleted.`);
    }
    return execution;
  }

  /** `DELETE /v1/execution/{id}/` cancels (contract). */
  delete(id: string, principal: Principal): Promise<Stored<ExecutionData>> {
    return this.cancel(id, principal);
  }

  /**
   * Cancels: a queued execution ends `canceled` at once; a running one becomes `canceling`
   * and the engine tells its runner. Canceling a canceling or canceled one is a no-op; a
   * finished one cannot be canceled (409).
   */
  async cancel(id: string, principal: Principal): Promise<Stored<ExecutionData>> {
    const current = await this.get(id);
    const state = current.data.state as ExecutionState;
    switch (state) {
      case 'created':
        return (await this.engine.transition(id, 'canceled', { reason: 'canceled before it started' }, principal.user.id, ['created'])) ?? this.cancel(id, principal);
      case 'started':
        return (await this.engine.requestCancel(id, principal.user.id)) ?? this.cancel(id, principal);
      case 'canceling':
      case 'canceled':
        return current;
      case 'completed':
      case 'failed':
        throw conflict('CannotCancelFinishedExecution', `The execution ${id} is ${state} already.`);
    }
  }

  /** A page of the steps of an execution (filtered and sorted); 404 when the id is unknown. */
  async steps(id: string, request: ListRequest): Promise<Page<Stored<ExecutionStepData>>> {
    await this.get(id);
    return this.events.listSteps(id, request);
  }

  /** Every matching step of an execution (`all`), read in bounded batches; 404 when the id is unknown. */
  async stepsCursor(id: string, request: ListRequest): Promise<ListCursor<Stored<ExecutionStepData>>> {
    await this.get(id);
    return this.events.cursorSteps(id, request);
  }

  /** The log of an execution so far, as far as it is contiguous; 404 when the id is unknown. */
  async log(id: string): Promise<string> {
    await this.get(id);
    return (await this.events.readLog(id)).text;
  }

  /**
   * The log of an execution as it grows, in bounded reads (`FOLLOW_READ_CHUNKS` chunks at
   * most), each yielded as one piece of text. Between reads that find nothing new it waits
   * for the engine's next event of this execution, never polls; it ends once the execution
   * is final and its log read to the end, or when `signal` aborts (the client went away).
   * The next read happens only when the consumer asks for it, so a slow client holds one
   * read in memory, whatever the size of the log. 404 (thrown from the first read) when the
   * id is unknown.
   */
  async *follow(id: string, signal: AbortSignal): AsyncGenerator<string, void, undefined> {
    let wake: (() => void) | null = null;
    // Set by an event of this execution: one that comes while a read is under way is not lost.
    let dirty = false;
    const unsubscribe = this.engine.events.on((event) => {
      if (event.executionId !== id && event.executionId !== EVERY_EXECUTION) return;
      dirty = true;
      wake?.();
    });
    const stop = () => wake?.();
    signal.addEventListener('abort', stop);
    try {
      let offset = 0;
      while (!signal.aborted) {
        // The state is read before the log: once it is final, the reads after it see the
        // log as it was stored when the run ended.
        dirty = false;
        const finished = isFinal((await this.get(id)).data.state as ExecutionState);
        const { text, next } = await this.events.readLog(id, offset, FOLLOW_READ_CHUNKS);
        offset = next;
        if (text) {
          yield text;
          continue;
        }
        if (finished) return;
        // An event, or the client gone, while the read was under way: look again at once.
        if (dirty || signal.aborted) continue;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = null;
      }
    } finally {
      signal.removeEventListener('abort', stop);
      unsubscribe();
    }
  }
}
