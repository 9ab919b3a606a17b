// add_pool and remove_pool through the public API on a deployed cluster, checked on what
// Ceph says on a monitor host: a replicated and an erasure-coded pool with quotas; a rerun of
// both changes nothing; a converge of an existing pool, and a refused one; remove_pool refused
// at configuration time without the name repeated, for a cinder pool, and by the run for a
// pool holding an object (and cleanup.yml putting back what an interrupted run left); then
// the pools gone and mon_allow_pool_delete as it was.
//
// poolTests registers its `it` blocks in the caller's describe, after the caller's deploy:
// any deployed cluster of 3 hosts or more with OSDs on each will do (Ceph 16 or 18).
import { expect, it } from 'vitest';
import type { LabHost } from '../../lab/lab.js';
import { recapTotal, why, type CephSystem, type Json, type PlaybookRun } from './system.js';

export interface PoolContext {
  sys: CephSystem;
  clusterId: string;
  /** A monitor host of the cluster (admin keyring), where Ceph's answers are read. */
  monHost: LabHost;
}

const REPLICATED = 'e2e-rep';
const ERASURE = 'e2e-ec';
const GiB = 1024 ** 3;
/** Each block runs one to four playbooks on a small, shared machine. */
const IT_TIMEOUT = 20 * 60_000;

function log(line: string): void {
  process.stderr.write(`[pool.checks] ${line}\n`);
}

/** The run's time and its steps (the gates' answers), for the log. */
function logRun(what: string, run: PlaybookRun): void {
  log(`${what}: ${run.execution.data.state} in ${run.seconds.toFixed(1)} s`);
  for (const s of run.steps) {
    const took = Number(s.data.time_finished) - Number(s.data.time_started);
    log(`  ${took.toFixed(1)} s  ${s.data.name}`);
  }
}

/**
 * Whether a step of add_pool is a change. The API's steps carry no changed flag (the recap
 * counts changed tasks): the module names every change, `X → Y`, `created`, `made`, `enabled`,
 * `on`.
 */
function isChange(name: string): boolean {
  return / → |^pool \S+ created|^erasure-code profile .* made|^CRUSH rule .* made|application .* enabled|allow_ec_overwrites on/.test(name);
}

function names(run: PlaybookRun): string[] {
  return run.steps.map((s) => String(s.data.name));
}

/** What a pool is, as `ceph osd pool ls detail` says, in the fields add_pool converges. */
function shape(pool: Json): Json {
  return {
    type: pool.type,
    size: pool.size,
    min_size: pool.min_size,
    crush_rule: pool.crush_rule,
    erasure_code_profile: pool.erasure_code_profile,
    pg_autoscale_mode: pool.pg_autoscale_mode,
    quota_max_bytes: pool.quota_max_bytes,
    quota_max_objects: pool.quota_max_objects,
    applications: Object.keys(pool.application_metadata ?? {}).sort(),
    ec_overwrites: String(pool.flags_names).split(',').includes('ec_overwrites'),
  };
}

/**
 * The e2e checks of add_pool and remove_pool, as `it` blocks of the caller's describe.
 * `ctx` is read when each block runs (after the caller's deploy).
 */
export function poolTests(ctx: () => PoolContext): void {
  const configurations: Record<string, Json> = {};
  const before: Record<string, Json> = {};
  let deleteSetting = '';

  const pools = async (): Promise<Record<string, Json>> => {
    const { sys, monHost } = ctx();
    const list = await sys.ceph<Json[]>(monHost, 'osd pool ls detail');
    return Object.fromEntries(list.map((p) => [p.pool_name as string, p]));
  };
  /** mon_allow_pool_delete in the central configuration's mon section ('' when unset). */
  const centralDeleteSetting = async (): Promise<string> => {
    const { sys, monHost } = ctx();
    const dump = await sys.ceph<Json[]>(monHost, 'config dump');
    return String(dump.find((e) => e.section === 'mon' && e.name === 'mon_allow_pool_delete')?.value ?? '');
  };
  const refusedConfiguration = async (hints: Record<string, unknown>): Promise<Json> => {
    const { sys, clusterId } = ctx();
    const res = await sys.api.call('POST', '/v1/playbook_configuration/', {
      name: 'remove_pool',
      cluster_id: clusterId,
      playbook_id: 'remove_pool',
      server_ids: [],
      hints: Object.entries(hints).map(([id, value]) => ({ id, value })),
    });
    expect(res.status, res.text).toBe(400);
    return res.json as Json;
  };

  it('add_pool makes a replicated pool with size, min_size, quotas and the rbd application', async () => {
    const { sys, clusterId } = ctx();
    deleteSetting = await centralDeleteSetting();
    configurations[REPLICATED] = await sys.configure('add_pool', clusterId, [], [
      { id: 'name', value: REPLICATED },
      { id: 'size', value: 3 },
      { id: 'min_size', value: 2 },
      { id: 'quota_max_bytes', value: GiB },
      { id: 'quota_max_objects', value: 1000 },
    ]);
    const run = await sys.execute(configurations[REPLICATED]);
    logRun('add_pool replicated', run);
    expect(run.execution.data.state, why(run)).toBe('completed');
    expect(names(run).some((n) => n.startsWith(`Ceph can place pool ${REPLICATED}: 3 hosts with up and in OSDs`)), why(run)).toBe(true);
    expect(names(run).some((n) => n.startsWith(`pool ${REPLICATED} created: replicated, one copy per host, size 3, min_size 2`)), why(run)).toBe(true);
    expect(names(run)).toContain(`pool ${REPLICATED}: application rbd enabled (rbd pool init)`);
    expect(names(run)).toContain(`pool ${REPLICATED}: quota_max_bytes 0 → ${GiB}`);
    expect(names(run).some((n) => /^pool e2e-rep: its \d+ PGs active\+clean/.test(n)), why(run)).toBe(true);
    const pool = (await pools())[REPLICATED] as Json;
    expect(shape(pool)).toMatchObject({ type: 1, size: 3, min_size: 2, pg_autoscale_mode: 'on', quota_max_bytes: GiB, quota_max_objects: 1000, applications: ['rbd'] });
    before[REPLICATED] = shape(pool);
  }, IT_TIMEOUT);

  it('add_pool makes an erasure-coded pool k=2 m=1, one chunk per host, with quotas, rbd and EC overwrites', async () => {
    const { sys, clusterId, monHost } = ctx();
    configurations[ERASURE] = await sys.configure('add_pool', clusterId, [], [
      { id: 'name', value: ERASURE },
      { id: 'type', value: 'erasure' },
      { id: 'ec_k', value: 2 },
      { id: 'ec_m', value: 1 },
      { id: 'crush_failure_domain', value: 'host' },
      { id: 'quota_max_bytes', value: 2 * GiB },
      { id: 'quota_max_objects', value: 500 },
    ]);
    const run = await sys.execute(configurations[ERASURE]);
    logRun('add_pool erasure', run);
    expect(run.execution.data.state, why(run)).toBe('completed');
    expect(names(run)).toContain(`erasure-code profile ${ERASURE}_profile made: k=2 m=1, one chunk per host`);
    expect(names(run)).toContain(`pool ${ERASURE}: allow_ec_overwrites on (for rbd; it cannot be turned off)`);
    const pool = (await pools())[ERASURE] as Json;
    expect(shape(pool)).toMatchObject({ type: 3, size: 3, erasure_code_profile: `${ERASURE}_profile`, quota_max_bytes: 2 * GiB, quota_max_objects: 500, applications: ['rbd'], ec_overwrites: true });
    const profile = await sys.ceph<Json>(monHost, `osd erasure-code-profile get ${ERASURE}_profile`);
    expect({ k: profile.k, m: profile.m, domain: profile['crush-failure-domain'] }).toEqual({ k: '2', m: '1', domain: 'host' });
    before[ERASURE] = shape(pool);
  }, IT_TIMEOUT);

  it('a rerun of both configurations changes nothing', async () => {
    const { sys } = ctx();
    for (const name of [REPLICATED, ERASURE]) {
      const run = await sys.execute(configurations[name] as Json);
      logRun(`add_pool ${name} again`, run);
      expect(run.execution.data.state, why(run)).toBe('completed');
      expect(recapTotal(run, 'changed'), why(run)).toBe(0);
      expect(names(run).filter(isChange), why(run)).toEqual([]);
      expect(names(run).some((n) => n.startsWith(`pool ${name} is already as asked`) && n.endsWith('nothing changed')), why(run)).toBe(true);
      expect(shape((await pools())[name] as Json)).toEqual(before[name]);
    }
  }, IT_TIMEOUT);

  it('add_pool converges an existing pool (quota, autoscale mode) and refuses what Ceph cannot change, changing nothing', async () => {
    const { sys, clusterId } = ctx();
    const run = await sys.run('add_pool', clusterId, [], [
      { id: 'name', value: REPLICATED },
      { id: 'size', value: 3 },
      { id: 'min_size', value: 2 },
      { id: 'pg_autoscale_mode', value: 'warn' },
      { id: 'quota_max_bytes', value: GiB },
      { id: 'quota_max_objects', value: 2000 },
    ]);
    logRun('add_pool converge', run);
    expect(run.execution.data.state, why(run)).toBe('completed');
    expect(names(run).filter(isChange), why(run)).toEqual([`pool ${REPLICATED}: pg_autoscale_mode on → warn`, `pool ${REPLICATED}: quota_max_objects 1000 → 2000`]);
    expect(shape((await pools())[REPLICATED] as Json)).toEqual({ ...before[REPLICATED], pg_autoscale_mode: 'warn', quota_max_objects: 2000 });

    const refused = await sys.run('add_pool', clusterId, [], [
      { id: 'name', value: REPLICATED },
      { id: 'type', value: 'erasure' },
      { id: 'quota_max_objects', value: 5 },
    ]);
    logRun('add_pool refused converge', refused);
    expect(refused.execution.data.state, why(refused)).toBe('failed');
    expect(names(refused).some((n) => n.includes(`pool ${REPLICATED} exists and cannot be converged: it is replicated, not erasure`)), why(refused)).toBe(true);
    expect(shape((await pools())[REPLICATED] as Json)).toMatchObject({ type: 1, quota_max_objects: 2000 });
  }, IT_TIMEOUT);

  it('remove_pool is refused at configuration time without the name repeated, with another name, or for a cinder pool', async () => {
    const missing = await refusedConfiguration({ name: REPLICATED });
    expect(missing.error).toBe('InvalidHintError');
    expect(String(missing.message)).toContain(`repeat the pool's name (${REPLICATED})`);
    const wrong = await refusedConfiguration({ name: REPLICATED, confirm_name: ERASURE });
    expect(wrong.error).toBe('InvalidHintError');
    expect(String(wrong.message)).toContain('nothing is deleted');
    const cinder = await refusedConfiguration({ name: 'volumes', confirm_name: 'volumes' });
    expect(cinder.error).toBe('InvalidHintError');
    expect(String(cinder.message)).toContain('allow_cinder_pools');
    expect(Object.keys(await pools())).toContain(REPLICATED);
  }, IT_TIMEOUT);

  it('remove_pool refuses a pool holding an object without allow_non_empty; cleanup.yml puts back the mon_allow_pool_delete an interrupted run left on', async () => {
    const { sys, clusterId, monHost } = ctx();
    await monHost.exec(`echo carapace > /tmp/pool-object && rados -p ${REPLICATED} put e2e-object /tmp/pool-object`);
    // what a run canceled between turning deletion on and putting it back leaves: the mark and the setting
    const mark = JSON.stringify({ previous: deleteSetting === '' ? null : deleteSetting, since: 0 });
    await monHost.exec(`ceph config-key set carapace/pool_delete '${mark}' && ceph config set mon mon_allow_pool_delete true`, { timeoutMs: 90_000 });
    const run = await sys.run('remove_pool', clusterId, [], [
      { id: 'name', value: REPLICATED },
      { id: 'confirm_name', value: REPLICATED },
    ]);
    logRun('remove_pool non-empty', run);
    expect(run.execution.data.state, why(run)).toBe('failed');
    expect(names(run).some((n) => n.includes(`pool ${REPLICATED} holds objects`) && n.includes('e2e-object') && n.includes('not deleted without allow_non_empty')), why(run)).toBe(true);
    expect(Object.keys(await pools())).toContain(REPLICATED);
    // the failed run's cleanup.yml
    expect(names(run).some((n) => n.startsWith('mon_allow_pool_delete back to')), why(run)).toBe(true);
    expect(await centralDeleteSetting()).toBe(deleteSetting);
    const { stdout: marks } = await monHost.exec('ceph config-key ls', { timeoutMs: 90_000 });
    expect(marks).not.toContain('carapace/pool_delete');
  }, IT_TIMEOUT);

  it('remove_pool deletes the pools once everything is right: gone, their profile and rule too, mon_allow_pool_delete as it was; a rerun has nothing to do', async () => {
    const { sys, clusterId, monHost } = ctx();
    const ec = await sys.run('remove_pool', clusterId, [], [
      { id: 'name', value: ERASURE },
      { id: 'confirm_name', value: ERASURE },
    ]);
    logRun('remove_pool erasure', ec);
    expect(ec.execution.data.state, why(ec)).toBe('completed');
    expect(names(ec).some((n) => n.startsWith(`Ceph says pool ${ERASURE} is empty`)), why(ec)).toBe(true);
    expect(names(ec)).toContain(`pool ${ERASURE} deleted`);
    expect(names(ec)).toContain(`erasure-code profile ${ERASURE}_profile (made by add_pool) removed`);
    expect(names(ec)).toContain(`CRUSH rule ${ERASURE} (made by Ceph for the pool) removed`);
    if (deleteSetting !== 'true') {
      expect(names(ec).some((n) => n.startsWith('mon_allow_pool_delete true for the deletion')), why(ec)).toBe(true);
      expect(names(ec).some((n) => n.startsWith('mon_allow_pool_delete back to')), why(ec)).toBe(true);
    }
    expect(Object.keys(await pools())).not.toContain(ERASURE);
    expect(await sys.ceph<string[]>(monHost, 'osd erasure-code-profile ls')).not.toContain(`${ERASURE}_profile`);
    expect(await sys.ceph<string[]>(monHost, 'osd crush rule ls')).not.toContain(ERASURE);

    const rep = await sys.run('remove_pool', clusterId, [], [
      { id: 'name', value: REPLICATED },
      { id: 'confirm_name', value: REPLICATED },
      { id: 'allow_non_empty', value: true },
    ]);
    logRun('remove_pool replicated, non-empty allowed', rep);
    expect(rep.execution.data.state, why(rep)).toBe('completed');
    expect(names(rep).some((n) => n.startsWith(`pool ${REPLICATED} holds objects, deleted as allow_non_empty says`)), why(rep)).toBe(true);
    expect(Object.keys(await pools())).not.toContain(REPLICATED);
    expect(await centralDeleteSetting()).toBe(deleteSetting);
    const { stdout: marks } = await monHost.exec('ceph config-key ls', { timeoutMs: 90_000 });
    expect(marks).not.toContain('carapace/pool_delete');

    const again = await sys.run('remove_pool', clusterId, [], [
      { id: 'name', value: REPLICATED },
      { id: 'confirm_name', value: REPLICATED },
    ]);
    logRun('remove_pool again', again);
    expect(again.execution.data.state, why(again)).toBe('completed');
    expect(recapTotal(again, 'changed'), why(again)).toBe(0);
    expect(names(again)).toContain(`pool ${REPLICATED} does not exist: nothing to do`);
  }, IT_TIMEOUT);
}
