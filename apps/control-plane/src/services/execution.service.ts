import type { ExecutionCreate, ExecutionData, ExecutionState, PlaybookConfigurationData } from '@carapace/models';
import type { Stored, VersionedRepository } from '../db/versioned.repository.js';
import { ApiError, badRequest, conflict, forbidden } from '../errors.js';
import type { Clock } from '../ports.js';
import type { ClusterService } from './cluster.service.js';
import type { ExecutionEngine } from './execution-engine.js';
import { hasPlaybook, type Principal } from './principal.js';
import { VersionedService } from './versioned.service.js';

/** Executions as the API sees them: create (queue) and cancel. Runs are the engine's. */
export class ExecutionService extends VersionedService<ExecutionData> {
  constructor(
    repo: VersionedRepository<ExecutionData>,
    clock: Clock,
    private readonly configurations: VersionedRepository<PlaybookConfigurationData>,
    private readonly clusters: ClusterService,
    private readonly engine: ExecutionEngine,
  ) {
    super('execution', repo, clock);
  }

  /**
   * Queues an execution of a configuration at a version. Needs the playbook permission of
   * the configuration's playbook (403 otherwise).
   */
  create(body: ExecutionCreate, principal: Principal): Stored<ExecutionData> {
    const id = body.playbook_configuration?.id ?? body.playbook_configuration_id;
    const version = body.playbook_configuration?.version ?? body.playbook_configuration_version;
    if (!id || !version) {
      throw badRequest('The body needs "playbook_configuration": {"id", "version"} (or "playbook_configuration_id" and "playbook_configuration_version").');
    }
    const latest = this.configurations.get(id);
    const config = this.configurations.getVersion(id, version);
    if (!latest || !config || latest.time_deleted !== 0) {
      throw new ApiError(400, 'UnknownPlaybookConfiguration', `No live playbook configuration ${id} at version ${version}.`);
    }
    const playbook = config.data.playbook_id;
    if (!hasPlaybook(principal, playbook)) throw forbidden(`Running the playbook ${playbook} needs the playbook permission ${playbook}.`);
    if (!this.clusters.live(config.data.cluster_id)) {
      throw new ApiError(400, 'UnknownClusterError', `The cluster ${config.data.cluster_id} of this configuration is deleted.`);
    }
    const now = this.now();
    const execution = this.repo.create(
      {
        playbook_configuration: { id, version, playbook_name: playbook },
        state: 'created',
        cluster_id: config.data.cluster_id,
        server_ids: config.data.server_ids,
        time_created: now,
        time_started: null,
        time_finished: null,
        runner_id: null,
        reason: null,
      },
      principal.user.id,
      now,
    );
    this.engine.queued();
    return execution;
  }

  /** `DELETE /v1/execution/{id}/` cancels (contract). */
  delete(id: string, principal: Principal): Stored<ExecutionData> {
    return this.cancel(id, principal);
  }

  /**
   * Cancels: a queued execution ends `canceled` at once; a running one becomes `canceling`
   * and the engine tells its runner. Canceling a canceling or canceled one is a no-op; a
   * finished one cannot be canceled (409).
   */
  cancel(id: string, principal: Principal): Stored<ExecutionData> {
    const current = this.get(id);
    const state = current.data.state as ExecutionState;
    switch (state) {
      case 'created':
        return this.engine.transition(id, 'canceled', { reason: 'canceled before it started' }, principal.user.id, ['created']) ?? this.cancel(id, principal);
      case 'started':
        return this.engine.requestCancel(id, principal.user.id) ?? this.cancel(id, principal);
      case 'canceling':
      case 'canceled':
        return current;
      case 'completed':
      case 'failed':
        throw conflict('CannotCancelFinishedExecution', `The execution ${id} is ${state} already.`);
    }
  }
}
