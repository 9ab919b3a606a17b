/**
 * Rules and helpers shared by the playbook plugins: server readiness, the stable server
 * order, the Ansible inventory layout, cluster members, and reading an inventory back.
 *
 * @packageDocumentation
 */
import type { ClusterMember, ServerFacts } from '@carapace/models';
import { findPlaybook, type Descriptor } from './descriptors.js';
import { PlaybookInputError, type PlaybookConfiguration, type PluginCluster, type PluginServer } from './plugin.js';

/**
 * The server states in which a playbook may run on a server. Every other state is refused
 * with `ServerNotReadyError`: `off`, `maintenance_no_reconfig`, `gathering_facts`,
 * `unreachable`, and any state added later until it is listed here (an allow-list, so that a
 * new state never lets a playbook touch a server by accident).
 */
export const READY_SERVER_STATES: readonly string[] = ['operational', 'maintenance_reconfig'];

/** Whether a playbook may run on the server, judging by its state (see {@link READY_SERVER_STATES}). */
export function isServerReady(server: PluginServer): boolean {
  return READY_SERVER_STATES.includes(server.state);
}

/** How a server is named in error messages: `name (id)`. */
export function describeServer(server: Pick<PluginServer, 'id' | 'name'>): string {
  return `${server.name} (${server.id})`;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The stable order of servers used everywhere (monitor choice, inventory groups, cluster
 * members): by name, then by id, both compared by UTF-16 code units so that the result does
 * not depend on the locale or on the order of the request.
 */
export function compareServers(a: Pick<PluginServer, 'id' | 'name'>, b: Pick<PluginServer, 'id' | 'name'>): number {
  return compareStrings(a.name, b.name) || compareStrings(a.id, b.id);
}

/** A sorted copy of `servers` (see {@link compareServers}). */
export function sortServers<T extends Pick<PluginServer, 'id' | 'name'>>(servers: readonly T[]): T[] {
  return [...servers].sort(compareServers);
}

/** The facts of a server, or null when they were not gathered (`{}`) or are malformed. */
export function serverFacts(server: PluginServer): ServerFacts | null {
  const facts = server.facts as Partial<ServerFacts> | null | undefined;
  if (facts === null || typeof facts !== 'object') return null;
  if (!Array.isArray(facts.disks) || !Array.isArray(facts.interfaces)) return null;
  return facts as ServerFacts;
}

/** The descriptor of a playbook shipped with Carapace; throws if there is none (a programming error). */
export function requireDescriptor(id: string): Descriptor {
  const descriptor = findPlaybook(id);
  if (!descriptor) throw new Error(`No playbook descriptor with id ${id}`);
  return descriptor;
}

/** Throws `ServerListIsRequiredForPlaybookError` when `servers` is empty. */
export function assertServerListGiven(playbookId: string, servers: readonly PluginServer[]): void {
  if (servers.length === 0) {
    throw new PlaybookInputError('ServerListIsRequiredForPlaybookError', `Playbook ${playbookId} needs a non-empty list of servers.`);
  }
}

/** Throws `DuplicateServerError` when a server id occurs more than once in `servers`. */
export function assertNoDuplicateServers(servers: readonly PluginServer[]): void {
  const seen = new Set<string>();
  const duplicates: PluginServer[] = [];
  for (const server of servers) {
    if (seen.has(server.id)) {
      if (!duplicates.some((d) => d.id === server.id)) duplicates.push(server);
    } else {
      seen.add(server.id);
    }
  }
  if (duplicates.length > 0) {
    throw new PlaybookInputError('DuplicateServerError', `Servers given more than once: ${duplicates.map(describeServer).join(', ')}.`);
  }
}

/** Throws `ServerNotReadyError` naming every server whose state is not in {@link READY_SERVER_STATES}. */
export function assertServersReady(servers: readonly PluginServer[]): void {
  const notReady = sortServers(servers.filter((s) => !isServerReady(s)));
  if (notReady.length > 0) {
    throw new PlaybookInputError(
      'ServerNotReadyError',
      `Servers not ready for a playbook (state must be ${READY_SERVER_STATES.join(' or ')}): ${notReady
        .map((s) => `${describeServer(s)} is ${s.state}`)
        .join(', ')}.`,
    );
  }
}

/** Throws `MissingFactsError` naming every server whose facts were not gathered yet. */
export function assertFactsGathered(servers: readonly PluginServer[]): void {
  const missing = sortServers(servers.filter((s) => serverFacts(s) === null));
  if (missing.length > 0) {
    throw new PlaybookInputError('MissingFactsError', `The facts of these servers were not gathered yet: ${missing.map(describeServer).join(', ')}.`);
  }
}

/** The cluster member that stands for `server` in a cluster configuration (its version is the server model version used). */
export function clusterMember(server: PluginServer): ClusterMember {
  return { server_id: server.id, version: server.version, fqdn: server.fqdn, ip: server.ip, server_name: server.name };
}

/** The ids of the members of a role (`mons`, `osds`, ...) of a cluster. */
export function roleMemberIds(cluster: PluginCluster, role: string): Set<string> {
  return new Set((cluster.configuration[role] ?? []).map((m) => m.server_id));
}

/** Whether any role of the cluster has a member. */
export function clusterHasMembers(cluster: PluginCluster): boolean {
  return Object.values(cluster.configuration).some((members) => members.length > 0);
}

/** A mutable deep copy of a cluster configuration. */
export function copyClusterConfiguration(cluster: PluginCluster): Record<string, ClusterMember[]> {
  const copy: Record<string, ClusterMember[]> = {};
  for (const [role, members] of Object.entries(cluster.configuration)) copy[role] = members.map((m) => ({ ...m }));
  return copy;
}

/**
 * The host variables every inventory carries for a server: how to reach it
 * (`ansible_host` = its IP, `ansible_user` = its `username`, `ansible_become: true`) and who
 * it is (`carapace_server_id`, `carapace_server_name`, `carapace_fqdn`).
 */
export function baseHostvars(server: PluginServer): Record<string, unknown> {
  return {
    ansible_host: server.ip,
    ansible_user: server.username,
    ansible_become: true,
    carapace_server_id: server.id,
    carapace_server_name: server.name,
    carapace_fqdn: server.fqdn,
  };
}

/** A group of an inventory being built: its name and its servers, in inventory order. */
export type InventoryGroup = readonly [name: string, servers: readonly PluginServer[]];

/**
 * Builds an Ansible JSON inventory keyed by server IP:
 * `{"<group>": {"hosts": [ip, ...]}, ..., "_meta": {"hostvars": {"<ip>": {...}}}}`.
 * Groups keep the given order of their servers; a server in several groups has one entry in
 * `_meta.hostvars`, from {@link baseHostvars} plus `extraHostvars(server)`.
 * Throws `DuplicateServerAddressError` when two different servers share an IP.
 */
export function buildInventory(
  groups: readonly InventoryGroup[],
  extraHostvars: (server: PluginServer) => Record<string, unknown> = () => ({}),
): Record<string, unknown> {
  const byIp = new Map<string, PluginServer>();
  for (const [, servers] of groups) {
    for (const server of servers) {
      const other = byIp.get(server.ip);
      if (other && other.id !== server.id) {
        throw new PlaybookInputError(
          'DuplicateServerAddressError',
          `Servers ${describeServer(other)} and ${describeServer(server)} have the same IP ${server.ip}.`,
        );
      }
      byIp.set(server.ip, server);
    }
  }
  const inventory: Record<string, unknown> = {};
  for (const [name, servers] of groups) {
    const hosts: string[] = [];
    for (const server of servers) if (!hosts.includes(server.ip)) hosts.push(server.ip);
    inventory[name] = { hosts };
  }
  const hostvars: Record<string, Record<string, unknown>> = {};
  for (const server of sortServers([...byIp.values()])) {
    hostvars[server.ip] = { ...baseHostvars(server), ...extraHostvars(server) };
  }
  inventory._meta = { hostvars };
  return inventory;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The hosts of a group of an inventory, as written in it: the `hosts` list (Ansible's
 * JSON form) or the keys of a `hosts` object (the YAML form). `[]` if the group is missing
 * or malformed.
 */
export function inventoryGroupHosts(inventory: Record<string, unknown>, group: string): string[] {
  const entry = inventory[group];
  if (!isRecord(entry)) return [];
  const hosts = entry.hosts;
  if (Array.isArray(hosts)) return hosts.filter((h): h is string => typeof h === 'string');
  if (isRecord(hosts)) return Object.keys(hosts);
  return [];
}

/**
 * The server an inventory host stands for: the one named by its host var
 * `carapace_server_id` (so that a server whose IP changed since the configuration was built
 * is still found), else the one with that IP; undefined if none of `servers`.
 */
export function inventoryHostServer(inventory: Record<string, unknown>, host: string, servers: readonly PluginServer[]): PluginServer | undefined {
  const meta = inventory._meta;
  const hostvars = isRecord(meta) && isRecord(meta.hostvars) ? meta.hostvars[host] : undefined;
  const id = isRecord(hostvars) ? hostvars.carapace_server_id : undefined;
  return (typeof id === 'string' ? servers.find((s) => s.id === id) : undefined) ?? servers.find((s) => s.ip === host);
}

/**
 * The servers among `servers` that are hosts of `group` in the configuration's inventory
 * (see {@link inventoryHostServer}), in the group's order, each once. Hosts that are none of
 * `servers` are ignored. This is how `onSuccess` learns what a run did: the inventory is the
 * truth, since a configuration may be edited before it runs.
 */
export function inventoryGroupServers(configuration: PlaybookConfiguration, group: string, servers: readonly PluginServer[]): PluginServer[] {
  const result: PluginServer[] = [];
  for (const host of inventoryGroupHosts(configuration.inventory, group)) {
    const server = inventoryHostServer(configuration.inventory, host, servers);
    if (server && !result.some((s) => s.id === server.id)) result.push(server);
  }
  return result;
}

/** The servers among `servers` that are hosts of any group of the configuration's inventory, sorted. */
export function inventoryServers(configuration: PlaybookConfiguration, servers: readonly PluginServer[]): PluginServer[] {
  const found: PluginServer[] = [];
  for (const group of Object.keys(configuration.inventory)) {
    if (group === '_meta') continue;
    for (const server of inventoryGroupServers(configuration, group, servers)) {
      if (!found.some((s) => s.id === server.id)) found.push(server);
    }
  }
  return sortServers(found);
}

/** Servers de-duplicated by id, keeping the first occurrence. */
export function uniqueServers(servers: readonly PluginServer[]): PluginServer[] {
  const seen = new Set<string>();
  return servers.filter((s) => (seen.has(s.id) ? false : (seen.add(s.id), true)));
}

/**
 * The servers of a playbook that runs on a whole cluster (`purge_cluster`, `upgrade_ceph`):
 * all the cluster's servers. The request may name no server, or exactly the cluster's servers
 * (in any order); any other list is refused with `ServerListNotAllowedError`
 * (`DuplicateServerError` for a server given twice). Every server must be ready
 * (`ServerNotReadyError`).
 */
export function selectWholeCluster(
  playbookId: string,
  cluster: PluginCluster,
  requested: readonly PluginServer[],
  clusterServers: readonly PluginServer[],
): PluginServer[] {
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
        `Playbook ${playbookId} runs on all the servers of cluster ${cluster.name}: give no server list, or all of them (${problems.join('; ')}).`,
      );
    }
  }
  assertNoDuplicateServers(clusterServers);
  assertServersReady(clusterServers);
  return sortServers(clusterServers);
}

/**
 * The inventory groups of a cluster's roles (`mons`, `mgrs`, `osds`, ...) with those of
 * their members that are among `servers`, roles sorted by name, members in the role's order;
 * `reserved` group names are left out.
 */
export function roleGroups(cluster: PluginCluster, servers: readonly PluginServer[], reserved: ReadonlySet<string> = new Set(['_meta', 'all', 'ungrouped'])): InventoryGroup[] {
  const sorted = sortServers(servers);
  return Object.keys(cluster.configuration)
    .filter((role) => !reserved.has(role))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((role) => {
      const ids = (cluster.configuration[role] ?? []).map((m) => m.server_id);
      return [role, ids.flatMap((id) => sorted.filter((s) => s.id === id))] as const;
    });
}

/** Throws `ServerNotInRoleError` naming the servers that are not OSD hosts (members of `osds`) of the cluster. */
export function assertOsdHosts(cluster: PluginCluster, servers: readonly PluginServer[]): void {
  const osdIds = roleMemberIds(cluster, 'osds');
  const notOsd = sortServers(servers.filter((s) => !osdIds.has(s.id)));
  if (notOsd.length > 0) {
    throw new PlaybookInputError(
      'ServerNotInRoleError',
      `Servers that are not OSD hosts of cluster ${cluster.name}: ${notOsd.map(describeServer).join(', ')}.`,
    );
  }
}
