import type { Cluster, ClusterStatus, ClusterStatusHistory, ClusterStatusList, PlaybookConfigurationModel, RunnerToken, Server } from '@carapace/models';
import { AccountsClient } from './accounts.client.js';
import { segment } from './core.client.js';
import type { RequestOptions } from './transport.js';
import type { CinderIntegration, HintValue, IterParams, ListParams, Page, PlaybookList, RunnerList } from './types.js';

/** The calls on clusters, servers, playbooks, playbook configurations and runners. Part of {@link Client}. */
export class InfrastructureClient extends AccountsClient {
  /** A page of the latest active clusters (`GET /v1/cluster/`; `view_cluster`). */
  getClusters(params?: ListParams, options?: RequestOptions): Promise<Page<Cluster>> {
    return this.list('/v1/cluster/', params, options);
  }

  /** Every cluster matching `params`, fetched page by page as the loop goes. */
  iterClusters(params?: IterParams, options?: RequestOptions): AsyncGenerator<Cluster, void, undefined> {
    return this.iterate('/v1/cluster/', params, options);
  }

  /** The latest version of a cluster (`GET /v1/cluster/{id}/`). */
  getCluster(clusterId: string, options?: RequestOptions): Promise<Cluster> {
    return this.call('GET', `/v1/cluster/${segment(clusterId)}/`, { options });
  }

  /** The versions of a cluster, newest first (`GET /v1/cluster/{id}/version/`; `view_cluster_versions`). */
  getClusterVersions(clusterId: string, params?: ListParams, options?: RequestOptions): Promise<Page<Cluster>> {
    return this.list(`/v1/cluster/${segment(clusterId)}/version/`, params, options);
  }

  /** One version of a cluster (`GET /v1/cluster/{id}/version/{version}/`). */
  getClusterVersion(clusterId: string, version: number, options?: RequestOptions): Promise<Cluster> {
    return this.call('GET', `/v1/cluster/${segment(clusterId)}/version/${segment(version)}/`, { options });
  }

  /** Creates a cluster (`POST /v1/cluster/`; `create_cluster`). */
  createCluster(name: string, options?: RequestOptions): Promise<Cluster> {
    return this.call('POST', '/v1/cluster/', { body: { name }, options });
  }

  /** Updates a cluster (`PUT /v1/cluster/{id}/`; `edit_cluster`): only `data.name` changes. */
  updateCluster(model: Cluster, options?: RequestOptions): Promise<Cluster> {
    return this.call('PUT', `/v1/cluster/${segment(model.id)}/`, { body: model, options });
  }

  /** Deletes a cluster (`DELETE /v1/cluster/{id}/`; `delete_cluster`); 409 while it has servers. */
  deleteCluster(clusterId: string, options?: RequestOptions): Promise<Cluster> {
    return this.call('DELETE', `/v1/cluster/${segment(clusterId)}/`, { options });
  }

  /**
   * The files a Cinder, Glance or Nova host needs to use a cluster
   * (`GET /v1/cinder_integration/{id}/?root=`; `view_cinder`): path → content, the paths
   * under `root` (default `/etc/ceph`).
   */
  getCinderIntegration(clusterId: string, root = '/etc/ceph', options?: RequestOptions): Promise<CinderIntegration> {
    return this.call('GET', `/v1/cinder_integration/${segment(clusterId)}/`, { query: { root }, options });
  }

  /**
   * The status of a cluster as Ceph reports it (`GET /v1/cluster/{id}/status/`;
   * `view_cluster`; a Carapace extension, not in the original API): `state` (`collected`,
   * `unreachable`, `pending` or `not_deployed`), when it was collected and attempted, why and
   * since when the monitors do not answer, and `ceph`: health with its checks (each with the
   * playbook that addresses it, or null), monitors, managers, OSDs by host, PG states,
   * capacity with the pools, client IO. 404 for an unknown cluster.
   */
  getClusterStatus(clusterId: string, options?: RequestOptions): Promise<ClusterStatus> {
    return this.call('GET', `/v1/cluster/${segment(clusterId)}/status/`, { options });
  }

  /**
   * The time series of a cluster's status, oldest first (`GET /v1/cluster/{id}/status/history/?hours=`;
   * `view_cluster`; a Carapace extension): at most a point a minute, kept 24 hours, each with
   * the health (or `UNREACHABLE`), raw capacity and OSD counts.
   *
   * @param hours - How far back from now, 1 to 24; the server's default (24) when omitted.
   */
  getClusterStatusHistory(clusterId: string, hours?: number, options?: RequestOptions): Promise<ClusterStatusHistory> {
    return this.call('GET', `/v1/cluster/${segment(clusterId)}/status/history/`, { ...(hours === undefined ? {} : { query: { hours } }), options });
  }

  /**
   * The status of every cluster the caller may view (`GET /v1/cluster_status/`;
   * `view_cluster`; a Carapace extension): `{items}`, one {@link ClusterStatus} a cluster,
   * not paged.
   */
  getClusterStatuses(options?: RequestOptions): Promise<ClusterStatusList> {
    return this.call('GET', '/v1/cluster_status/', { options });
  }

  /** A page of the latest active servers (`GET /v1/server/`; `view_server`). */
  getServers(params?: ListParams, options?: RequestOptions): Promise<Page<Server>> {
    return this.list('/v1/server/', params, options);
  }

  /** Every server matching `params`, fetched page by page as the loop goes. */
  iterServers(params?: IterParams, options?: RequestOptions): AsyncGenerator<Server, void, undefined> {
    return this.iterate('/v1/server/', params, options);
  }

  /** The latest version of a server (`GET /v1/server/{id}/`). */
  getServer(serverId: string, options?: RequestOptions): Promise<Server> {
    return this.call('GET', `/v1/server/${segment(serverId)}/`, { options });
  }

  /** The versions of a server, newest first (`GET /v1/server/{id}/version/`; `view_server_versions`). */
  getServerVersions(serverId: string, params?: ListParams, options?: RequestOptions): Promise<Page<Server>> {
    return this.list(`/v1/server/${segment(serverId)}/version/`, params, options);
  }

  /** One version of a server (`GET /v1/server/{id}/version/{version}/`). */
  getServerVersion(serverId: string, version: number, options?: RequestOptions): Promise<Server> {
    return this.call('GET', `/v1/server/${segment(serverId)}/version/${segment(version)}/`, { options });
  }

  /**
   * Registers a server by hand (`POST /v1/server/`; `create_server`): its hardware UUID, an
   * address the service reaches it at and the SSH user of the automation. Servers normally
   * register themselves at first boot (see `carapace cloud-config`). Registering an existing
   * id refreshes its host and username.
   */
  createServer(serverId: string, host: string, username: string, options?: RequestOptions): Promise<Server> {
    return this.call('POST', '/v1/server/', { body: { server_id: serverId, host, username }, options });
  }

  /** Updates a server (`PUT /v1/server/{id}/`; `edit_server`): `data.name` and `data.state` change. */
  putServer(model: Server, options?: RequestOptions): Promise<Server> {
    return this.call('PUT', `/v1/server/${segment(model.id)}/`, { body: model, options });
  }

  /** Deletes a server (`DELETE /v1/server/{id}/`; `delete_server`); 409 while in a cluster or locked. */
  deleteServer(serverId: string, options?: RequestOptions): Promise<Server> {
    return this.call('DELETE', `/v1/server/${segment(serverId)}/`, { options });
  }

  /** The playbooks and their hints (`GET /v1/playbook/`). */
  getPlaybooks(options?: RequestOptions): Promise<PlaybookList> {
    return this.call('GET', '/v1/playbook/', { options });
  }

  /** A page of the latest active playbook configurations, newest first (`GET /v1/playbook_configuration/`). */
  getPlaybookConfigurations(params?: ListParams, options?: RequestOptions): Promise<Page<PlaybookConfigurationModel>> {
    return this.list('/v1/playbook_configuration/', params, options);
  }

  /** Every playbook configuration matching `params`, fetched page by page as the loop goes. */
  iterPlaybookConfigurations(params?: IterParams, options?: RequestOptions): AsyncGenerator<PlaybookConfigurationModel, void, undefined> {
    return this.iterate('/v1/playbook_configuration/', params, options);
  }

  /** The latest version of a playbook configuration (`GET /v1/playbook_configuration/{id}/`). */
  getPlaybookConfiguration(playbookConfigurationId: string, options?: RequestOptions): Promise<PlaybookConfigurationModel> {
    return this.call('GET', `/v1/playbook_configuration/${segment(playbookConfigurationId)}/`, { options });
  }

  /** The versions of a playbook configuration, newest first (`view_playbook_configuration_version`). */
  getPlaybookConfigurationVersions(playbookConfigurationId: string, params?: ListParams, options?: RequestOptions): Promise<Page<PlaybookConfigurationModel>> {
    return this.list(`/v1/playbook_configuration/${segment(playbookConfigurationId)}/version/`, params, options);
  }

  /** One version of a playbook configuration (`GET /v1/playbook_configuration/{id}/version/{version}/`). */
  getPlaybookConfigurationVersion(playbookConfigurationId: string, version: number, options?: RequestOptions): Promise<PlaybookConfigurationModel> {
    return this.call('GET', `/v1/playbook_configuration/${segment(playbookConfigurationId)}/version/${segment(version)}/`, { options });
  }

  /**
   * Creates a playbook configuration (`POST /v1/playbook_configuration/`;
   * `create_playbook_configuration`): the playbook's plugin builds the inventory and
   * variables from the cluster, the servers and the hints.
   *
   * @param playbookId - The playbook's id (see {@link InfrastructureClient.getPlaybooks}).
   * @param serverIds - The servers; some playbooks take the cluster's when none are given.
   * @param hints - Values of the playbook's hints, e.g. `[{id: 'dmcrypt', value: true}]`.
   */
  createPlaybookConfiguration(
    name: string,
    clusterId: string,
    playbookId: string,
    serverIds: string[] = [],
    hints: HintValue[] = [],
    options?: RequestOptions,
  ): Promise<PlaybookConfigurationModel> {
    return this.call('POST', '/v1/playbook_configuration/', {
      body: { name, cluster_id: clusterId, playbook_id: playbookId, server_ids: serverIds, hints },
      options,
    });
  }

  /**
   * Updates a playbook configuration (`PUT /v1/playbook_configuration/{id}/`;
   * `edit_playbook_configuration`): `data.name` and `data.configuration` change.
   */
  updatePlaybookConfiguration(model: PlaybookConfigurationModel, options?: RequestOptions): Promise<PlaybookConfigurationModel> {
    return this.call('PUT', `/v1/playbook_configuration/${segment(model.id)}/`, { body: model, options });
  }

  /** Deletes a playbook configuration (`DELETE /v1/playbook_configuration/{id}/`). */
  deletePlaybookConfiguration(playbookConfigurationId: string, options?: RequestOptions): Promise<PlaybookConfigurationModel> {
    return this.call('DELETE', `/v1/playbook_configuration/${segment(playbookConfigurationId)}/`, { options });
  }

  /**
   * Every runner with its live state (`GET /v1/runner/`; `view_runner`; a Carapace extension,
   * not in the original API): name, labels, `state` (`connected`, `draining` or
   * `disconnected`, the latter also for a runner that never connected), slots and free slots,
   * last heartbeat, the executions it runs and the SSH public key it logs in to servers with.
   * Not paged: the answer is `{items}`, sorted by name.
   */
  getRunners(options?: RequestOptions): Promise<RunnerList> {
    return this.call('GET', '/v1/runner/', { options });
  }

  /**
   * Issues the token of a new runner (`POST /v1/runner/`; `create_runner`; a Carapace
   * extension). The answer holds the token, `crt.<name in base64url>.<secret>`, shown this
   * once: the service keeps only a digest of it. A name that is taken is refused with 409
   * `RunnerExists` (delete the runner first to issue a new token).
   *
   * @param name - Lower-case letters, digits, `.`, `_` and `-`, up to 63 characters.
   * @param labels - Labels the runner is registered with (key → value), e.g. `{site: 'lab'}`.
   */
  createRunner(name: string, labels: Record<string, string> = {}, options?: RequestOptions): Promise<RunnerToken> {
    return this.call('POST', '/v1/runner/', { body: { name, labels }, options });
  }

  /**
   * Revokes a runner's token and closes its stream (`DELETE /v1/runner/{name}/`;
   * `delete_runner`; a Carapace extension): the runner is removed from the list and its token
   * no longer works. 404 when no runner has that name. The API answers 200 with `{}`.
   */
  async deleteRunner(name: string, options?: RequestOptions): Promise<void> {
    await this.transport.text({ method: 'DELETE', path: `/v1/runner/${segment(name)}/`, auth: this.auth, options }, 'application/json');
  }
}
