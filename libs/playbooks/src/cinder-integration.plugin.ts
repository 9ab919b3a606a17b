/**
 * `cinder_integration`: the RBD pools and client keys OpenStack Cinder, Glance and Nova use,
 * and the files an OpenStack host needs (`GET /v1/cinder_integration/{cluster_id}/`).
 *
 * @packageDocumentation
 */
import { cephBaseGlobalVars, monitorHostsInventory, selectMonitorHosts } from './ceph.js';
import { copyClusterConfiguration, requireDescriptor, roleMemberIds } from './common.js';
import { normalizeResolvedHints } from './hints.js';
import { PlaybookInputError, type ChangingPlaybookPlugin, type RunArtifact } from './plugin.js';

const descriptor = requireDescriptor('cinder_integration');

/** The pools the playbook creates, with the names OpenStack's documentation uses. */
export const OPENSTACK_POOLS: readonly string[] = ['volumes', 'images', 'vms', 'backups'];

/** The Ceph clients (`client.<name>`) whose keyrings the playbook hands back. */
export const OPENSTACK_CLIENTS: readonly string[] = ['cinder', 'cinder-backup', 'glance'];

/** The client configuration file among the files of a run. */
export const CLIENT_CONF_FILE = 'ceph.conf';

/** A client keyring's file name: `ceph.client.<name>.keyring`, where Ceph looks by default. */
export const CLIENT_KEYRING_FILE = /^ceph\.client\.[a-z0-9][a-z0-9_-]{0,62}\.keyring$/;

/**
 * The files of a run that belong with the cluster: `ceph.conf` and the client keyrings,
 * sorted by name; null when there is no `ceph.conf` among them (a run that handed nothing
 * back, e.g. by a runner that does not send files, leaves the stored files alone).
 */
export function clientFiles(artifacts: readonly RunArtifact[]): RunArtifact[] | null {
  const picked = artifacts.filter((a) => a.name === CLIENT_CONF_FILE || CLIENT_KEYRING_FILE.test(a.name));
  if (!picked.some((a) => a.name === CLIENT_CONF_FILE)) return null;
  return [...picked].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((a) => ({ name: a.name, content: a.content }));
}

/**
 * The `cinder_integration` plugin.
 *
 * - Servers: the cluster's usable monitors (`usableMonitors`: `ClusterHasNoMonitorsError`
 *   for a cluster that was not deployed), in the cluster configuration's order. A request may
 *   name none of them (all are used) or some of them (`ServerNotInRoleError` for a server
 *   that is not a usable monitor, `DuplicateServerError`). The cluster needs OSDs for its
 *   pools (`ClusterHasNoOsdsError`). Every server must be ready (`ServerNotReadyError`).
 * - Hints: none. Pool names are fixed ({@link OPENSTACK_POOLS}), like the keys
 *   ({@link OPENSTACK_CLIENTS}).
 * - Configuration: group `mons` = the monitors (the playbook works on the first); global vars
 *   `fsid`, `cluster`, `carapace_cluster_name`. No facts needed.
 * - After success: the cluster model is unchanged; the run's files `ceph.conf` and
 *   `ceph.client.<name>.keyring` ({@link clientFiles}) become the cluster's files.
 */
export const cinderIntegrationPlugin: ChangingPlaybookPlugin = {
  descriptor,
  relaunchSubset: false,
  relaunchSubsetReason: 'the client files come from one run on the monitors as a whole',

  selectServers(cluster, requested, clusterServers) {
    const monitors = selectMonitorHosts(descriptor.id, cluster, requested, clusterServers);
    if (roleMemberIds(cluster, 'osds').size === 0) {
      throw new PlaybookInputError(
        'ClusterHasNoOsdsError',
        `Cluster ${cluster.name} (${cluster.id}) has no OSDs for the OpenStack pools: deploy it first.`,
      );
    }
    return monitors;
  },

  buildConfiguration(cluster, servers, hints) {
    normalizeResolvedHints(descriptor, hints);
    return { global_vars: cephBaseGlobalVars(cluster), inventory: monitorHostsInventory(cluster, servers) };
  },

  onSuccess(cluster, _servers, _configuration, artifacts = []) {
    const files = clientFiles(artifacts);
    return {
      configuration: copyClusterConfiguration(cluster),
      join: [],
      leave: [],
      deleteCluster: false,
      ...(files ? { files } : {}),
    };
  },
};
