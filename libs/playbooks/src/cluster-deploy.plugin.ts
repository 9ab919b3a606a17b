/**
 * `cluster_deploy`: deploys a new Ceph cluster (monitors, managers, OSDs) on the given servers.
 *
 * @packageDocumentation
 */
import { cephBaseGlobalVars, cephNetworkVars, DEFAULT_CEPH_REPOSITORY, noUsableDisksError, osdDisksByServer, osdHostvars, OSD_OBJECTSTORE } from './ceph.js';
import {
  assertFactsGathered,
  assertNoDuplicateServers,
  assertServerListGiven,
  assertServersReady,
  buildInventory,
  clusterHasMembers,
  clusterMember,
  describeServer,
  inventoryGroupServers,
  inventoryServers,
  requireDescriptor,
  sortServers,
} from './common.js';
import { booleanHint, integerHint, normalizeResolvedHints } from './hints.js';
import { PlaybookInputError, type ChangingPlaybookPlugin, type PluginServer } from './plugin.js';

const descriptor = requireDescriptor('cluster_deploy');

/**
 * The monitors of a new cluster: the first `min(monCount, servers.length)` servers in the
 * stable order (by name, then id: see `compareServers`), so the choice does not depend on
 * the order of the request.
 */
export function chooseMonitors(servers: readonly PluginServer[], monCount: number): PluginServer[] {
  return sortServers(servers).slice(0, Math.max(0, Math.min(monCount, servers.length)));
}

/**
 * The `cluster_deploy` plugin.
 *
 * - Servers: an explicit non-empty list (`ServerListIsRequiredForPlaybookError`), none
 *   given twice (`DuplicateServerError`), none in any cluster (`ServerInClusterError`), all
 *   ready (`ServerNotReadyError`); the cluster must have neither members nor servers yet
 *   (`ClusterAlreadyDeployedError`).
 * - Hints: `dmcrypt` (boolean, default false), `mon_count` (integer 1..9, default 3).
 * - Configuration: facts needed on every server (`MissingFactsError`). Groups `mons` and
 *   `mgrs`: the monitors ({@link chooseMonitors}); `osds`: every server with usable disks
 *   (see `diskUnusableReason`; monitors included: small clusters collocate), each with host
 *   vars `carapace_osd_devices` and `carapace_osd_devices_info`. `NoUsableDisksError` when no
 *   server has a usable disk, or when a server would have no role (not a monitor and no
 *   usable disk). Global vars: `fsid` (cluster id), `cluster` (`ceph`),
 *   `carapace_cluster_name`, `dmcrypt`, `mon_count` (the number of monitors chosen, which is
 *   less than the hint when there are fewer servers), `public_network` = `cluster_network`
 *   (the covering network of the servers' default routes), `ceph_repository`
 *   (`distribution`), `osd_objectstore` (`bluestore`).
 * - After success: configuration `{mons, osds}` from the inventory's `mons` and `osds`
 *   groups; every server of the inventory joins the cluster.
 */
export const clusterDeployPlugin: ChangingPlaybookPlugin = {
  descriptor,
  relaunchSubset: false,
  relaunchSubsetReason: 'a deployment configures its monitors, their quorum and the first keys on all its hosts together',

  selectServers(cluster, requested, clusterServers) {
    assertServerListGiven(descriptor.id, requested);
    assertNoDuplicateServers(requested);
    if (clusterHasMembers(cluster) || clusterServers.length > 0) {
      throw new PlaybookInputError('ClusterAlreadyDeployedError', `Cluster ${cluster.name} (${cluster.id}) is already deployed.`);
    }
    const inCluster = sortServers(requested.filter((s) => s.cluster_id !== null));
    if (inCluster.length > 0) {
      throw new PlaybookInputError(
        'ServerInClusterError',
        `Servers already in a cluster: ${inCluster.map((s) => `${describeServer(s)} in ${s.cluster_id}`).join(', ')}.`,
      );
    }
    assertServersReady(requested);
    return sortServers(requested);
  },

  buildConfiguration(cluster, servers, hints) {
    const resolved = normalizeResolvedHints(descriptor, hints);
    const dmcrypt = booleanHint(resolved, 'dmcrypt');
    const monCount = integerHint(resolved, 'mon_count');
    assertServerListGiven(descriptor.id, servers);
    assertNoDuplicateServers(servers);
    assertFactsGathered(servers);

    const sorted = sortServers(servers);
    const mons = chooseMonitors(sorted, monCount);
    const disks = osdDisksByServer(sorted);
    const osds = sorted.filter((s) => (disks.get(s.id) ?? []).length > 0);
    if (osds.length === 0) throw noUsableDisksError(sorted, 'No server has a disk usable for an OSD');
    const osdIds = new Set(osds.map((s) => s.id));
    const roleless = sorted.filter((s) => !mons.includes(s) && !osdIds.has(s.id));
    if (roleless.length > 0) {
      throw noUsableDisksError(roleless, 'These servers would have no role (not a monitor, no disk usable for an OSD)');
    }

    return {
      global_vars: {
        ...cephBaseGlobalVars(cluster),
        dmcrypt,
        mon_count: mons.length,
        ...cephNetworkVars(sorted),
        ceph_repository: DEFAULT_CEPH_REPOSITORY,
        osd_objectstore: OSD_OBJECTSTORE,
      },
      inventory: buildInventory(
        [
          ['mons', mons],
          ['mgrs', mons],
          ['osds', osds],
        ],
        (s) => (osdIds.has(s.id) ? osdHostvars(disks.get(s.id) ?? []) : {}),
      ),
    };
  },

  onSuccess(_cluster, servers, configuration) {
    return {
      configuration: {
        mons: inventoryGroupServers(configuration, 'mons', servers).map(clusterMember),
        osds: inventoryGroupServers(configuration, 'osds', servers).map(clusterMember),
      },
      join: inventoryServers(configuration, servers).map((s) => s.id),
      leave: [],
      deleteCluster: false,
    };
  },
};
