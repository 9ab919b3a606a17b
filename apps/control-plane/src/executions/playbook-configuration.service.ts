import type {
  ClusterData,
  ExecutionCreate,
  ExecutionData,
  PlaybookConfigurationCreate,
  PlaybookConfigurationData,
  PlaybookConfigurationUpdate,
  ServerData,
} from '@carapace/models';
import { getPlugin, PlaybookInputError, resolveHints, type PluginCluster, type PluginServer } from '@carapace/playbooks';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import { ApiError, badRequest, forbidden } from '../errors.js';
import type { Clock } from '../ports.js';
import type { ClusterService } from '../infrastructure/cluster.service.js';
import { hasApi, hasPlaybook, type Principal } from '../accounts/principal.js';
import type { ServerService } from '../infrastructure/server.service.js';
import { VersionedService } from '../services/versioned.service.js';

/** A stored cluster as a plugin sees it. */
export function pluginCluster(cluster: Stored<ClusterData>): PluginCluster {
  return { id: cluster.id, name: cluster.data.name, configuration: cluster.data.configuration, ceph_options: cluster.data.ceph_options ?? {} };
}

/** A stored server as a plugin sees it. */
export function pluginServer(server: Stored<ServerData>): PluginServer {
  const { name, fqdn, ip, username, state, cluster_id, facts } = server.data;
  return { id: server.id, version: server.version, name, fqdn, ip, username, state, cluster_id, facts: facts as PluginServer['facts'] };
}

/** Runs plugin code, turning its refusals into 400 answers named as the plugin says. */
export function asApiError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof PlaybookInputError) throw new ApiError(400, e.errorName, e.message);
    throw e;
  }
}

/** What queues an execution (ExecutionService.create): a configuration created with `"run": true` queues its first. */
export interface ExecutionQueue {
  create(body: ExecutionCreate, principal: Principal): Promise<Stored<ExecutionData>>;
}

/** Playbook configurations: built by the playbook's plugin on create, editable before running. */
export class PlaybookConfigurationService extends VersionedService<PlaybookConfigurationData> {
  constructor(
    repo: VersionedRepository<PlaybookConfigurationData>,
    clock: Clock,
    private readonly clusters: ClusterService,
    private readonly servers: ServerService,
    private readonly executions: ExecutionQueue,
  ) {
    super('playbook_configuration', repo, clock);
  }

  /** Checks the request and builds the configuration with the playbook's plugin. */
  async create(body: PlaybookConfigurationCreate, principal: Principal): Promise<Stored<PlaybookConfigurationData>> {
    const data = await this.build(body);
    return this.repo.create(data, principal.user.id, this.now());
  }

  /**
   * `POST /v1/playbook_configuration/`: creates the configuration and, with `"run": true`,
   * queues its first execution in the same transaction, so that both are stored or neither
   * (an execution refused by its own checks leaves no configuration behind). Running needs
   * the api permissions view_execution and create_execution and the playbook's permission,
   * checked before anything is written (403).
   */
  async createAndRun(body: PlaybookConfigurationCreate, principal: Principal): Promise<{ configuration: Stored<PlaybookConfigurationData>; execution: Stored<ExecutionData> | null }> {
    if (!body.run) return { configuration: await this.create(body, principal), execution: null };
    const playbook = this.playbookOf(body);
    if (!hasApi(principal, ['view_execution', 'create_execution'])) throw forbidden('Running at once needs the api permissions view_execution and create_execution.');
    if (!hasPlaybook(principal, playbook)) throw forbidden(`Running the playbook ${playbook} needs the playbook permission ${playbook}.`);
    return this.repo.transaction(async () => {
      const configuration = await this.create(body, principal);
      const execution = await this.executions.create({ playbook_configuration: { id: configuration.id, version: configuration.version } }, principal);
      return { configuration, execution };
    });
  }

  /** The playbook id of a create request, checked. */
  playbookOf(body: PlaybookConfigurationCreate): string {
    const id = body.playbook_id ?? body.playbook;
    if (!id) throw badRequest('The body needs the playbook id: "playbook_id".');
    if (body.playbook_id && body.playbook && body.playbook_id !== body.playbook) throw badRequest('"playbook_id" and "playbook" differ.');
    if (!getPlugin(id)) throw new ApiError(400, 'UnknownPlaybookError', `No playbook with id ${id}.`);
    return id;
  }

  async update(id: string, body: PlaybookConfigurationUpdate, principal: Principal): Promise<Stored<PlaybookConfigurationData>> {
    await this.checkUpdatable(id, body);
    const { name, configuration } = body.data;
    return this.appendChecked(
      id,
      body,
      (latest) => ({ data: { ...latest.data, name, configuration: { global_vars: configuration.global_vars, inventory: configuration.inventory } } }),
      principal,
    );
  }

  delete(id: string, principal: Principal): Promise<Stored<PlaybookConfigurationData>> {
    return this.appendChecked(id, null, () => ({ time_deleted: this.now() }), principal);
  }

  private async build(body: PlaybookConfigurationCreate): Promise<PlaybookConfigurationData> {
    const playbookId = this.playbookOf(body);
    const plugin = getPlugin(playbookId);
    if (!plugin) throw new ApiError(400, 'UnknownPlaybookError', `No playbook with id ${playbookId}.`);
    const cluster = await this.clusters.live(body.cluster_id);
    if (!cluster) throw new ApiError(400, 'UnknownClusterError', `No live cluster with id ${body.cluster_id}.`);
    const requestedIds = body.server_ids ?? [];
    const { found, missing } = await this.servers.liveMany(requestedIds);
    if (missing.length) throw new ApiError(400, 'UnknownServerError', `No live server with id ${missing.join(', ')}.`);
    const clusterServers = await this.servers.ofCluster(cluster.id);
    return asApiError(() => {
      const hints = resolveHints(plugin.descriptor, body.hints ?? []);
      const pc = pluginCluster(cluster);
      const members = clusterServers.map(pluginServer);
      const selected = plugin.selectServers(pc, found.map(pluginServer), members);
      // add_osd and remove_osd need the cluster's servers (its monitors) to build the inventory
      const configuration = plugin.buildConfiguration(pc, selected, hints, members);
      return {
        name: body.name,
        playbook_id: playbookId,
        cluster_id: cluster.id,
        server_ids: selected.map((s) => s.id),
        hints: Object.entries(hints).map(([id, value]) => ({ id, value })),
        configuration,
      };
    });
  }
}
