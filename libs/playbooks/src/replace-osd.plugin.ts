/**
 * `replace_osd`: the disks of OSDs replaced, each OSD keeping its id.
 *
 * @packageDocumentation
 */
import { cephBaseGlobalVars, requireClusterServers, usableMonitors } from './ceph.js';
import { assertNoDuplicateServers, assertOsdHosts, assertServerListGiven, assertServersReady, buildInventory, requireDescriptor, sortServers } from './common.js';
import { booleanHint, integerHint, normalizeResolvedHints, stringHint } from './hints.js';
import { PlaybookInputError, type PlaybookPlugin, type PluginCluster, type PluginServer } from './plugin.js';

const descriptor = requireDescriptor('replace_osd');

const DEVICE = /^\/dev\/[A-Za-z0-9/_.:+-]+$/;

/** An OSD and the device that replaces it. */
export interface OsdReplacement {
  readonly id: number;
  readonly device: string;
}

function invalid(message: string): PlaybookInputError {
  return new PlaybookInputError('InvalidHintError', `Hint replacements of playbook replace_osd: ${message}`);
}

/** The replacements of the hint: `ID:DEVICE` entries, comma-separated; no id nor device twice. */
export function parseReplacements(text: string): OsdReplacement[] {
  const entries = text
    .split(/[,\n;]/)
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) throw invalid("give the OSDs to replace and their new devices, e.g. '3:/dev/vdc'.");
  const result = entries.map((entry) => {
    const match = /^(\d{1,7}):(\S+)$/.exec(entry);
    if (!match) throw invalid(`${JSON.stringify(entry)} is not 'ID:DEVICE'.`);
    const [, id = '', device = ''] = match;
    if (!DEVICE.test(device) || device.split('/').includes('..')) throw invalid(`${JSON.stringify(device)} is not a device path under /dev.`);
    return { id: Number(id), device };
  });
  for (const key of ['id', 'device'] as const) {
    const seen = new Set<unknown>();
    for (const r of result) {
      if (seen.has(r[key])) throw invalid(`${key === 'id' ? `osd.${r.id}` : r.device} is given twice.`);
      seen.add(r[key]);
    }
  }
  return result;
}

function assertOneOsdHost(cluster: PluginCluster, servers: readonly PluginServer[]): void {
  if (servers.length !== 1) {
    throw new PlaybookInputError('ServerListNotAllowedError', `Playbook replace_osd runs on one server, the host of the OSDs; got ${servers.length}.`);
  }
  assertOsdHosts(cluster, servers);
}

/**
 * The `replace_osd` plugin.
 *
 * - Servers: exactly one (`ServerListIsRequiredForPlaybookError`, `ServerListNotAllowedError`
 *   for more), an OSD host of this cluster (`ServerNotInRoleError`), ready; the cluster needs
 *   a usable monitor.
 * - Hints: `replacements` (`ID:DEVICE`, comma-separated: `InvalidHintError` for none, a bad
 *   entry, an id or a device twice), `wipe_devices`, `dmcrypt`, `safe_to_destroy_timeout`,
 *   `daemon_timeout`, `clean_timeout`. Whether each OSD is on that host is asked on the
 *   cluster, before anything changes.
 * - Configuration: groups `mons` (the usable monitors) and `osds` (the host); global vars
 *   `fsid`, `cluster`, `carapace_cluster_name`, `replacements` (`[{id, device}]`, ids as
 *   strings), `wipe_devices`, `dmcrypt`, the timeouts.
 * - After success: nothing changes in the cluster model (the OSDs keep their ids and host).
 */
export const replaceOsdPlugin: PlaybookPlugin = {
  descriptor,
  relaunchSubset: false,
  relaunchSubsetReason:
    "its plays stop every host at the first failure (Ceph's gates are asked for all the disks together), so a host without an error of its own may not have finished; a relaunch runs it whole, and the disks already replaced are skipped",

  selectServers(cluster, requested, clusterServers) {
    assertServerListGiven(descriptor.id, requested);
    assertNoDuplicateServers(requested);
    assertOneOsdHost(cluster, requested);
    usableMonitors(cluster, clusterServers);
    assertServersReady(requested);
    return sortServers(requested);
  },

  buildConfiguration(cluster, servers, hints, clusterServers) {
    const resolved = normalizeResolvedHints(descriptor, hints);
    const replacements = parseReplacements(stringHint(resolved, 'replacements'));
    const others = requireClusterServers(descriptor.id, clusterServers);
    assertServerListGiven(descriptor.id, servers);
    assertOneOsdHost(cluster, servers);
    return {
      global_vars: {
        ...cephBaseGlobalVars(cluster),
        replacements: replacements.map((r) => ({ id: String(r.id), device: r.device })),
        wipe_devices: booleanHint(resolved, 'wipe_devices'),
        dmcrypt: booleanHint(resolved, 'dmcrypt'),
        safe_to_destroy_timeout: integerHint(resolved, 'safe_to_destroy_timeout'),
        daemon_timeout: integerHint(resolved, 'daemon_timeout'),
        clean_timeout: integerHint(resolved, 'clean_timeout'),
      },
      inventory: buildInventory([
        ['mons', usableMonitors(cluster, others)],
        ['osds', sortServers(servers)],
      ]),
    };
  },
};
