/**
 * `upgrade_ceph`: a rolling upgrade of a running cluster to the Ceph version a package
 * source offers, each daemon stopped only once Ceph says it may.
 *
 * @packageDocumentation
 */
import { requireDescriptor } from './common.js';
import { listHint, stringHint } from './hints.js';
import { PlaybookInputError, type PlaybookPlugin } from './plugin.js';
import { rollingPlugin } from './rolling.js';

const descriptor = requireDescriptor('upgrade_ceph');

const REPOSITORY_URL = /^(https?:\/\/[^\s"]+|file:\/[^\s"]*)$/;
const SUITE = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
const COMPONENTS = /^[A-Za-z0-9][A-Za-z0-9._ -]*$/;
const PIN = /^(release|origin|version) [ -~]+$/;
const VERSION = /^\d+\.\d+\.\d+$/;
const HEALTH_CODE = /^[A-Z][A-Z0-9_]*$/;

function invalid(id: string, expected: string, value: string): PlaybookInputError {
  return new PlaybookInputError('InvalidHintError', `Hint ${id} of playbook upgrade_ceph must be ${expected}, got ${JSON.stringify(value)}.`);
}

/** The package source of the hints as global vars, checked. */
function repositoryVars(hints: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const kind = stringHint(hints, 'ceph_repository');
  if (kind !== 'repository') return { ceph_repository: kind };
  const url = stringHint(hints, 'ceph_repository_url');
  const suite = stringHint(hints, 'ceph_repository_suite');
  const components = stringHint(hints, 'ceph_repository_components');
  const key = stringHint(hints, 'ceph_repository_key');
  const pin = stringHint(hints, 'ceph_repository_pin');
  if (!REPOSITORY_URL.test(url)) throw invalid('ceph_repository_url', 'an http, https or file URI (ceph_repository is repository)', url);
  if (!SUITE.test(suite)) throw invalid('ceph_repository_suite', "a suite name (letters, digits, '.', '_', '-', '/')", suite);
  if (!COMPONENTS.test(components)) throw invalid('ceph_repository_components', "component names (letters, digits, '.', '_', '-', spaces)", components);
  if (!key.includes('-----BEGIN PGP PUBLIC KEY BLOCK-----')) throw invalid('ceph_repository_key', 'the ASCII-armored signing key of the repository', key.slice(0, 40));
  if (pin !== '' && !PIN.test(pin)) throw invalid('ceph_repository_pin', "an apt Pin value on one line ('release ...', 'origin ...' or 'version ...')", pin);
  return {
    ceph_repository: kind,
    ceph_repository_url: url,
    ceph_repository_suite: suite,
    ceph_repository_components: components,
    ceph_repository_key: key,
    ...(pin !== '' ? { ceph_repository_pin: pin } : {}),
  };
}

/**
 * The `upgrade_ceph` plugin.
 *
 * - Servers: all the cluster's servers (no list, or exactly them: `ServerListNotAllowedError`
 *   otherwise), all ready; the cluster needs a usable monitor (`ClusterHasNoMonitorsError`).
 * - Hints: the package source (`ceph_repository` distribution or repository, and for a
 *   repository its `ceph_repository_url`, `_suite`, `_components`, `_key`, optional `_pin`),
 *   `target_version` (upstream, e.g. 18.2.7; empty: the highest offered), `allowed_warnings`
 *   (health check codes, comma-separated), `ok_to_stop_timeout`, `daemon_timeout`,
 *   `clean_timeout` (seconds). Checked here (`InvalidHintError`), and again on the hosts.
 * - Configuration: groups `mons`, `mgrs`, `osds` of the cluster's roles and `ceph` with every
 *   server; global vars `fsid`,
 *   `cluster`, `carapace_cluster_name`, the package source, `target_version`,
 *   `allowed_warnings` (a list), the three timeouts.
 * - After success: nothing changes in the cluster model (the playbook reads what runs from
 *   Ceph itself), so it has no `onSuccess`.
 */
export const upgradeCephPlugin: PlaybookPlugin = rollingPlugin(descriptor, (hints) => {
  const target = stringHint(hints, 'target_version');
  if (target !== '' && !VERSION.test(target)) throw invalid('target_version', 'an upstream Ceph version such as 18.2.7, or empty', target);
  const warnings = listHint(hints, 'allowed_warnings');
  const bad = warnings.find((code) => !HEALTH_CODE.test(code));
  if (bad !== undefined) throw invalid('allowed_warnings', 'health check codes such as OSD_DOWN, comma-separated', bad);
  return { ...repositoryVars(hints), target_version: target, allowed_warnings: warnings };
});
