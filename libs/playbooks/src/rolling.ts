/**
 * What the rolling playbooks (`upgrade_ceph`, `restart_services`) share: they run on a whole
 * cluster and locate its daemons through Ceph, and their gates have the same bounds.
 *
 * @packageDocumentation
 */
import { usableMonitors } from './ceph.js';
import { assertNoDuplicateServers, buildInventory, roleGroups, selectWholeCluster, sortServers } from './common.js';
import { integerHint } from './hints.js';
import type { PluginCluster, PluginServer, ResolvedHints } from './plugin.js';

/**
 * The inventory group of every server of the cluster: the plays go over all of them, since
 * where each daemon runs is read from Ceph itself (their metadata).
 */
export const ROLLING_ALL_GROUP = 'ceph';

/** The roles the inventory names besides: the pre-flight finds the monitors in `mons`. */
const ROLLING_ROLES = new Set(['mons', 'mgrs', 'osds']);

/** The servers of a rolling playbook: the whole cluster, which needs a usable monitor. */
export function selectRollingServers(
  playbookId: string,
  cluster: PluginCluster,
  requested: readonly PluginServer[],
  clusterServers: readonly PluginServer[],
): PluginServer[] {
  usableMonitors(cluster, clusterServers);
  return selectWholeCluster(playbookId, cluster, requested, clusterServers);
}

/** The inventory of a rolling playbook: groups `mons`, `mgrs`, `osds` and `ceph` (every server). */
export function rollingInventory(cluster: PluginCluster, servers: readonly PluginServer[]): Record<string, unknown> {
  assertNoDuplicateServers(servers);
  usableMonitors(cluster, servers);
  const reserved = new Set(Object.keys(cluster.configuration).filter((role) => !ROLLING_ROLES.has(role)));
  return buildInventory([...roleGroups(cluster, servers, reserved), [ROLLING_ALL_GROUP, sortServers(servers)]]);
}

/** The gates' bounds as global vars (seconds): `ok_to_stop_timeout`, `daemon_timeout`, `clean_timeout`. */
export function gateTimeoutVars(hints: ResolvedHints): Record<string, number> {
  return {
    ok_to_stop_timeout: integerHint(hints, 'ok_to_stop_timeout'),
    daemon_timeout: integerHint(hints, 'daemon_timeout'),
    clean_timeout: integerHint(hints, 'clean_timeout'),
  };
}
