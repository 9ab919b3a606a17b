/**
 * `add_pool` and `remove_pool`: a Ceph pool created or converged to the hints, and a pool
 * deleted once its name is repeated (docs/day2/pools.md).
 *
 * @packageDocumentation
 */
import { cephBaseGlobalVars, monitorHostsInventory, selectMonitorHosts } from './ceph.js';
import { requireDescriptor, roleMemberIds } from './common.js';
import { booleanHint, integerHint, normalizeResolvedHints, stringHint } from './hints.js';
import { OPENSTACK_POOLS } from './cinder-integration.plugin.js';
import { PlaybookInputError, type PlaybookPlugin, type ResolvedHints } from './plugin.js';

const addDescriptor = requireDescriptor('add_pool');
const removeDescriptor = requireDescriptor('remove_pool');

/** A pool name Carapace accepts: Ceph's characters, not starting with `.` (hidden pools, which v19 refuses silently) nor `-` (an option to the CLI). */
export const POOL_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

/** Pools that Ceph itself (the manager, RGW, NFS) makes and uses: neither made nor removed by these playbooks. */
export const RESERVED_POOLS: readonly string[] = ['.mgr', 'device_health_metrics', '.rgw.root', '.nfs'];

/** A CRUSH bucket type as a failure domain (`host`, `osd`, `rack`, ...). */
const BUCKET_TYPE = /^[a-z][a-z0-9_-]{0,31}$/;
/** An application name as `ceph osd pool application enable` takes it. */
const APPLICATION = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
/** A non-negative decimal (`target_size_ratio`). */
const DECIMAL = /^(0|[1-9]\d{0,5})(\.\d{1,6})?$/;

function invalid(playbookId: string, hint: string, message: string): PlaybookInputError {
  return new PlaybookInputError('InvalidHintError', `Hint ${hint} of playbook ${playbookId}: ${message}`);
}

/** The hint `name`, checked: Ceph's characters, not reserved. */
export function poolName(playbookId: string, hints: ResolvedHints): string {
  const name = stringHint(hints, 'name');
  if (name === '') throw invalid(playbookId, 'name', 'give the name of the pool.');
  if (RESERVED_POOLS.includes(name)) throw invalid(playbookId, 'name', `${name} is a pool of Ceph itself, not managed by Carapace.`);
  if (!POOL_NAME.test(name)) {
    throw invalid(playbookId, 'name', `${JSON.stringify(name)} is not a pool name: letters, digits, _, . and -, at most 100, not starting with . or -.`);
  }
  return name;
}

/** What `add_pool` asks of a pool (its global var `pool`). */
export interface PoolSpec {
  readonly name: string;
  readonly type: 'replicated' | 'erasure';
  /** Replicated: 0 (Ceph's default), or 2..10. Erasure: k+m. */
  readonly size: number;
  /** 0: Ceph's default for the size. */
  readonly min_size: number;
  /** Erasure only (0 for replicated). */
  readonly ec_k: number;
  readonly ec_m: number;
  /** Erasure only ('' for replicated). */
  readonly ec_profile: string;
  readonly crush_failure_domain: string;
  readonly pg_autoscale_mode: 'on' | 'off' | 'warn';
  /** 0: Ceph's default (or left as it is). */
  readonly pg_num: number;
  /** '': left as it is. */
  readonly target_size_ratio: string;
  readonly application: string;
  readonly quota_max_bytes: number;
  readonly quota_max_objects: number;
  readonly allow_size_decrease: boolean;
  readonly allow_min_size_one: boolean;
}

/** The pool `add_pool` is asked for, every hint checked together (`InvalidHintError` naming the hint). */
export function poolSpec(hints: ResolvedHints): PoolSpec {
  const id = addDescriptor.id;
  const name = poolName(id, hints);
  const type = stringHint(hints, 'type') === 'erasure' ? 'erasure' : 'replicated';
  let size = integerHint(hints, 'size');
  const minSize = integerHint(hints, 'min_size');
  const k = integerHint(hints, 'ec_k');
  const m = integerHint(hints, 'ec_m');
  let profile = stringHint(hints, 'ec_profile');
  const domain = stringHint(hints, 'crush_failure_domain');
  const mode = stringHint(hints, 'pg_autoscale_mode') as PoolSpec['pg_autoscale_mode'];
  const pgNum = integerHint(hints, 'pg_num');
  const ratio = stringHint(hints, 'target_size_ratio').trim();
  const application = stringHint(hints, 'application');
  const allowMinSizeOne = booleanHint(hints, 'allow_min_size_one');

  if (!BUCKET_TYPE.test(domain)) throw invalid(id, 'crush_failure_domain', `${JSON.stringify(domain)} is not a CRUSH bucket type (host, osd, rack, ...).`);
  if (type === 'replicated') {
    if (size === 1) throw invalid(id, 'size', 'one copy loses data with any disk; Carapace does not make pools of size 1 (Ceph needs mon_allow_pool_size_one for them).');
    if (size !== 0 && (size < 2 || size > 10)) throw invalid(id, 'size', `a replicated pool has 2 to 10 copies, got ${size}.`);
    if (minSize !== 0) {
      if (size === 0) throw invalid(id, 'min_size', 'give size with it: a replicated min_size is checked against the size.');
      if (minSize < 1 || minSize > size) throw invalid(id, 'min_size', `must be between 1 and size (${size}), got ${minSize}.`);
      if (minSize === 1 && !allowMinSizeOne) throw invalid(id, 'min_size', `1 with ${size} copies accepts writes on a single copy; give allow_min_size_one to mean it.`);
    }
    if (profile !== '') throw invalid(id, 'ec_profile', 'only for type erasure.');
    profile = '';
  } else {
    if (size !== 0) throw invalid(id, 'size', `the size of an erasure-coded pool is k+m (${k + m}); leave size at 0.`);
    if (k < 2 || k > 16) throw invalid(id, 'ec_k', `must be between 2 and 16, got ${k}.`);
    if (m < 1 || m > 8) throw invalid(id, 'ec_m', `must be between 1 and 8, got ${m}.`);
    size = k + m;
    if (minSize !== 0 && (minSize < k || minSize > size)) throw invalid(id, 'min_size', `an erasure-coded pool's min_size is between k (${k}) and k+m (${size}), got ${minSize}.`);
    if (profile === '') profile = `${name}_profile`;
    if (!POOL_NAME.test(profile)) throw invalid(id, 'ec_profile', `${JSON.stringify(profile)} is not a profile name: letters, digits, _, . and -, not starting with . or -.`);
  }
  if (pgNum !== 0) {
    if (mode === 'on') throw invalid(id, 'pg_num', "the autoscaler would undo it: give pg_autoscale_mode off or warn with pg_num, or leave pg_num at 0.");
    if (pgNum < 1 || pgNum > 32768 || (pgNum & (pgNum - 1)) !== 0) throw invalid(id, 'pg_num', `must be a power of two from 1 to 32768, got ${pgNum}.`);
  }
  if (ratio !== '' && !DECIMAL.test(ratio)) throw invalid(id, 'target_size_ratio', `${JSON.stringify(ratio)} is not a decimal ≥ 0 (e.g. 0.2).`);
  if (!APPLICATION.test(application)) throw invalid(id, 'application', `${JSON.stringify(application)} is not an application name (rbd, cephfs, rgw or letters, digits, _, . and -).`);
  for (const quota of ['quota_max_bytes', 'quota_max_objects']) {
    if (integerHint(hints, quota) < 0) throw invalid(id, quota, 'must be ≥ 0 (0: no quota).');
  }
  return {
    name,
    type,
    size,
    min_size: minSize,
    ec_k: type === 'erasure' ? k : 0,
    ec_m: type === 'erasure' ? m : 0,
    ec_profile: profile,
    crush_failure_domain: domain,
    pg_autoscale_mode: mode,
    pg_num: pgNum,
    target_size_ratio: ratio,
    application,
    quota_max_bytes: integerHint(hints, 'quota_max_bytes'),
    quota_max_objects: integerHint(hints, 'quota_max_objects'),
    allow_size_decrease: booleanHint(hints, 'allow_size_decrease'),
    allow_min_size_one: allowMinSizeOne,
  };
}

/** What `remove_pool` is asked (its global var `pool_removal`). */
export interface PoolRemoval {
  readonly name: string;
  readonly confirm_name: string;
  readonly allow_non_empty: boolean;
  /** The pools the module must refuse: the cinder integration's unless allowed. */
  readonly protected_pools: readonly string[];
}

/** The removal `remove_pool` is asked for: the name repeated, not a cinder pool unless allowed. */
export function poolRemoval(hints: ResolvedHints): PoolRemoval {
  const id = removeDescriptor.id;
  const name = poolName(id, hints);
  const confirm = stringHint(hints, 'confirm_name');
  if (confirm !== name) {
    throw invalid(
      id,
      'confirm_name',
      confirm === '' ? `repeat the pool's name (${name}) to delete it and all its data.` : `${JSON.stringify(confirm)} is not the pool's name ${JSON.stringify(name)}; nothing is deleted.`,
    );
  }
  const allowCinder = booleanHint(hints, 'allow_cinder_pools');
  if (OPENSTACK_POOLS.includes(name) && !allowCinder) {
    throw invalid(id, 'name', `${name} is a pool of the OpenStack (cinder) integration; give allow_cinder_pools to delete it anyway.`);
  }
  return { name, confirm_name: confirm, allow_non_empty: booleanHint(hints, 'allow_non_empty'), protected_pools: allowCinder ? [] : [...OPENSTACK_POOLS] };
}

/**
 * The `add_pool` plugin.
 *
 * - Servers: the cluster's usable monitors (none named: all of them; some named: they must
 *   be usable monitors, `ServerNotInRoleError`); the cluster needs OSDs
 *   (`ClusterHasNoOsdsError`). The playbook works on the first.
 * - Hints: see {@link poolSpec}. Whether Ceph can place the pool, and whether an existing
 *   pool can be converged, are asked on the cluster before anything changes.
 * - Configuration: group `mons`; global vars `fsid`, `cluster`, `carapace_cluster_name`,
 *   `pool` ({@link PoolSpec}), `clean_timeout`.
 * - After success: nothing changes in the cluster model (it does not record pools).
 */
export const addPoolPlugin: PlaybookPlugin = {
  descriptor: addDescriptor,
  relaunchSubset: true,

  selectServers(cluster, requested, clusterServers) {
    const servers = selectMonitorHosts(addDescriptor.id, cluster, requested, clusterServers);
    if (roleMemberIds(cluster, 'osds').size === 0) {
      throw new PlaybookInputError('ClusterHasNoOsdsError', `Cluster ${cluster.name} (${cluster.id}) has no OSDs for a pool: deploy it first.`);
    }
    return servers;
  },

  buildConfiguration(cluster, servers, hints) {
    const resolved = normalizeResolvedHints(addDescriptor, hints);
    const pool = poolSpec(resolved);
    return {
      global_vars: { ...cephBaseGlobalVars(cluster), pool, clean_timeout: integerHint(resolved, 'clean_timeout') },
      inventory: monitorHostsInventory(cluster, servers),
    };
  },
};

/**
 * The `remove_pool` plugin.
 *
 * - Servers: as `add_pool` (no OSDs needed).
 * - Hints: `name`, `confirm_name` (equal to it, else `InvalidHintError` and nothing is
 *   configured), `allow_non_empty`, `allow_cinder_pools` (the pools of
 *   {@link OPENSTACK_POOLS} are refused without it). The rest (Ceph's own pools, CephFS,
 *   tiers, `nodelete`, objects in the pool, `mon_allow_pool_delete` from a file) is asked on
 *   the cluster before anything changes.
 * - Configuration: group `mons`; global vars `fsid`, `cluster`, `carapace_cluster_name`,
 *   `pool_removal` ({@link PoolRemoval}).
 * - After success: nothing changes in the cluster model.
 */
export const removePoolPlugin: PlaybookPlugin = {
  descriptor: removeDescriptor,
  relaunchSubset: true,

  selectServers(cluster, requested, clusterServers) {
    return selectMonitorHosts(removeDescriptor.id, cluster, requested, clusterServers);
  },

  buildConfiguration(cluster, servers, hints) {
    const resolved = normalizeResolvedHints(removeDescriptor, hints);
    return {
      global_vars: { ...cephBaseGlobalVars(cluster), pool_removal: poolRemoval(resolved) },
      inventory: monitorHostsInventory(cluster, servers),
    };
  },
};
