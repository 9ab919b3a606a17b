/**
 * `remove_osd`: removes hosts with OSDs from a cluster.
 *
 * @packageDocumentation
 */
import type { ClusterMember } from '@carapace/models';
import { cephBaseGlobalVars, requireClusterServers, usableMonitors } from './ceph.js';
import {
  assertNoDuplicateServers,
  assertOsdHosts,
  assertServerListGiven,
  assertServersReady,
  buildInventory,
  copyClusterConfiguration,
  inventoryGroupServers,
  requireDescriptor,
  sortServers,
} from './common.js';
import { integerHint, normalizeResolvedHints } from './hints.js';
import type { ChangingPlaybookPlugin } from './plugin.js';

const descriptor = requireDescriptor('remove_osd');

/**
 * The `remove_osd` plugin.
 *
 * - Servers: an explicit non-empty list (`ServerListIsRequiredForPlaybookError`), none given
 *   twice (`DuplicateServerError`), each an OSD host of this cluster, i.e. a member of its
 *   `osds` (`ServerNotInRoleError`), all ready (`ServerNotReadyError`); the cluster needs a
 *   usable monitor (`ClusterHasNoMonitorsError`) to take the OSDs out. Removing every OSD
 *   host is allowed: the cluster keeps its monitors and holds no data any more (Ceph itself
 *   refuses to destroy OSDs whose data would be lost, so the run fails rather than lose data
 *   when the pools still need them).
 * - Hints: `safe_to_destroy_timeout` (integer seconds, 0 to 86,400, default 600).
 * - Configuration (needs `clusterServers`): groups `osds` = the servers to remove, `mons` =
 *   the usable monitors (with their host vars, so that Ansible can delegate to one); global
 *   vars `fsid`, `cluster`, `carapace_cluster_name`, and `safe_to_destroy_timeout` (the hint,
 *   seconds, default 600: how long the playbook waits after marking the OSDs out for
 *   `ceph osd safe-to-destroy` to agree before it marks them in again and fails). No facts
 *   needed: the playbook finds the OSDs on the hosts and in the cluster's CRUSH map.
 * - After success: the servers of the inventory's `osds` group leave `osds` (a role left
 *   with no member is dropped); those of them that are in no role any more leave the
 *   cluster; a monitor that was also an OSD host stays.
 */
export const removeOsdPlugin: ChangingPlaybookPlugin = {
  descriptor,
  relaunchSubset: false,
  relaunchSubsetReason:
    "its plays stop every host at the first failure (Ceph's safe-to-destroy gate is asked for all the OSDs together), so a host without an error of its own may not have finished; a relaunch runs it whole, and the OSDs already removed are skipped",

  selectServers(cluster, requested, clusterServers) {
    assertServerListGiven(descriptor.id, requested);
    assertNoDuplicateServers(requested);
    assertOsdHosts(cluster, requested);
    usableMonitors(cluster, clusterServers);
    assertServersReady(requested);
    return sortServers(requested);
  },

  buildConfiguration(cluster, servers, hints, clusterServers) {
    const resolved = normalizeResolvedHints(descriptor, hints);
    const safeToDestroyTimeout = integerHint(resolved, 'safe_to_destroy_timeout');
    const others = requireClusterServers(descriptor.id, clusterServers);
    assertServerListGiven(descriptor.id, servers);
    assertNoDuplicateServers(servers);
    assertOsdHosts(cluster, servers);
    const mons = usableMonitors(cluster, others);
    return {
      global_vars: { ...cephBaseGlobalVars(cluster), safe_to_destroy_timeout: safeToDestroyTimeout },
      inventory: buildInventory([
        ['mons', mons],
        ['osds', sortServers(servers)],
      ]),
    };
  },

  onSuccess(cluster, servers, configuration) {
    const removedIds = new Set(inventoryGroupServers(configuration, 'osds', servers).map((s) => s.id));
    const result: Record<string, ClusterMember[]> = {};
    for (const [role, members] of Object.entries(copyClusterConfiguration(cluster))) {
      const kept = role === 'osds' ? members.filter((m) => !removedIds.has(m.server_id)) : members;
      if (kept.length > 0) result[role] = kept;
    }
    const stillMembers = new Set(Object.values(result).flatMap((members) => members.map((m) => m.server_id)));
    return {
      configuration: result,
      join: [],
      leave: [...removedIds].filter((id) => !stillMembers.has(id)),
      deleteCluster: false,
    };
  },
};
