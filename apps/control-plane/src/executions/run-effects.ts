import type { ClusterData, ExecutionData, PlaybookConfigurationData } from '@carapace/models';
import { getPlugin } from '@carapace/playbooks';
import type { ClusterFileRepository } from '../db/cluster-file.repository.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import { pluginCluster, pluginServer } from './playbook-configuration.service.js';
import type { ServerService } from '../infrastructure/server.service.js';

/** A file a run handed back (`RunArtifact`), as the playbook plugin reads it. */
export interface RunFile {
  readonly name: string;
  readonly content: string;
}

/**
 * What a completed run changes: its playbook plugin says (`PlaybookPlugin.onSuccess`) which
 * servers join or leave the cluster, the cluster's new configuration and files, and whether
 * the cluster is gone; this applies it, in the transaction that stores the run's end.
 */
export class RunEffects {
  constructor(
    private readonly clusters: VersionedRepository<ClusterData>,
    private readonly configurations: VersionedRepository<PlaybookConfigurationData>,
    private readonly servers: ServerService,
    private readonly files: ClusterFileRepository,
  ) {}

  /** Applies what a completed run did to its cluster and servers; the caller holds the transaction. */
  async apply(execution: Stored<ExecutionData>, artifacts: readonly RunFile[], nowS: number): Promise<void> {
    const plugin = getPlugin(execution.data.playbook_configuration.playbook_name);
    if (!plugin) throw new Error(`cannot apply the effects of execution ${execution.id}: no playbook ${execution.data.playbook_configuration.playbook_name}`);
    // A playbook that changes nothing (`hello_world`): the cluster is neither read nor
    // locked, and its runs end side by side.
    if (!plugin.onSuccess) return;
    const cluster = await this.clusters.getForUpdate(execution.data.cluster_id);
    const config = await this.configurations.getVersion(execution.data.playbook_configuration.id, execution.data.playbook_configuration.version);
    if (!cluster || !config) throw new Error(`cannot apply the effects of execution ${execution.id}`);
    const servers = (await this.servers.liveMany(execution.data.server_ids)).found;
    const effect = plugin.onSuccess(pluginCluster(cluster), servers.map(pluginServer), config.data.configuration, artifacts);
    if (effect.files) {
      await this.files.removeAll(cluster.id);
      for (const file of effect.files) await this.files.put(cluster.id, file.name, file.content, nowS);
    }
    if (effect.refreshFiles && effect.refreshFiles.length > 0) {
      const stored = new Set((await this.files.list(cluster.id)).map((f) => f.name));
      for (const file of effect.refreshFiles) if (stored.has(file.name)) await this.files.put(cluster.id, file.name, file.content, nowS);
    }
    for (const id of effect.join) await this.servers.setCluster(id, cluster.id, nowS);
    for (const id of effect.leave) await this.servers.setCluster(id, null, nowS);
    for (const [id, state] of Object.entries(effect.serverStates ?? {})) await this.servers.setState(id, state, nowS);
    // The cluster stays locked (`getForUpdate` above) until the transaction ends: `cluster` is its latest version.
    const data: ClusterData = { ...cluster.data, configuration: effect.configuration };
    if (effect.cephOptions) data.ceph_options = effect.cephOptions;
    const updated = await this.clusters.append(cluster, { data }, null, nowS);
    if (effect.deleteCluster) {
      await this.clusters.append(updated, { time_deleted: nowS }, null, nowS);
      await this.files.removeAll(cluster.id);
    }
  }
}
