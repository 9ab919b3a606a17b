/**
 * `update_ceph_configuration`: sets or removes Ceph configuration options on a running
 * cluster, and restarts (rolling, gated) only the daemons that read a changed option at start.
 *
 * @packageDocumentation
 */
import type { CephOptions } from '@carapace/models';
import { copyClusterConfiguration, requireDescriptor } from './common.js';
import { stringHint } from './hints.js';
import { PlaybookInputError, type PlaybookPlugin, type ResolvedHints } from './plugin.js';
import { rollingPlugin } from './rolling.js';

const descriptor = requireDescriptor('update_ceph_configuration');

/** A section of the configuration: `global`, a daemon type, or one daemon or client (`osd.3`, `client.rgw.a`). Masks (`osd/class:ssd`) are not taken. */
const SECTION = /^(global|mon|mgr|osd|mds|client)(\.[A-Za-z0-9_-][A-Za-z0-9_.-]*)?$/;
/** An option name as Ceph spells it (dashes are taken as underscores). */
const NAME = /^[a-z][a-z0-9_]*$/;
/** A value on one line, without what ceph.conf would read as a comment or an escape, nor spaces around it. */
function isValue(value: string): boolean {
  if (value === '' || value.trim() !== value) return false;
  for (const ch of value) {
    const code = ch.codePointAt(0) ?? 0;
    if (code < 0x20 || code === 0x7f || ch === '#' || ch === ';' || ch === '\\') return false;
  }
  return true;
}
const MAX_VALUE = 1024;
const MAX_OPTIONS = 100;

/**
 * Options that Carapace itself writes when it deploys (the monitors' addresses, the networks,
 * the cluster's id, authentication): changing them is a migration of the cluster, not an
 * option change, so this playbook refuses them.
 */
export const CARAPACE_OWNED_OPTIONS: ReadonlySet<string> = new Set([
  'fsid',
  'mon_host',
  'mon_host_override',
  'mon_initial_members',
  'public_network',
  'cluster_network',
  'auth_cluster_required',
  'auth_service_required',
  'auth_client_required',
  'key',
  'keyfile',
  'keyring',
]);

/** An option to set: its section, name and value. */
export interface CephOptionSet {
  readonly section: string;
  readonly name: string;
  readonly value: string;
}

/** An option to remove. */
export interface CephOptionRemove {
  readonly section: string;
  readonly name: string;
}

function invalid(id: string, message: string): PlaybookInputError {
  return new PlaybookInputError('InvalidHintError', `Hint ${id} of playbook update_ceph_configuration: ${message}`);
}

function entries(text: string, separators: RegExp): string[] {
  return text
    .split(separators)
    .map((e) => e.trim())
    .filter((e) => e !== '');
}

function checkSectionAndName(id: string, entry: string, section: string, rawName: string): string {
  if (!SECTION.test(section)) {
    throw invalid(id, `${JSON.stringify(entry)}: the section must be global, mon, mgr, osd, mds, client or one of them with a name (osd.3, client.rgw.a), got ${JSON.stringify(section)}.`);
  }
  const name = rawName.replace(/-/g, '_');
  if (!NAME.test(name)) throw invalid(id, `${JSON.stringify(entry)}: ${JSON.stringify(rawName)} is not an option name.`);
  if (CARAPACE_OWNED_OPTIONS.has(name)) {
    throw invalid(id, `${JSON.stringify(entry)}: ${name} is written by Carapace when it deploys the cluster; changing it is not an option change.`);
  }
  return name;
}

/** The options to set of the hint `options`: entries `SECTION NAME VALUE`, one per line or separated by `;`. */
export function parseOptionsToSet(text: string): CephOptionSet[] {
  return entries(text, /[\n;]/).map((entry) => {
    const match = /^(\S+)\s+(\S+)\s+(.+)$/.exec(entry);
    if (!match) throw invalid('options', `${JSON.stringify(entry)} is not 'SECTION NAME VALUE'.`);
    const [, section = '', rawName = '', value = ''] = match;
    const name = checkSectionAndName('options', entry, section, rawName);
    if (value.length > MAX_VALUE || !isValue(value)) {
      throw invalid('options', `${JSON.stringify(entry)}: the value must be one line of at most ${MAX_VALUE} characters without '#', ';' or '\\'.`);
    }
    return { section, name, value };
  });
}

/** The options to remove of the hint `remove_options`: entries `SECTION NAME`, separated by `,`, `;` or lines. */
export function parseOptionsToRemove(text: string): CephOptionRemove[] {
  return entries(text, /[\n;,]/).map((entry) => {
    const match = /^(\S+)\s+(\S+)$/.exec(entry);
    if (!match) throw invalid('remove_options', `${JSON.stringify(entry)} is not 'SECTION NAME'.`);
    const [, section = '', rawName = ''] = match;
    return { section, name: checkSectionAndName('remove_options', entry, section, rawName) };
  });
}

/** The options of the hints, checked: none named twice, at least one, at most 100. */
function optionVars(hints: ResolvedHints): { ceph_options_set: CephOptionSet[]; ceph_options_remove: CephOptionRemove[] } {
  const set = parseOptionsToSet(stringHint(hints, 'options'));
  const remove = parseOptionsToRemove(stringHint(hints, 'remove_options'));
  if (set.length + remove.length === 0) throw invalid('options', 'there is nothing to change: give options to set (options) or to remove (remove_options).');
  if (set.length + remove.length > MAX_OPTIONS) throw invalid('options', `at most ${MAX_OPTIONS} options a run, got ${set.length + remove.length}.`);
  const seen = new Set<string>();
  for (const o of [...set, ...remove]) {
    const key = `${o.section} ${o.name}`;
    if (seen.has(key)) throw invalid('options', `${key} is named twice (set or removed once a run).`);
    seen.add(key);
  }
  return { ceph_options_set: set, ceph_options_remove: remove };
}

const isText = (v: unknown): v is string => typeof v === 'string';

/** The cluster's options after a run of `vars` (its global vars): `options` with those set and without those removed. */
export function applyOptionChanges(options: Readonly<CephOptions>, vars: Readonly<Record<string, unknown>>): CephOptions {
  const next: CephOptions = Object.fromEntries(Object.entries(options).map(([section, named]) => [section, { ...named }]));
  const list = (key: string): Record<string, unknown>[] => (Array.isArray(vars[key]) ? (vars[key] as unknown[]).filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null) : []);
  for (const o of list('ceph_options_set')) {
    if (isText(o.section) && isText(o.name) && isText(o.value)) (next[o.section] ??= {})[o.name] = o.value;
  }
  for (const o of list('ceph_options_remove')) {
    if (isText(o.section) && isText(o.name) && next[o.section]) {
      const { [o.name]: _removed, ...rest } = next[o.section] as Record<string, string>;
      next[o.section] = rest;
    }
  }
  return Object.fromEntries(Object.entries(next).filter(([, named]) => Object.keys(named).length > 0));
}

const rolling = rollingPlugin(descriptor, optionVars);

/**
 * The `update_ceph_configuration` plugin.
 *
 * - Servers: all the cluster's servers (no list, or exactly them), all ready; the cluster
 *   needs a usable monitor. Every host gets the same `ceph.conf`.
 * - Hints: `options` (`SECTION NAME VALUE` entries, one per line or separated by `;`),
 *   `remove_options` (`SECTION NAME` entries), the timeouts of the gates. Refused
 *   (`InvalidHintError`): a section that is not `global`, a daemon type, or one daemon or
 *   client; a name that is not an option name or is one Carapace deploys
 *   (`CARAPACE_OWNED_OPTIONS`); a value over several lines or with `#`, `;` or `\`; an option
 *   named twice; nothing to change. Whether Ceph knows the option and takes the value is
 *   asked on the cluster, before anything changes.
 * - Configuration: the groups of the rolling playbooks; global vars `fsid`, `cluster`,
 *   `carapace_cluster_name`, `ceph_options_set` (`[{section, name, value}]`),
 *   `ceph_options_remove` (`[{section, name}]`), the timeouts.
 * - After success: the cluster's `ceph_options` are those it had, with these set and those
 *   removed.
 */
export const updateCephConfigurationPlugin: PlaybookPlugin = {
  ...rolling,
  onSuccess(cluster, _servers, configuration) {
    return {
      configuration: copyClusterConfiguration(cluster),
      join: [],
      leave: [],
      deleteCluster: false,
      cephOptions: applyOptionChanges(cluster.ceph_options ?? {}, configuration.global_vars),
    };
  },
};
