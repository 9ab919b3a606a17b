/**
 * `add_mon`, `remove_mon` and `replace_mon`: the monitors of a running cluster changed one at
 * a time, never losing the quorum, and every host's `ceph.conf` naming them as they are.
 *
 * @packageDocumentation
 */
import type { ClusterMember } from '@carapace/models';
import { cephBaseGlobalVars, requireClusterServers, usableMonitorsOutside } from './ceph.js';
import { CLIENT_CONF_FILE } from './cinder-integration.plugin.js';
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
  isServerReady,
  requireDescriptor,
  roleMemberIds,
  serverFacts,
  sortServers,
  uniqueServers,
} from './common.js';
import type { Descriptor } from './descriptors.js';
import { integerHint, normalizeResolvedHints } from './hints.js';
import { PlaybookInputError, type ChangingPlaybookPlugin, type ClusterEffect, type PlaybookConfiguration, type PluginCluster, type PluginServer, type RunArtifact } from './plugin.js';

/** The inventory group of the hosts whose new monitors a run adds. */
export const NEW_MONS_GROUP = 'new_mons';
/** The inventory group of the hosts whose monitors a run removes. */
export const OLD_MONS_GROUP = 'old_mons';
/** The inventory group of every host of the cluster, whose `ceph.conf` names the monitors. */
export const CEPH_HOSTS_GROUP = 'ceph_hosts';

/** The monitor name of a server: its short host name, as the deploy names monitors (empty without facts). */
export function monitorName(server: PluginServer): string {
  return (serverFacts(server)?.hostname ?? '').split('.')[0] ?? '';
}

function assertNotElsewhere(cluster: PluginCluster, servers: readonly PluginServer[]): void {
  const elsewhere = sortServers(servers.filter((s) => s.cluster_id !== null && s.cluster_id !== cluster.id));
  if (elsewhere.length > 0) {
    throw new PlaybookInputError('ServerInClusterError', `Servers in another cluster: ${elsewhere.map((s) => `${describeServer(s)} in ${s.cluster_id}`).join(', ')}.`);
  }
}

/** New monitor hosts: not in another cluster, not monitors of this one, with facts (their host name) and ready. */
function assertNewMonitorHosts(cluster: PluginCluster, servers: readonly PluginServer[]): void {
  assertNotElsewhere(cluster, servers);
  const monIds = roleMemberIds(cluster, 'mons');
  const already = sortServers(servers.filter((s) => monIds.has(s.id)));
  if (already.length > 0) {
    throw new PlaybookInputError('ServerAlreadyInRoleError', `Servers already monitors of cluster ${cluster.name}: ${already.map(describeServer).join(', ')}.`);
  }
  assertFactsGathered(servers);
  assertServersReady(servers);
}

/** Hosts of monitors to remove: monitors of this cluster, and not all of them. */
function assertOldMonitorHosts(cluster: PluginCluster, servers: readonly PluginServer[]): void {
  const monIds = roleMemberIds(cluster, 'mons');
  const others = sortServers(servers.filter((s) => !monIds.has(s.id)));
  if (others.length > 0) {
    throw new PlaybookInputError('ServerNotInRoleError', `Servers that are not monitors of cluster ${cluster.name}: ${others.map(describeServer).join(', ')}.`);
  }
  if (monIds.size <= servers.length) {
    throw new PlaybookInputError(
      'LastMonitorError',
      `Cluster ${cluster.name} would keep no monitor: ${sortServers(servers).map(describeServer).join(', ')} ${servers.length === 1 ? 'is its last monitor' : 'are all its monitors'}; a cluster cannot live without one.`,
    );
  }
  assertFactsGathered(servers);
}

/**
 * Every server of the cluster, whose `ceph.conf` the run rewrites: each must be ready (a host
 * in maintenance would keep naming the old monitors: it leaves maintenance first).
 */
function assertClusterHostsReady(playbookId: string, clusterServers: readonly PluginServer[]): void {
  const notReady = sortServers(clusterServers.filter((s) => !isServerReady(s)));
  if (notReady.length > 0) {
    throw new PlaybookInputError(
      'ServerNotReadyError',
      `Playbook ${playbookId} rewrites ceph.conf on every host of the cluster; not ready: ${notReady.map((s) => `${describeServer(s)} is ${s.state}`).join(', ')}.`,
    );
  }
}

/** Which of the servers of a run are new monitor hosts and which are old, by the cluster's `mons`. */
function split(cluster: PluginCluster, servers: readonly PluginServer[]): { added: PluginServer[]; removed: PluginServer[] } {
  const monIds = roleMemberIds(cluster, 'mons');
  return { added: sortServers(servers.filter((s) => !monIds.has(s.id))), removed: sortServers(servers.filter((s) => monIds.has(s.id))) };
}

interface MonitorPlaybook {
  readonly descriptor: Descriptor;
  /** Refuses a request whose servers do not fit (given as split by the cluster's `mons`). */
  readonly check: (cluster: PluginCluster, added: readonly PluginServer[], removed: readonly PluginServer[], requested: readonly PluginServer[]) => void;
}

/** The client `ceph.conf` a run handed back, to replace the cluster's (when it has client files). */
function clientConf(artifacts: readonly RunArtifact[]): RunArtifact[] {
  return artifacts.filter((a) => a.name === CLIENT_CONF_FILE && a.content.includes('mon_host')).map((a) => ({ name: a.name, content: a.content }));
}

function monitorPlugin({ descriptor, check }: MonitorPlaybook): ChangingPlaybookPlugin {
  const id = descriptor.id;
  return {
    descriptor,
    relaunchSubset: false,
    relaunchSubsetReason: 'the monitors must be configured together (the monitor map and ceph.conf of every Ceph host)',
    selectServers(cluster, requested, clusterServers) {
      assertServerListGiven(id, requested);
      assertNoDuplicateServers(requested);
      const { added, removed } = split(cluster, requested);
      check(cluster, added, removed, requested);
      usableMonitorsOutside(id, cluster, removed, clusterServers);
      assertClusterHostsReady(id, clusterServers);
      return sortServers(requested);
    },
    buildConfiguration(cluster, servers, hints, clusterServers) {
      const resolved = normalizeResolvedHints(descriptor, hints);
      const all = requireClusterServers(id, clusterServers);
      assertServerListGiven(id, servers);
      assertNoDuplicateServers(servers);
      const { added, removed } = split(cluster, servers);
      check(cluster, added, removed, servers);
      const mons = usableMonitorsOutside(id, cluster, removed, all);
      assertClusterHostsReady(id, all);
      const timeouts: Record<string, number> = {};
      for (const hint of descriptor.hints) timeouts[hint.id] = integerHint(resolved, hint.id);
      return {
        global_vars: { ...cephBaseGlobalVars(cluster), ...timeouts },
        inventory: buildInventory(
          [
            ['mons', mons],
            [NEW_MONS_GROUP, added],
            [OLD_MONS_GROUP, removed],
            [CEPH_HOSTS_GROUP, sortServers(uniqueServers([...all, ...added]))],
          ],
          (server) => ({ carapace_mon_name: monitorName(server) }),
        ),
      };
    },
    onSuccess(cluster, servers, configuration, artifacts = []) {
      return monitorsChanged(cluster, servers, configuration, artifacts);
    },
  };
}

/**
 * What a monitor run changed: the hosts of `new_mons` appended to `mons` (and in the cluster),
 * those of `old_mons` taken out of it (and out of the cluster when they keep no role), the
 * client `ceph.conf` handed back.
 */
function monitorsChanged(cluster: PluginCluster, servers: readonly PluginServer[], configuration: PlaybookConfiguration, artifacts: readonly RunArtifact[]): ClusterEffect {
  const added = inventoryGroupServers(configuration, NEW_MONS_GROUP, servers);
  const removedIds = new Set(inventoryGroupServers(configuration, OLD_MONS_GROUP, servers).map((s) => s.id));
  const result: Record<string, ClusterMember[]> = {};
  for (const [role, members] of Object.entries(copyClusterConfiguration(cluster))) {
    const kept = role === 'mons' ? members.filter((m) => !removedIds.has(m.server_id)) : members;
    if (kept.length > 0) result[role] = kept;
  }
  const mons = result.mons ?? [];
  for (const server of added) if (!mons.some((m) => m.server_id === server.id)) mons.push(clusterMember(server));
  if (mons.length > 0) result.mons = mons;
  const members = new Set(Object.values(result).flatMap((list) => list.map((m) => m.server_id)));
  const files = clientConf(artifacts);
  return {
    configuration: result,
    join: added.filter((s) => s.cluster_id !== cluster.id).map((s) => s.id),
    leave: [...removedIds].filter((serverId) => !members.has(serverId)),
    deleteCluster: false,
    ...(files.length > 0 ? { refreshFiles: files } : {}),
  };
}

/**
 * The `add_mon` plugin.
 *
 * - Servers: an explicit list (`ServerListIsRequiredForPlaybookError`, `DuplicateServerError`)
 *   of hosts that are not monitors of the cluster (`ServerAlreadyInRoleError`), in no other
 *   cluster (`ServerInClusterError`), with facts (`MissingFactsError`: the host name is the
 *   monitor's name) and ready. The cluster needs a usable monitor (`ClusterHasNoMonitorsError`)
 *   and every server of it ready (`ServerNotReadyError`: the run rewrites their `ceph.conf`).
 * - Hints: `join_timeout` (seconds).
 * - Configuration: groups `mons` (the usable monitors, to work through), `new_mons` (the
 *   hosts), `ceph_hosts` (every server of the cluster and the new hosts); host var
 *   `carapace_mon_name`; global vars `fsid`, `cluster`, `carapace_cluster_name`, the timeout.
 * - After success: the hosts are appended to `mons` and join the cluster; a client `ceph.conf`
 *   handed back replaces the cluster's, when it has client files (`cinder_integration`).
 */
export const addMonPlugin: ChangingPlaybookPlugin = monitorPlugin({
  descriptor: requireDescriptor('add_mon'),
  check: (cluster, added, removed) => {
    if (removed.length > 0) {
      throw new PlaybookInputError('ServerAlreadyInRoleError', `Servers already monitors of cluster ${cluster.name}: ${removed.map(describeServer).join(', ')}.`);
    }
    assertNewMonitorHosts(cluster, added);
  },
});

/**
 * The `remove_mon` plugin.
 *
 * - Servers: an explicit list of monitor hosts of the cluster (`ServerNotInRoleError`), not
 *   every monitor (`LastMonitorError`), with facts; the cluster needs a usable monitor that
 *   stays (`ClusterHasNoMonitorsError`) and every server ready (`ServerNotReadyError`). Ceph's
 *   own refusals (a monitor out of quorum, `mon ok-to-rm`) come at run time.
 * - Hints: `quorum_timeout` (seconds).
 * - Configuration: groups `mons` (the usable monitors that stay), `old_mons`, `ceph_hosts`.
 * - After success: the hosts leave `mons`, and the cluster when they have no other role.
 */
export const removeMonPlugin: ChangingPlaybookPlugin = monitorPlugin({
  descriptor: requireDescriptor('remove_mon'),
  check: (cluster, added, removed) => {
    if (added.length > 0) {
      throw new PlaybookInputError('ServerNotInRoleError', `Servers that are not monitors of cluster ${cluster.name}: ${added.map(describeServer).join(', ')}.`);
    }
    assertOldMonitorHosts(cluster, removed);
  },
});

/**
 * The `replace_mon` plugin: two servers, a monitor host of the cluster (removed) and a host
 * that is not a monitor (added); otherwise `ServerListNotAllowedError`. The checks of both
 * `add_mon` and `remove_mon` apply; the run adds before it removes.
 */
export const replaceMonPlugin: ChangingPlaybookPlugin = monitorPlugin({
  descriptor: requireDescriptor('replace_mon'),
  check: (cluster, added, removed, requested) => {
    if (requested.length !== 2 || added.length !== 1 || removed.length !== 1) {
      throw new PlaybookInputError(
        'ServerListNotAllowedError',
        `Playbook replace_mon takes two servers, a monitor of cluster ${cluster.name} and the host that replaces it; got ${removed.length} monitor(s) and ${added.length} other host(s).`,
      );
    }
    assertNewMonitorHosts(cluster, added);
    assertFactsGathered(removed);
  },
});
