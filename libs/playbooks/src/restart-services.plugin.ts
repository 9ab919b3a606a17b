/**
 * `restart_services`: a rolling restart of the chosen Ceph daemon types, host by host, each
 * daemon stopped only once Ceph says it may.
 *
 * @packageDocumentation
 */
import { cephBaseGlobalVars, usableMonitors } from './ceph.js';
import { assertNoDuplicateServers, buildInventory, requireDescriptor, roleGroups, selectWholeCluster, sortServers } from './common.js';
import { integerHint, normalizeResolvedHints, stringHint } from './hints.js';
import { PlaybookInputError, type PlaybookPlugin } from './plugin.js';
import { UPGRADE_ALL_GROUP } from './upgrade-ceph.plugin.js';

const descriptor = requireDescriptor('restart_services');

/** The daemon types `restart_services` restarts, in the order it restarts them. */
export const RESTARTABLE_DAEMONS: readonly string[] = ['mgr', 'mon', 'osd'];

/**
 * The `restart_services` plugin.
 *
 * - Servers: all the cluster's servers (no list, or exactly them), all ready; the cluster
 *   needs a usable monitor.
 * - Hints: `services`, the daemon types to restart, comma-separated among mgr, mon and osd
 *   (default all three; `InvalidHintError` for another or none), and the timeouts of the
 *   gates (`ok_to_stop_timeout`, `daemon_timeout`, `clean_timeout`).
 * - Configuration: the groups of `upgrade_ceph` (the roles, and `ceph` with every server);
 *   global vars `fsid`, `cluster`, `carapace_cluster_name`, `services` (a list), the timeouts.
 * - After success: nothing changes in the cluster model.
 */
export const restartServicesPlugin: PlaybookPlugin = {
  descriptor,

  selectServers(cluster, requested, clusterServers) {
    usableMonitors(cluster, clusterServers);
    return selectWholeCluster(descriptor.id, cluster, requested, clusterServers);
  },

  buildConfiguration(cluster, servers, hints) {
    const resolved = normalizeResolvedHints(descriptor, hints);
    assertNoDuplicateServers(servers);
    usableMonitors(cluster, servers);
    const asked = stringHint(resolved, 'services')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const unknown = asked.filter((s) => !RESTARTABLE_DAEMONS.includes(s));
    if (asked.length === 0 || unknown.length > 0) {
      throw new PlaybookInputError(
        'InvalidHintError',
        `Hint services of playbook restart_services must name daemon types among ${RESTARTABLE_DAEMONS.join(', ')}, comma-separated, got ${JSON.stringify(stringHint(resolved, 'services'))}.`,
      );
    }
    const reserved = new Set(Object.keys(cluster.configuration).filter((role) => !['mons', 'mgrs', 'osds'].includes(role)));
    return {
      global_vars: {
        ...cephBaseGlobalVars(cluster),
        services: RESTARTABLE_DAEMONS.filter((s) => asked.includes(s)),
        ok_to_stop_timeout: integerHint(resolved, 'ok_to_stop_timeout'),
        daemon_timeout: integerHint(resolved, 'daemon_timeout'),
        clean_timeout: integerHint(resolved, 'clean_timeout'),
      },
      inventory: buildInventory([...roleGroups(cluster, servers, reserved), [UPGRADE_ALL_GROUP, sortServers(servers)]]),
    };
  },
};
