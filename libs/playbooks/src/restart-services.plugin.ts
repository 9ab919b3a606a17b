/**
 * `restart_services`: a rolling restart of the chosen Ceph daemon types, host by host, each
 * daemon stopped only once Ceph says it may.
 *
 * @packageDocumentation
 */
import { requireDescriptor } from './common.js';
import { listHint, stringHint } from './hints.js';
import { PlaybookInputError, type PlaybookPlugin } from './plugin.js';
import { rollingPlugin } from './rolling.js';

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
export const restartServicesPlugin: PlaybookPlugin = rollingPlugin(descriptor, (hints) => {
  const asked = listHint(hints, 'services');
  if (asked.length === 0 || asked.some((s) => !RESTARTABLE_DAEMONS.includes(s))) {
    throw new PlaybookInputError(
      'InvalidHintError',
      `Hint services of playbook restart_services must name daemon types among ${RESTARTABLE_DAEMONS.join(', ')}, comma-separated, got ${JSON.stringify(stringHint(hints, 'services'))}.`,
    );
  }
  return { services: RESTARTABLE_DAEMONS.filter((s) => asked.includes(s)) };
});
