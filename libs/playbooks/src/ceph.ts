/**
 * What the Ceph playbooks (`cluster_deploy`, `add_osd`, `remove_osd`, `purge_cluster`)
 * share: global variables, networks, OSD devices, monitors.
 *
 * @packageDocumentation
 */
import type { Disk } from '@carapace/models';
import { assertNoDuplicateServers, assertServersReady, buildInventory, describeServer, isServerReady, serverFacts, sortServers, uniqueServers } from './common.js';
import { describeUnusableDisks, usableOsdDisks } from './disks.js';
import { coveringNetwork, defaultIpv4Network, formatCidr, type Ipv4Network } from './network.js';
import { PlaybookInputError, type PluginCluster, type PluginServer } from './plugin.js';

/** The Ceph cluster name (global var `cluster`): Ceph's default, `ceph` (`/etc/ceph/ceph.conf`). */
export const CEPH_CLUSTER_NAME = 'ceph';

/** Where Ceph comes from (global var `ceph_repository`): the distribution's own packages (Ceph 16 on Debian 12). */
export const DEFAULT_CEPH_REPOSITORY = 'distribution';

/** The OSD backend (global var `osd_objectstore`). */
export const OSD_OBJECTSTORE = 'bluestore';

/**
 * The global variables of every Ceph playbook: `fsid` (the Ceph cluster id: the Carapace
 * cluster id), `cluster` ({@link CEPH_CLUSTER_NAME}) and `carapace_cluster_name`.
 */
export function cephBaseGlobalVars(cluster: PluginCluster): Record<string, unknown> {
  return { fsid: cluster.id, cluster: CEPH_CLUSTER_NAME, carapace_cluster_name: cluster.name };
}

/**
 * Ceph's `public_network` and `cluster_network` (the same by default; a configuration may be
 * edited to split them): the smallest IPv4 network covering the default-route networks of
 * the servers (see {@link defaultIpv4Network} and {@link coveringNetwork}).
 *
 * @param required servers that must have a default IPv4 address (`MissingFactsError` otherwise)
 * @param others servers that are counted when their facts allow it (e.g. the servers already in the cluster)
 */
export function cephNetworkVars(
  required: readonly PluginServer[],
  others: readonly PluginServer[] = [],
): { public_network: string; cluster_network: string } {
  const networks: Ipv4Network[] = [];
  const missing: PluginServer[] = [];
  const requiredIds = new Set(required.map((s) => s.id));
  for (const server of uniqueServers([...required, ...others])) {
    const facts = serverFacts(server);
    const network = facts ? defaultIpv4Network(facts) : null;
    if (network) networks.push(network);
    else if (requiredIds.has(server.id)) missing.push(server);
  }
  if (missing.length > 0 || networks.length === 0) {
    throw new PlaybookInputError(
      'MissingFactsError',
      `The facts of these servers name no default IPv4 address: ${sortServers(missing).map(describeServer).join(', ') || 'none given'}.`,
    );
  }
  const cidr = formatCidr(coveringNetwork(networks));
  return { public_network: cidr, cluster_network: cidr };
}

/** An OSD device as the Ansible role sees it (host var `carapace_osd_devices_info`). */
export interface OsdDeviceInfo {
  readonly path: string;
  readonly size_bytes: number;
  readonly rotational: boolean;
}

/**
 * The host variables of an OSD host: `carapace_osd_devices` (device paths) and
 * `carapace_osd_devices_info` (path, size, rotational, in the same order).
 */
export function osdHostvars(disks: readonly Disk[]): { carapace_osd_devices: string[]; carapace_osd_devices_info: OsdDeviceInfo[] } {
  return {
    carapace_osd_devices: disks.map((d) => d.path),
    carapace_osd_devices_info: disks.map((d) => ({ path: d.path, size_bytes: d.size_bytes, rotational: d.rotational })),
  };
}

/** The usable OSD disks of each server (by id), `[]` for a server without facts. */
export function osdDisksByServer(servers: readonly PluginServer[]): Map<string, Disk[]> {
  const result = new Map<string, Disk[]>();
  for (const server of servers) {
    const facts = serverFacts(server);
    result.set(server.id, facts ? usableOsdDisks(facts) : []);
  }
  return result;
}

/** Throws `NoUsableDisksError` naming `servers` and why each of their disks is unusable. */
export function noUsableDisksError(servers: readonly PluginServer[], prefix: string): PlaybookInputError {
  const details = sortServers(servers).map((s) => {
    const facts = serverFacts(s);
    return `${describeServer(s)} (${facts ? describeUnusableDisks(facts) : 'no facts'})`;
  });
  return new PlaybookInputError('NoUsableDisksError', `${prefix}: ${details.join(', ')}.`);
}

/**
 * The cluster's monitors that a playbook can use: the members of `mons` found among the
 * cluster's servers in a ready state, in the configuration's order. Throws
 * `ClusterHasNoMonitorsError` when the cluster has no monitor, or none of them is usable.
 */
export function usableMonitors(cluster: PluginCluster, clusterServers: readonly PluginServer[]): PluginServer[] {
  const members = cluster.configuration.mons ?? [];
  if (members.length === 0) {
    throw new PlaybookInputError('ClusterHasNoMonitorsError', `Cluster ${cluster.name} (${cluster.id}) has no monitors: deploy it first.`);
  }
  const usable: PluginServer[] = [];
  const problems: string[] = [];
  for (const member of members) {
    const server = clusterServers.find((s) => s.id === member.server_id);
    if (!server) problems.push(`${member.server_name} (${member.server_id}) is not a server of the cluster`);
    else if (!isServerReady(server)) problems.push(`${describeServer(server)} is ${server.state}`);
    else if (!usable.includes(server)) usable.push(server);
  }
  if (usable.length === 0) {
    throw new PlaybookInputError('ClusterHasNoMonitorsError', `No monitor of cluster ${cluster.name} (${cluster.id}) is usable: ${problems.join(', ')}.`);
  }
  return usable;
}

/**
 * The cluster's servers given to `buildConfiguration`, which `add_osd` and `remove_osd` need
 * (for the monitors' host variables); a programming error, not a bad request, when missing.
 */
export function requireClusterServers(playbookId: string, clusterServers: readonly PluginServer[] | undefined): readonly PluginServer[] {
  if (clusterServers === undefined) {
    throw new Error(`Playbook ${playbookId}: buildConfiguration needs the cluster's servers (its 4th argument, as given to selectServers)`);
  }
  return clusterServers;
}

/**
 * The servers of a playbook that works through the cluster's monitors (`cinder_integration`,
 * `add_pool`, `remove_pool`): every usable monitor when the request names none, else those it
 * names, which must be usable monitors (`ServerNotInRoleError`, `DuplicateServerError`) and
 * ready; in the configuration's order.
 */
export function selectMonitorHosts(playbookId: string, cluster: PluginCluster, requested: readonly PluginServer[], clusterServers: readonly PluginServer[]): PluginServer[] {
  const monitors = usableMonitors(cluster, clusterServers);
  if (requested.length === 0) return monitors;
  assertNoDuplicateServers(requested);
  const monitorIds = new Set(monitors.map((s) => s.id));
  const others = sortServers(requested.filter((s) => !monitorIds.has(s.id)));
  if (others.length > 0) {
    throw new PlaybookInputError(
      'ServerNotInRoleError',
      `Playbook ${playbookId} runs on the monitors of cluster ${cluster.name}; these servers are not usable monitors of it: ${others.map(describeServer).join(', ')}.`,
    );
  }
  assertServersReady(requested);
  const requestedIds = new Set(requested.map((s) => s.id));
  return monitors.filter((s) => requestedIds.has(s.id));
}

/** The inventory of such a playbook: group `mons`, the servers given (`ClusterHasNoMonitorsError` for none). */
export function monitorHostsInventory(cluster: PluginCluster, servers: readonly PluginServer[]): Record<string, unknown> {
  assertNoDuplicateServers(servers);
  if (servers.length === 0) throw new PlaybookInputError('ClusterHasNoMonitorsError', `Cluster ${cluster.name} (${cluster.id}) has no monitors: deploy it first.`);
  return buildInventory([['mons', servers]]);
}

/**
 * The usable monitors (`usableMonitors`) on other hosts than `hosts`: those a run works
 * through while it stops or removes the monitors of `hosts` (`maintenance_enter`,
 * `remove_mon`). Throws `ClusterHasNoMonitorsError` when none is left.
 */
export function usableMonitorsOutside(playbookId: string, cluster: PluginCluster, hosts: readonly PluginServer[], clusterServers: readonly PluginServer[]): PluginServer[] {
  const ids = new Set(hosts.map((s) => s.id));
  const mons = usableMonitors(cluster, clusterServers).filter((m) => !ids.has(m.id));
  if (mons.length === 0) {
    throw new PlaybookInputError(
      'ClusterHasNoMonitorsError',
      `Playbook ${playbookId} needs a usable monitor of cluster ${cluster.name} on another host than ${sortServers(hosts).map(describeServer).join(', ')}.`,
    );
  }
  return mons;
}
