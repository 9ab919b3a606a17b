// The add_pool and remove_pool plugins: servers (the cluster's usable monitors), the hints
// checked together, the configuration built; and their Ansible content passes
// ansible-playbook --syntax-check. Their runs on real Ceph are in test/e2e/ceph/pool.checks.ts.
import type { ClusterMember } from '@carapace/models';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  addPoolPlugin,
  findPlaybook,
  getPlugin,
  OPENSTACK_POOLS,
  PlaybookInputError,
  removePoolPlugin,
  resolveHints,
  type HintValue,
  type PlaybookConfiguration,
  type PlaybookPlugin,
  type PluginCluster,
  type PluginServer,
} from '../src/index.js';
import { CLUSTER_ID, EMPTY_CLUSTER, ID1, ID2, ID3, ID4, inCluster, S1, S2, S3, S4 } from '@carapace/test-support/playbook-facts';
import { ansibleEnv, run, scratchDirs, syntaxCheck, writeRunInputs } from './fixtures/ansible.js';

function member(s: PluginServer): ClusterMember {
  return { server_id: s.id, version: s.version, fqdn: s.fqdn, ip: s.ip, server_name: s.name };
}

function cluster(mons: readonly PluginServer[], osds: readonly PluginServer[]): PluginCluster {
  const configuration: Record<string, ClusterMember[]> = {};
  if (mons.length) configuration.mons = mons.map(member);
  if (osds.length) configuration.osds = osds.map(member);
  return { id: CLUSTER_ID, name: 'prod', configuration };
}

function inputError(fn: () => unknown): PlaybookInputError {
  try {
    fn();
  } catch (e) {
    if (e instanceof PlaybookInputError) return e;
    throw e;
  }
  throw new Error('expected a PlaybookInputError, nothing was thrown');
}

const deployed = cluster([S3, S1, S2], [S1, S2, S3, S4]);
const clusterServers = [S1, S2, S3, S4].map(inCluster);

/** What the control plane does on create: hints, then servers, then the configuration. */
function configure(plugin: PlaybookPlugin, hints: Record<string, unknown>, requested: readonly PluginServer[] = []): PlaybookConfiguration {
  const given: HintValue[] = Object.entries(hints).map(([id, value]) => ({ id, value }));
  const resolved = resolveHints(plugin.descriptor, given);
  const servers = plugin.selectServers(deployed, requested, clusterServers);
  return plugin.buildConfiguration(deployed, servers, resolved, clusterServers);
}

/** The InvalidHintError of a configuration of these hints; its message. */
function refusedHint(plugin: PlaybookPlugin, hints: Record<string, unknown>): string {
  const e = inputError(() => configure(plugin, hints));
  expect(e.errorName, e.message).toBe('InvalidHintError');
  return e.message;
}

const REPLICATED = {
  name: 'rbd-ssd',
  type: 'replicated',
  size: 0,
  min_size: 0,
  ec_k: 0,
  ec_m: 0,
  ec_profile: '',
  crush_failure_domain: 'host',
  pg_autoscale_mode: 'on',
  pg_num: 0,
  target_size_ratio: '',
  application: 'rbd',
  quota_max_bytes: 0,
  quota_max_objects: 0,
  allow_size_decrease: false,
  allow_min_size_one: false,
};

describe('add_pool', () => {
  it('is described: its own permission, no server list required, its hints with defaults', () => {
    const d = findPlaybook('add_pool');
    expect(d).toMatchObject({ id: 'add_pool', name: 'Add or converge pool', required_server_list: false });
    expect(getPlugin('add_pool')).toBe(addPoolPlugin);
    expect(d?.hints.map((h) => [h.id, h.type, h.default_value])).toEqual([
      ['name', 'string', ''],
      ['type', 'string', 'replicated'],
      ['size', 'integer', 0],
      ['min_size', 'integer', 0],
      ['ec_k', 'integer', 2],
      ['ec_m', 'integer', 1],
      ['ec_profile', 'string', ''],
      ['crush_failure_domain', 'string', 'host'],
      ['pg_autoscale_mode', 'string', 'on'],
      ['pg_num', 'integer', 0],
      ['target_size_ratio', 'string', ''],
      ['application', 'string', 'rbd'],
      ['quota_max_bytes', 'integer', 0],
      ['quota_max_objects', 'integer', 0],
      ['allow_size_decrease', 'boolean', false],
      ['allow_min_size_one', 'boolean', false],
      ['clean_timeout', 'integer', 600],
    ]);
  });

  it('runs on the usable monitors (the first does the work), with the pool as asked; defaults for the rest', () => {
    const configuration = configure(addPoolPlugin, { name: 'rbd-ssd' });
    expect(configuration.global_vars).toEqual({ fsid: CLUSTER_ID, cluster: 'ceph', carapace_cluster_name: 'prod', pool: REPLICATED, clean_timeout: 600 });
    expect(configuration.inventory.mons).toEqual({ hosts: ['10.0.0.13', '10.0.0.11', '10.0.0.12'] });
    expect(Object.keys(configuration.inventory).sort()).toEqual(['_meta', 'mons']);
  });

  it('builds a replicated pool with size, min_size, quotas, fixed PGs and a ratio', () => {
    const { pool } = configure(addPoolPlugin, {
      name: 'data_1.x',
      size: 3,
      min_size: 2,
      pg_autoscale_mode: 'warn',
      pg_num: 64,
      target_size_ratio: '0.25',
      application: 'rgw',
      quota_max_bytes: 10 * 1024 ** 3,
      quota_max_objects: 1000,
      clean_timeout: 120,
    }).global_vars as { pool: unknown };
    expect(pool).toEqual({
      ...REPLICATED,
      name: 'data_1.x',
      size: 3,
      min_size: 2,
      pg_autoscale_mode: 'warn',
      pg_num: 64,
      target_size_ratio: '0.25',
      application: 'rgw',
      quota_max_bytes: 10 * 1024 ** 3,
      quota_max_objects: 1000,
    });
  });

  it('builds an erasure-coded pool: size k+m, the profile POOL_profile unless named', () => {
    const vars = configure(addPoolPlugin, { name: 'rbd-ec', type: 'erasure', ec_k: 4, ec_m: 2, min_size: 5, quota_max_objects: 10 }).global_vars;
    expect(vars.pool).toEqual({ ...REPLICATED, name: 'rbd-ec', type: 'erasure', size: 6, min_size: 5, ec_k: 4, ec_m: 2, ec_profile: 'rbd-ec_profile', quota_max_objects: 10 });
    const named = configure(addPoolPlugin, { name: 'rbd-ec', type: 'erasure', ec_profile: 'k4m2', crush_failure_domain: 'osd' }).global_vars.pool;
    expect(named).toMatchObject({ ec_profile: 'k4m2', crush_failure_domain: 'osd', size: 3, ec_k: 2, ec_m: 1 });
  });

  it('refuses a missing, reserved or illegal name', () => {
    expect(refusedHint(addPoolPlugin, {})).toContain('give the name of the pool');
    for (const name of ['.mgr', 'device_health_metrics', '.rgw.root', '.nfs']) expect(refusedHint(addPoolPlugin, { name })).toContain('a pool of Ceph itself');
    for (const name of ['.hidden', '-x', 'a b', 'a/b', 'é', 'x'.repeat(101), 'a;b']) expect(refusedHint(addPoolPlugin, { name })).toContain('is not a pool name');
  });

  it('refuses sizes Ceph could not keep safe, and min_size outside its range', () => {
    expect(refusedHint(addPoolPlugin, { name: 'p', size: 1 })).toContain('pools of size 1');
    expect(refusedHint(addPoolPlugin, { name: 'p', size: 11 })).toContain('≤ 10');
    expect(refusedHint(addPoolPlugin, { name: 'p', size: -1 })).toContain('≥ 0');
    expect(refusedHint(addPoolPlugin, { name: 'p', min_size: 2 })).toContain('give size with it');
    expect(refusedHint(addPoolPlugin, { name: 'p', size: 3, min_size: 4 })).toContain('between 1 and size (3)');
    expect(refusedHint(addPoolPlugin, { name: 'p', size: 3, min_size: 1 })).toContain('allow_min_size_one');
    expect(configure(addPoolPlugin, { name: 'p', size: 3, min_size: 1, allow_min_size_one: true }).global_vars.pool).toMatchObject({ size: 3, min_size: 1, allow_min_size_one: true });
    expect(configure(addPoolPlugin, { name: 'p', size: 2, allow_size_decrease: true }).global_vars.pool).toMatchObject({ size: 2, allow_size_decrease: true });
  });

  it('refuses erasure-coding hints that do not fit', () => {
    expect(refusedHint(addPoolPlugin, { name: 'p', type: 'erasure', size: 3 })).toContain('k+m');
    expect(refusedHint(addPoolPlugin, { name: 'p', type: 'erasure', ec_k: 1 })).toContain('≥ 2');
    expect(refusedHint(addPoolPlugin, { name: 'p', type: 'erasure', ec_m: 0 })).toContain('≥ 1');
    expect(refusedHint(addPoolPlugin, { name: 'p', type: 'erasure', min_size: 1 })).toContain('between k (2) and k+m (3)');
    expect(refusedHint(addPoolPlugin, { name: 'p', type: 'erasure', ec_profile: '.x' })).toContain('not a profile name');
    expect(refusedHint(addPoolPlugin, { name: 'p', ec_profile: 'x' })).toContain('only for type erasure');
    expect(refusedHint(addPoolPlugin, { name: 'p', type: 'striped' })).toContain('one of "replicated", "erasure"');
  });

  it('refuses pg_num with the autoscaler on, or not a power of two; a bad ratio, domain, application or quota', () => {
    expect(refusedHint(addPoolPlugin, { name: 'p', pg_num: 32 })).toContain('the autoscaler would undo it');
    expect(refusedHint(addPoolPlugin, { name: 'p', pg_autoscale_mode: 'off', pg_num: 48 })).toContain('power of two');
    expect(refusedHint(addPoolPlugin, { name: 'p', pg_autoscale_mode: 'sometimes' })).toContain('one of "on", "off", "warn"');
    for (const ratio of ['-1', 'abc', '1e3', '0.1234567']) expect(refusedHint(addPoolPlugin, { name: 'p', target_size_ratio: ratio })).toContain('not a decimal');
    expect(refusedHint(addPoolPlugin, { name: 'p', crush_failure_domain: 'Host!' })).toContain('not a CRUSH bucket type');
    expect(refusedHint(addPoolPlugin, { name: 'p', application: 'my app' })).toContain('not an application name');
    expect(refusedHint(addPoolPlugin, { name: 'p', quota_max_bytes: -5 })).toContain('≥ 0');
    expect(refusedHint(addPoolPlugin, { name: 'p', quota_max_objects: '10' })).toContain('an integer');
  });

  it('takes a cinder pool name (it converges it), and some of the monitors when named; refuses other servers and clusters without OSDs', () => {
    expect(configure(addPoolPlugin, { name: 'volumes' }).global_vars.pool).toMatchObject({ name: 'volumes' });
    expect(configure(addPoolPlugin, { name: 'p' }, [inCluster(S2)]).inventory.mons).toEqual({ hosts: ['10.0.0.12'] });
    const e = inputError(() => addPoolPlugin.selectServers(deployed, [inCluster(S4)], clusterServers));
    expect(e.errorName).toBe('ServerNotInRoleError');
    expect(e.message).toContain(ID4);
    expect(inputError(() => addPoolPlugin.selectServers(cluster([S1], []), [], clusterServers)).errorName).toBe('ClusterHasNoOsdsError');
    expect(inputError(() => addPoolPlugin.selectServers(EMPTY_CLUSTER, [], [])).errorName).toBe('ClusterHasNoMonitorsError');
    expect(inputError(() => addPoolPlugin.buildConfiguration(deployed, [], { name: 'p' })).errorName).toBe('ClusterHasNoMonitorsError');
  });

  it('changes nothing in the cluster model after a run', () => {
    expect('onSuccess' in addPoolPlugin).toBe(false);
  });
});

describe('remove_pool', () => {
  it('is described: its own permission, no server list required, the name repeated, nothing allowed by default', () => {
    expect(findPlaybook('remove_pool')).toMatchObject({ id: 'remove_pool', name: 'Remove pool', required_server_list: false });
    expect(getPlugin('remove_pool')).toBe(removePoolPlugin);
    expect(findPlaybook('remove_pool')?.hints.map((h) => [h.id, h.type, h.default_value])).toEqual([
      ['name', 'string', ''],
      ['confirm_name', 'string', ''],
      ['allow_non_empty', 'boolean', false],
      ['allow_cinder_pools', 'boolean', false],
    ]);
  });

  it('builds the removal on the monitors when the name is repeated; the cinder pools protected', () => {
    const configuration = configure(removePoolPlugin, { name: 'scratch', confirm_name: 'scratch' });
    expect(configuration.global_vars).toEqual({
      fsid: CLUSTER_ID,
      cluster: 'ceph',
      carapace_cluster_name: 'prod',
      pool_removal: { name: 'scratch', confirm_name: 'scratch', allow_non_empty: false, protected_pools: [...OPENSTACK_POOLS] },
    });
    expect(configuration.inventory.mons).toEqual({ hosts: ['10.0.0.13', '10.0.0.11', '10.0.0.12'] });
    expect(removePoolPlugin.selectServers(deployed, [inCluster(S1)], clusterServers).map((s) => s.id)).toEqual([ID1]);
    // no OSDs needed to delete a pool
    expect(removePoolPlugin.selectServers(cluster([S2, S3], []), [], clusterServers).map((s) => s.id)).toEqual([ID2, ID3]);
  });

  it('refuses a configuration without the name repeated, or with another name', () => {
    expect(refusedHint(removePoolPlugin, { name: 'scratch' })).toContain("repeat the pool's name (scratch)");
    expect(refusedHint(removePoolPlugin, { name: 'scratch', confirm_name: 'Scratch' })).toContain('"Scratch" is not the pool\'s name "scratch"; nothing is deleted');
    expect(refusedHint(removePoolPlugin, { name: 'scratch', confirm_name: 'scratch ' })).toContain('is not the pool');
    expect(refusedHint(removePoolPlugin, {})).toContain('give the name of the pool');
    expect(refusedHint(removePoolPlugin, { name: '.mgr', confirm_name: '.mgr' })).toContain('a pool of Ceph itself');
  });

  it('refuses the cinder pools unless allow_cinder_pools, and takes allow_non_empty', () => {
    for (const name of OPENSTACK_POOLS) expect(refusedHint(removePoolPlugin, { name, confirm_name: name })).toContain('allow_cinder_pools');
    const vars = configure(removePoolPlugin, { name: 'volumes', confirm_name: 'volumes', allow_cinder_pools: true, allow_non_empty: true }).global_vars;
    expect(vars.pool_removal).toEqual({ name: 'volumes', confirm_name: 'volumes', allow_non_empty: true, protected_pools: [] });
  });

  it('changes nothing in the cluster model after a run', () => {
    expect('onSuccess' in removePoolPlugin).toBe(false);
  });
});

describe('add_pool and remove_pool Ansible content', () => {
  const ansibleDir = fileURLToPath(new URL('../ansible/', import.meta.url));
  const makeTmp = scratchDirs('carapace-pool-playbooks-');
  const inventory = { mons: { hosts: ['10.0.0.11'] }, _meta: { hostvars: { '10.0.0.11': { ansible_host: '10.0.0.11', ansible_connection: 'local' } } } };

  for (const [playbook, vars] of [
    ['add_pool/playbook.yml', configure(addPoolPlugin, { name: 'p' }).global_vars],
    ['remove_pool/playbook.yml', configure(removePoolPlugin, { name: 'p', confirm_name: 'p' }).global_vars],
    ['remove_pool/cleanup.yml', configure(removePoolPlugin, { name: 'p', confirm_name: 'p' }).global_vars],
  ] as const) {
    it(`${playbook} passes ansible-playbook --syntax-check`, async () => {
      const tmp = await makeTmp();
      await writeRunInputs(tmp, inventory, vars);
      const result = await syntaxCheck(tmp, join(ansibleDir, playbook));
      expect(result.stderr).not.toMatch(/ERROR|WARNING/);
      expect(result.code).toBe(0);
    }, 60_000);
  }
});

describe('carapace_ceph_pool checks its input again before it asks Ceph anything', () => {
  const makeTmp = scratchDirs('carapace-pool-module-');

  /** Runs the module on localhost (`ansible -m`), where no cluster answers; returns its result. */
  async function poolModule(args: Record<string, unknown>): Promise<{ failed: boolean; msg?: string; carapace_steps?: { name: string; result: string }[] }> {
    const tmp = await makeTmp();
    const env = { ...ansibleEnv(tmp), ANSIBLE_LOAD_CALLBACK_PLUGINS: '1', ANSIBLE_STDOUT_CALLBACK: 'oneline', ANSIBLE_PYTHON_INTERPRETER: '/usr/bin/python3' };
    const result = await run('ansible', ['localhost', '-i', 'localhost,', '-c', 'local', '-m', 'carapace_ceph_pool', '-a', JSON.stringify({ cli_timeout: 5, ...args })], tmp, env);
    const line = /^localhost \| ([A-Z!]+) => (\{.*\})$/m.exec(result.stdout);
    if (line?.[2] === undefined) throw new Error(`no result: ${result.stdout}\n${result.stderr}`);
    return { ...(JSON.parse(line[2]) as object), failed: line[1] === 'FAILED!' };
  }

  it('refuses a removal whose confirm_name differs, and a cinder pool it is told to protect', async () => {
    const mismatch = await poolModule({ mode: 'remove', removal: { name: 'scratch', confirm_name: 'scratch2', allow_non_empty: false, protected_pools: [] } });
    expect(mismatch.failed).toBe(true);
    expect(mismatch.msg).toBe("confirm_name 'scratch2' is not the pool's name 'scratch': nothing deleted");
    expect(mismatch.carapace_steps?.map((s) => [s.result, s.name])).toEqual([['error', `Refused: ${mismatch.msg}`]]);
    const cinder = await poolModule({ mode: 'remove', removal: { name: 'volumes', confirm_name: 'volumes', allow_non_empty: true, protected_pools: [...OPENSTACK_POOLS] } });
    expect(cinder.failed).toBe(true);
    expect(cinder.msg).toContain('not deleted without allow_cinder_pools');
  }, 60_000);

  it("refuses to make Ceph's own pools or a hidden one", async () => {
    for (const name of ['.mgr', '.hidden']) {
      const refused = await poolModule({ mode: 'add', pool: { ...REPLICATED, name } });
      expect(refused.failed).toBe(true);
      expect(refused.msg).toContain('is not a pool add_pool may make');
    }
  }, 60_000);
});
