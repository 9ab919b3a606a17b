/**
 * `purge_cluster`: removes Ceph from every server of a cluster and deletes the cluster.
 *
 * @packageDocumentation
 */
import { cephBaseGlobalVars } from './ceph.js';
import {
  assertNoDuplicateServers,
  assertServersReady,
  buildInventory,
  describeServer,
  requireDescriptor,
  sortServers,
  type InventoryGroup,
} from './common.js';
import { normalizeResolvedHints } from './hints.js';
import { PlaybookInputError, type ChangingPlaybookPlugin } from './plugin.js';

const descriptor = requireDescriptor('purge_cluster');

/** The inventory group of `purge_cluster` that holds every server of the cluster. */
export const PURGE_ALL_GROUP = 'ceph';

const RESERVED_GROUPS = new Set([PURGE_ALL_GROUP, '_meta', 'all', 'ungrouped']);

/**
 * The `purge_cluster` plugin.
 *
 * - Servers: always all the cluster's servers. The request may name no server, or exactly
 *   the cluster's servers (in any order); any other list is refused with
 *   `ServerListNotAllowedError`, since purging only part of a cluster is not what the
 *   playbook does (`DuplicateServerError` for a server given twice). Every server must be
 *   ready (`ServerNotReadyError`): a server Ansible cannot reach would keep Ceph's data and
 *   daemons. A cluster without servers may be purged: the run has nothing to do and the
 *   cluster is deleted.
 * - Configuration: one group per role of the cluster configuration (`mons`, `osds`, ...)
 *   with the members that are among the servers, and group `ceph` with every server; global
 *   vars `fsid`, `cluster`, `carapace_cluster_name`.
 * - After success: configuration `{}`, every server leaves, the cluster is deleted.
 */
export const purgeClusterPlugin: ChangingPlaybookPlugin = {
  descriptor,

  selectServers(cluster, requested, clusterServers) {
    assertNoDuplicateServers(requested);
    if (requested.length > 0) {
      const clusterIds = new Set(clusterServers.map((s) => s.id));
      const requestedIds = new Set(requested.map((s) => s.id));
      const foreign = sortServers(requested.filter((s) => !clusterIds.has(s.id)));
      const left = sortServers(clusterServers.filter((s) => !requestedIds.has(s.id)));
      if (foreign.length > 0 || left.length > 0) {
        const problems = [
          ...(foreign.length > 0 ? [`not servers of the cluster: ${foreign.map(describeServer).join(', ')}`] : []),
          ...(left.length > 0 ? [`missing: ${left.map(describeServer).join(', ')}`] : []),
        ];
        throw new PlaybookInputError(
          'ServerListNotAllowedError',
          `Playbook purge_cluster runs on all the servers of cluster ${cluster.name}: give no server list, or all of them (${problems.join('; ')}).`,
        );
      }
    }
    assertNoDuplicateServers(clusterServers);
    assertServersReady(clusterServers);
    return sortServers(clusterServers);
  },

  buildConfiguration(cluster, servers, hints) {
    normalizeResolvedHints(descriptor, hints);
    assertNoDuplicateServers(servers);
    const sorted = sortServers(servers);
    const roles = Object.keys(cluster.configuration)
      .filter((role) => !RESERVED_GROUPS.has(role))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const groups: InventoryGroup[] = roles.map((role) => {
      const ids = (cluster.configuration[role] ?? []).map((m) => m.server_id);
      return [role, ids.flatMap((id) => sorted.filter((s) => s.id === id))];
    });
    groups.push([PURGE_ALL_GROUP, sorted]);
    return { global_vars: cephBaseGlobalVars(cluster), inventory: buildInventory(groups) };
  },

  onSuccess(_cluster, servers) {
    return { configuration: {}, join: [], leave: sortServers(servers).map((s) => s.id), deleteCluster: true };
  },
};
