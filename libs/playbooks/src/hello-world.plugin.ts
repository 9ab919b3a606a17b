/**
 * `hello_world`: installs a tiny service answering `{"result": "ok"}` on port 8085, to check
 * that hosts can be managed.
 *
 * @packageDocumentation
 */
import {
  assertNoDuplicateServers,
  assertServerListGiven,
  assertServersReady,
  buildInventory,
  requireDescriptor,
  sortServers,
} from './common.js';
import { normalizeResolvedHints } from './hints.js';
import { PlaybookInputError, type PlaybookPlugin } from './plugin.js';

/** The port the hello world service listens on (global var `port_number`). */
export const HELLO_WORLD_PORT = 8085;

const descriptor = requireDescriptor('hello_world');

/**
 * The `hello_world` plugin.
 *
 * - Servers: the requested ones, or all the cluster's servers when none are requested; at
 *   least one in the end (`ServerListIsRequiredForPlaybookError`). Requested servers may be
 *   in any cluster or in none: the playbook changes nothing Ceph cares about. Every server
 *   must be ready (`ServerNotReadyError`), none given twice (`DuplicateServerError`).
 * - Configuration: `global_vars` `{port_number: 8085}`; inventory group `hello_world` with
 *   every server (the play runs on `all`), host variables as in `buildInventory`. The port
 *   is a global var only: extra vars override host vars in Ansible, so a per-host
 *   `port_number` would have no effect.
 * - After success: nothing changes (no `onSuccess`).
 */
export const helloWorldPlugin: PlaybookPlugin = {
  descriptor,
  relaunchSubset: true,

  selectServers(_cluster, requested, clusterServers) {
    assertNoDuplicateServers(requested);
    const servers = requested.length > 0 ? requested : clusterServers;
    if (servers.length === 0) {
      throw new PlaybookInputError(
        'ServerListIsRequiredForPlaybookError',
        'Playbook hello_world needs a list of servers when the cluster has no servers.',
      );
    }
    assertNoDuplicateServers(servers);
    assertServersReady(servers);
    return sortServers(servers);
  },

  buildConfiguration(_cluster, servers, hints) {
    normalizeResolvedHints(descriptor, hints);
    assertServerListGiven(descriptor.id, servers);
    assertNoDuplicateServers(servers);
    return {
      global_vars: { port_number: HELLO_WORLD_PORT },
      inventory: buildInventory([['hello_world', sortServers(servers)]]),
    };
  },
};
