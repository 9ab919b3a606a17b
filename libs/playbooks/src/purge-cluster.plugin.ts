/**
 * `purge_cluster`: removes Ceph from every server of a cluster and deletes the cluster.
 *
 * @packageDocumentation
 */
import { cephBaseGlobalVars } from './ceph.js';
import { assertNoDuplicateServers, buildInventory, requireDescriptor, roleGroups, selectWholeCluster, sortServers, type InventoryGroup } from './common.js';
import { normalizeResolvedHints } from './hints.js';
import type { ChangingPlaybookPlugin } from './plugin.js';

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
  relaunchSubset: false,
  relaunchSubsetReason: 'a purge removes the whole cluster: it runs on all its servers',

  selectServers(cluster, requested, clusterServers) {
    return selectWholeCluster(descriptor.id, cluster, requested, clusterServers);
  },

  buildConfiguration(cluster, servers, hints) {
    normalizeResolvedHints(descriptor, hints);
    assertNoDuplicateServers(servers);
    const sorted = sortServers(servers);
    const groups: InventoryGroup[] = roleGroups(cluster, sorted, RESERVED_GROUPS);
    groups.push([PURGE_ALL_GROUP, sorted]);
    return { global_vars: cephBaseGlobalVars(cluster), inventory: buildInventory(groups) };
  },

  onSuccess(_cluster, servers) {
    return { configuration: {}, join: [], leave: sortServers(servers).map((s) => s.id), deleteCluster: true };
  },
};
