/**
 * What the rolling playbooks (`upgrade_ceph`, `restart_services`) share: they run on a whole
 * cluster and locate its daemons through Ceph, and their gates have the same bounds.
 *
 * @packageDocumentation
 */
import { cephBaseGlobalVars, usableMonitors } from './ceph.js';
import { assertNoDuplicateServers, buildInventory, roleGroups, selectWholeCluster, sortServers } from './common.js';
import type { Descriptor } from './descriptors.js';
import { integerHint, normalizeResolvedHints } from './hints.js';
import type { PlaybookPlugin, PluginCluster, PluginServer, ResolvedHints } from './plugin.js';

/**
 * The inventory group of every server of the cluster: the plays go over all of them, since
 * where each daemon runs is read from Ceph itself (their metadata).
 */
export const ROLLING_ALL_GROUP = 'ceph';

/** The roles the inventory names besides: the pre-flight finds the monitors in `mons`. */
const ROLLING_ROLES = new Set(['mons', 'mgrs', 'osds']);

/** The inventory of a rolling playbook: groups `mons`, `mgrs`, `osds` and `ceph` (every server). */
function rollingInventory(cluster: PluginCluster, servers: readonly PluginServer[]): Record<string, unknown> {
  assertNoDuplicateServers(servers);
  usableMonitors(cluster, servers);
  const reserved = new Set(Object.keys(cluster.configuration).filter((role) => !ROLLING_ROLES.has(role)));
  return buildInventory([...roleGroups(cluster, servers, reserved), [ROLLING_ALL_GROUP, sortServers(servers)]]);
}

/** The gates' bounds as global vars (seconds): `ok_to_stop_timeout`, `daemon_timeout`, `clean_timeout`. */
function gateTimeoutVars(hints: ResolvedHints): Record<string, number> {
  return {
    ok_to_stop_timeout: integerHint(hints, 'ok_to_stop_timeout'),
    daemon_timeout: integerHint(hints, 'daemon_timeout'),
    clean_timeout: integerHint(hints, 'clean_timeout'),
  };
}

/**
 * A rolling playbook's plugin: the whole cluster, the rolling inventory, and as global vars
 * the cluster's (`fsid`, `cluster`, `carapace_cluster_name`), those `vars` makes of the
 * checked hints (throwing `PlaybookInputError` for a bad one), and the gates' bounds. A
 * successful run changes nothing in the cluster model: no `onSuccess`.
 */
export function rollingPlugin(descriptor: Descriptor, vars: (hints: ResolvedHints) => Record<string, unknown>): PlaybookPlugin {
  return {
    descriptor,
    relaunchSubset: false,
    relaunchSubsetReason: 'a rolling run goes host by host behind Ceph\'s gates: it runs again whole, and what is done already is left as it is',
    selectServers(cluster, requested, clusterServers) {
      usableMonitors(cluster, clusterServers);
      return selectWholeCluster(descriptor.id, cluster, requested, clusterServers);
    },
    buildConfiguration(cluster, servers, hints) {
      const resolved = normalizeResolvedHints(descriptor, hints);
      const inventory = rollingInventory(cluster, servers);
      return { global_vars: { ...cephBaseGlobalVars(cluster), ...vars(resolved), ...gateTimeoutVars(resolved) }, inventory };
    },
  };
}
