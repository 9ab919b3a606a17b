/**
 * `maintenance_enter` and `maintenance_exit`: hosts taken down for work without data
 * movement, once Ceph says each of their daemons may stop, and brought back.
 *
 * @packageDocumentation
 */
import { cephBaseGlobalVars, requireClusterServers, usableMonitorsOutside } from './ceph.js';
import {
  assertNoDuplicateServers,
  assertServerListGiven,
  assertServersReady,
  buildInventory,
  copyClusterConfiguration,
  describeServer,
  requireDescriptor,
  sortServers,
} from './common.js';
import type { Descriptor } from './descriptors.js';
import { integerHint, normalizeResolvedHints } from './hints.js';
import { PlaybookInputError, type ChangingPlaybookPlugin, type PluginCluster, type PluginServer } from './plugin.js';

/** The state of a server in maintenance: no playbook but `maintenance_exit` runs on it. */
export const MAINTENANCE_STATE = 'maintenance_no_reconfig';

/** The inventory group of the hosts entering or leaving maintenance. */
export const MAINTENANCE_GROUP = 'maintenance';

function assertClusterServers(playbookId: string, cluster: PluginCluster, servers: readonly PluginServer[]): void {
  const foreign = sortServers(servers.filter((s) => s.cluster_id !== cluster.id));
  if (foreign.length > 0) {
    throw new PlaybookInputError(
      'ServerNotInClusterError',
      `Playbook ${playbookId} runs on servers of cluster ${cluster.name} only: ${foreign.map(describeServer).join(', ')} ${foreign.length === 1 ? 'is' : 'are'} not.`,
    );
  }
}

function maintenancePlugin(
  descriptor: Descriptor,
  checkStates: (servers: readonly PluginServer[]) => void,
  nextState: string,
): ChangingPlaybookPlugin {
  return {
    descriptor,
    // Both stop every host at the first failure: Ceph's ok-to-stop is asked for the hosts
    // together on the way in, and their daemons come back behind one quorum check on the way out.
    relaunchSubset: false,
    relaunchSubsetReason: `its plays stop every host at the first failure (Ceph's gates are asked for the hosts together), so a host without an error of its own may not have finished; a relaunch runs it whole, and the hosts already ${descriptor.id === 'maintenance_enter' ? 'in' : 'out of'} maintenance are skipped`,
    selectServers(cluster, requested, clusterServers) {
      assertServerListGiven(descriptor.id, requested);
      assertNoDuplicateServers(requested);
      assertClusterServers(descriptor.id, cluster, requested);
      checkStates(requested);
      usableMonitorsOutside(descriptor.id, cluster, requested, clusterServers);
      return sortServers(requested);
    },
    buildConfiguration(cluster, servers, hints, clusterServers) {
      const resolved = normalizeResolvedHints(descriptor, hints);
      const others = requireClusterServers(descriptor.id, clusterServers);
      assertServerListGiven(descriptor.id, servers);
      assertNoDuplicateServers(servers);
      const mons = usableMonitorsOutside(descriptor.id, cluster, servers, others);
      return {
        global_vars: {
          ...cephBaseGlobalVars(cluster),
          ok_to_stop_timeout: integerHint(resolved, 'ok_to_stop_timeout'),
          daemon_timeout: integerHint(resolved, 'daemon_timeout'),
          clean_timeout: integerHint(resolved, 'clean_timeout'),
        },
        inventory: buildInventory([
          ['mons', mons],
          [MAINTENANCE_GROUP, sortServers(servers)],
        ]),
      };
    },
    onSuccess(cluster, servers) {
      return {
        configuration: copyClusterConfiguration(cluster),
        join: [],
        leave: [],
        deleteCluster: false,
        serverStates: Object.fromEntries(servers.map((s) => [s.id, nextState])),
      };
    },
  };
}

/**
 * The `maintenance_enter` plugin.
 *
 * - Servers: an explicit list (`ServerListIsRequiredForPlaybookError`) of the cluster's
 *   servers (`ServerNotInClusterError`), ready (`ServerNotReadyError`: a server already in
 *   maintenance is not ready); the cluster needs a usable monitor on another host
 *   (`ClusterHasNoMonitorsError`), to work through while these hosts are down.
 * - Hints: `ok_to_stop_timeout`, `daemon_timeout`, `clean_timeout` (seconds).
 * - Configuration: groups `mons` (the usable monitors on other hosts) and `maintenance` (the
 *   hosts); global vars `fsid`, `cluster`, `carapace_cluster_name`, the timeouts.
 * - After success: the servers are in the state `maintenance_no_reconfig`, which every other
 *   playbook refuses (`ServerNotReadyError`) until `maintenance_exit`.
 */
export const maintenanceEnterPlugin: ChangingPlaybookPlugin = maintenancePlugin(requireDescriptor('maintenance_enter'), assertServersReady, MAINTENANCE_STATE);

/**
 * The `maintenance_exit` plugin: as `maintenance_enter`, but every server must be in
 * maintenance (`ServerNotInMaintenanceError` naming those that are not); after success they
 * are `operational`.
 */
export const maintenanceExitPlugin: ChangingPlaybookPlugin = maintenancePlugin(
  requireDescriptor('maintenance_exit'),
  (servers) => {
    const not = sortServers(servers.filter((s) => s.state !== MAINTENANCE_STATE));
    if (not.length > 0) {
      throw new PlaybookInputError(
        'ServerNotInMaintenanceError',
        `Servers not in maintenance (state ${MAINTENANCE_STATE}): ${not.map((s) => `${describeServer(s)} is ${s.state}`).join(', ')}.`,
      );
    }
  },
  'operational',
);
