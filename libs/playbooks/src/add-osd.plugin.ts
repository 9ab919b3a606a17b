/**
 * `add_osd`: adds hosts with OSDs to a deployed cluster.
 *
 * @packageDocumentation
 */
import {
  cephBaseGlobalVars,
  cephNetworkVars,
  DEFAULT_CEPH_REPOSITORY,
  noUsableDisksError,
  osdDisksByServer,
  osdHostvars,
  OSD_OBJECTSTORE,
  requireClusterServers,
  usableMonitors,
} from './ceph.js';
import {
  assertFactsGathered,
  assertNoDuplicateServers,
  assertServerListGiven,
  assertServersReady,
  buildInventory,
  clusterMember,
  copyClusterConfiguration,
  describeServer,
  inventoryGroupServers,
  requireDescriptor,
  roleMemberIds,
  sortServers,
} from './common.js';
import { booleanHint, normalizeResolvedHints } from './hints.js';
import { PlaybookInputError, type ChangingPlaybookPlugin } from './plugin.js';

const descriptor = requireDescriptor('add_osd');

/**
 * The `add_osd` plugin.
 *
 * - Servers: an explicit non-empty list (`ServerListIsRequiredForPlaybookError`), none given
 *   twice (`DuplicateServerError`), none in another cluster (`ServerInClusterError`), none
 *   already an OSD host of this cluster (`ServerAlreadyInRoleError`; a monitor of this
 *   cluster that is not an OSD host may be given), all ready (`ServerNotReadyError`). The
 *   cluster needs a usable monitor (`ClusterHasNoMonitorsError`): a member of `mons` that is
 *   a server of the cluster in a ready state.
 * - Hints: `dmcrypt` (boolean, default false).
 * - Configuration (needs `clusterServers`): facts on every new server (`MissingFactsError`)
 *   and at least one usable disk on each (`NoUsableDisksError` naming those without).
 *   Groups: `osds` = the new servers (host vars `carapace_osd_devices`,
 *   `carapace_osd_devices_info`); `mons` = the usable monitors, in the cluster's order, with
 *   their host vars, so that Ansible can delegate to one. Global vars as `cluster_deploy`
 *   without `mon_count`; the networks cover the new servers and the cluster's servers (those
 *   whose facts name a default address).
 * - After success: the servers of the inventory's `osds` group are appended to `osds`; those
 *   not in the cluster yet join it.
 */
export const addOsdPlugin: ChangingPlaybookPlugin = {
  descriptor,
  relaunchSubset: true,
  relaunchWith: ['mons'],

  selectServers(cluster, requested, clusterServers) {
    assertServerListGiven(descriptor.id, requested);
    assertNoDuplicateServers(requested);
    usableMonitors(cluster, clusterServers);
    const elsewhere = sortServers(requested.filter((s) => s.cluster_id !== null && s.cluster_id !== cluster.id));
    if (elsewhere.length > 0) {
      throw new PlaybookInputError(
        'ServerInClusterError',
        `Servers in another cluster: ${elsewhere.map((s) => `${describeServer(s)} in ${s.cluster_id}`).join(', ')}.`,
      );
    }
    const osdIds = roleMemberIds(cluster, 'osds');
    const already = sortServers(requested.filter((s) => osdIds.has(s.id)));
    if (already.length > 0) {
      throw new PlaybookInputError(
        'ServerAlreadyInRoleError',
        `Servers already OSD hosts of cluster ${cluster.name}: ${already.map(describeServer).join(', ')}.`,
      );
    }
    assertServersReady(requested);
    return sortServers(requested);
  },

  buildConfiguration(cluster, servers, hints, clusterServers) {
    const resolved = normalizeResolvedHints(descriptor, hints);
    const dmcrypt = booleanHint(resolved, 'dmcrypt');
    const others = requireClusterServers(descriptor.id, clusterServers);
    assertServerListGiven(descriptor.id, servers);
    assertNoDuplicateServers(servers);
    const mons = usableMonitors(cluster, others);
    assertFactsGathered(servers);

    const osds = sortServers(servers);
    const disks = osdDisksByServer(osds);
    const diskless = osds.filter((s) => (disks.get(s.id) ?? []).length === 0);
    if (diskless.length > 0) throw noUsableDisksError(diskless, 'These servers have no disk usable for an OSD');
    const osdIds = new Set(osds.map((s) => s.id));

    return {
      global_vars: {
        ...cephBaseGlobalVars(cluster),
        dmcrypt,
        ...cephNetworkVars(osds, others),
        ceph_repository: DEFAULT_CEPH_REPOSITORY,
        osd_objectstore: OSD_OBJECTSTORE,
      },
      inventory: buildInventory(
        [
          ['mons', mons],
          ['osds', osds],
        ],
        (s) => (osdIds.has(s.id) ? osdHostvars(disks.get(s.id) ?? []) : {}),
      ),
    };
  },

  onSuccess(cluster, servers, configuration) {
    const added = inventoryGroupServers(configuration, 'osds', servers);
    const addedIds = new Set(added.map((s) => s.id));
    const result = copyClusterConfiguration(cluster);
    result.osds = [...(result.osds ?? []).filter((m) => !addedIds.has(m.server_id)), ...added.map(clusterMember)];
    return {
      configuration: result,
      join: added.filter((s) => s.cluster_id !== cluster.id).map((s) => s.id),
      leave: [],
      deleteCluster: false,
    };
  },
};
