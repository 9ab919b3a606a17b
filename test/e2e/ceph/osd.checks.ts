// add_osd and remove_osd through the API, checked on the daemons: new hosts' OSDs join up
// and in; a removal that would lose data is refused and leaves the OSDs in place; a removal
// of hosts whose data has copies elsewhere takes their OSDs out of the cluster, wipes their
// devices and loses no object. A second run of each configuration changes nothing.
import { expect } from 'vitest';
import type { LabHost } from '../../lab/lab.js';

import { expectOsds, waitHealthy, type DeployedCluster } from './deploy.checks.js';
import { recapTotal, why, type CephSystem, type Json, type PlaybookRun } from './system.js';
import { preview, tasksWith } from './preview.checks.js';
import { eventually } from '@carapace/test-support/eventually';

/** Runs a shell command on a host (as root) and returns its stdout; throws on a non-zero exit. */
async function sh(host: LabHost, command: string, timeoutMs = 90_000): Promise<string> {
  return (await host.exec(command, { timeoutMs })).stdout;
}

/** A `ceph` command without JSON output, bounded. */
async function cephCmd(host: LabHost, args: string): Promise<string> {
  return sh(host, `timeout 60 ceph --connect-timeout 30 ${args}`);
}

async function hostname(host: LabHost): Promise<string> {
  return (await sh(host, 'hostname -s')).trim();
}

/** The OSD ids the cluster places under a CRUSH host bucket (`[]` when there is no such bucket). */
export async function osdsOfHost(mon: LabHost, name: string): Promise<number[]> {
  const r = await mon.exec(`timeout 60 ceph --connect-timeout 30 osd ls-tree ${name} -f json`, { check: false, timeoutMs: 90_000 });
  if (r.exitCode !== 0) return [];
  return (JSON.parse(r.stdout || '[]') as number[]).sort((a, b) => a - b);
}

/** `ceph osd dump` entries by OSD id. */
async function osdDump(sys: CephSystem, mon: LabHost): Promise<Map<number, Json>> {
  const dump = await sys.ceph(mon, 'osd dump');
  return new Map((dump.osds as Json[]).map((o) => [o.osd as number, o]));
}

function expectCompleted(run: PlaybookRun): void {
  expect(run.execution.data.state, why(run)).toBe('completed');
  expect(recapTotal(run, 'failed'), why(run)).toBe(0);
}

function expectUnchanged(run: PlaybookRun): void {
  expectCompleted(run);
  expect(run.recap.size, why(run)).toBeGreaterThan(0);
  for (const [host, line] of run.recap) expect(line.changed, `${host} changed=${line.changed}\n${why(run)}`).toBe(0);
}

/** No key of the cluster appears in a run's log (keys are base64 starting with AQ, 40 characters). */
function expectNoKeyInLog(run: PlaybookRun): void {
  expect(run.log).not.toMatch(/AQ[A-Za-z0-9+/]{36}==/);
}

export interface AddedOsds {
  run: PlaybookRun;
  /** The second run (none with `rerun: false`). */
  again?: PlaybookRun;
  /** OSD ids by new server id. */
  osds: Map<string, number[]>;
}

/**
 * add_osd of `newServerIds` (each with `disksPerHost` free disks) to a deployed cluster: the
 * execution completes; each new host's OSDs are in its CRUSH bucket, up and in, and answer;
 * the hosts have the cluster's ceph.conf and no admin key; the cluster model lists them in
 * `osds` and they are in the cluster; healthy. A second run of the configuration: changed=0
 * (unless `rerun: false`: on a VM host under TCG a run costs minutes).
 */
export async function addOsdAndCheck(
  sys: CephSystem,
  deployed: DeployedCluster,
  newServerIds: string[],
  disksPerHost: number,
  opts: { hints?: { id: string; value: unknown }[]; rerun?: boolean } = {},
): Promise<AddedOsds> {
  const monId = deployed.monIds[0] as string;
  const mon = sys.host(monId);
  const before = (await sys.ceph(mon, 'osd stat')).num_osds as number;

  const configuration = await sys.configure('add_osd', deployed.clusterId, newServerIds, opts.hints ?? []);
  const run = await sys.execute(configuration);
  expectCompleted(run);
  expectNoKeyInLog(run);
  const osds = await expectAddedOsds(sys, deployed, newServerIds, disksPerHost, before);
  expect(run.log).toMatch(/health: HEALTH_(OK|WARN)/);
  await waitHealthy(sys, monId, `healthy with the new OSDs`);
  if (opts.rerun === false) return { run, osds };

  const again = await sys.execute(configuration);
  expectUnchanged(again);
  await expectOsds(sys, monId, before + newServerIds.length * disksPerHost);
  return { run, again, osds };
}

/**
 * What add_osd of `newServerIds` must have left, `before` the number of OSDs before it: each
 * new host's OSDs are in its CRUSH bucket, up and in, and answer; the hosts have the
 * cluster's ceph.conf and no admin key; the cluster model lists them in `osds` and they are
 * in the cluster. Returns each host's OSD ids.
 */
export async function expectAddedOsds(sys: CephSystem, deployed: DeployedCluster, newServerIds: string[], disksPerHost: number, before: number): Promise<Map<string, number[]>> {
  const monId = deployed.monIds[0] as string;
  const mon = sys.host(monId);
  await expectOsds(sys, monId, before + newServerIds.length * disksPerHost);
  const dump = await osdDump(sys, mon);
  const osds = new Map<string, number[]>();
  const monConf = await sh(mon, 'cat /etc/ceph/ceph.conf');
  for (const id of newServerIds) {
    const host = sys.host(id);
    const ids = await osdsOfHost(mon, await hostname(host));
    expect(ids.length, `OSDs under ${host.name}'s CRUSH bucket`).toBe(disksPerHost);
    for (const osd of ids) {
      expect(dump.get(osd), `osd.${osd}`).toMatchObject({ up: 1, in: 1 });
      expect((await cephCmd(mon, `tell osd.${osd} version`)).length).toBeGreaterThan(0);
      expect((await sh(host, `systemctl is-active ceph-osd@${osd}`)).trim()).toBe('active');
    }
    osds.set(id, ids);
    expect(await sh(host, 'cat /etc/ceph/ceph.conf'), `${host.name}: the cluster's ceph.conf`).toBe(monConf);
    if (!deployed.monIds.includes(id)) {
      expect((await host.exec('test -e /etc/ceph/ceph.client.admin.keyring', { check: false })).exitCode, `${host.name} has no admin key`).not.toBe(0);
    }
    expect((await sys.server(id)).data.cluster_id).toBe(deployed.clusterId);
  }
  const cluster = await sys.cluster(deployed.clusterId);
  const osdMembers = (cluster.data.configuration.osds as Json[]).map((m) => m.server_id as string);
  for (const id of [...deployed.osdIds, ...newServerIds]) expect(osdMembers).toContain(id);
  return osds;
}

/**
 * add_osd with `dmcrypt: true` on hosts without device-mapper (this kind of machine): the
 * execution fails in the pre-flight with the reason, before anything changed: no ceph.conf
 * and no OSD on the hosts, the servers not in the cluster, the cluster model as before.
 */
export async function addOsdDmcryptRefusedAtPreflight(sys: CephSystem, deployed: DeployedCluster, newServerIds: string[]): Promise<PlaybookRun> {
  const before = (await sys.cluster(deployed.clusterId)).data.configuration as Json;
  const osdsBefore = (await sys.ceph(sys.host(deployed.monIds[0] as string), 'osd stat')).num_osds as number;
  const run = await sys.run('add_osd', deployed.clusterId, newServerIds, [{ id: 'dmcrypt', value: true }]);
  expect(run.execution.data.state, why(run)).toBe('failed');
  expect(run.log).toContain('dmcrypt is requested but');
  expect(run.log).toMatch(/has no device-mapper/);
  const failed = run.steps.filter((s: Json) => s.data.result === 'error');
  expect(failed.length).toBeGreaterThan(0);
  expect(failed.every((s: Json) => s.data.role === 'ceph_preflight'), JSON.stringify(failed.map((s: Json) => [s.data.role, s.data.name]))).toBe(true);
  for (const [host, line] of run.recap) expect(line.changed, host).toBe(0);
  for (const id of newServerIds) {
    const host = sys.host(id);
    expect((await host.exec('test -e /etc/ceph/ceph.conf', { check: false })).exitCode, host.name).not.toBe(0);
    expect((await host.exec('pgrep -x ceph-osd', { check: false })).stdout.trim(), host.name).toBe('');
    expect((await sys.server(id)).data.cluster_id).toBeNull();
  }
  expect((await sys.cluster(deployed.clusterId)).data.configuration).toEqual(before);
  expect((await sys.ceph(sys.host(deployed.monIds[0] as string), 'osd stat')).num_osds).toBe(osdsBefore);
  return run;
}

/** Writes `count` objects of random data to a pool from a monitor; returns name -> sha256. */
async function writeObjects(mon: LabHost, pool: string, count: number): Promise<Map<string, string>> {
  const sums = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    const name = `obj-${i}`;
    const out = await sh(mon, `f=$(mktemp) && head -c ${64 * 1024 + i * 977} /dev/urandom > $f && timeout 60 rados -p ${pool} put ${name} $f && sha256sum < $f && rm -f $f`);
    sums.set(name, out.trim().split(/\s+/)[0] ?? '');
  }
  return sums;
}

/** Reads every object back with `rados get` and compares its sha256. */
async function expectObjects(mon: LabHost, pool: string, sums: Map<string, string>): Promise<void> {
  for (const [name, sum] of sums) {
    const out = await sh(mon, `f=$(mktemp) && timeout 60 rados -p ${pool} get ${name} $f && sha256sum < $f && rm -f $f`);
    expect(out.trim().split(/\s+/)[0], `${pool}/${name}`).toBe(sum);
  }
}

/** Creates a replicated pool (8 PGs, application tag set so health does not warn) and waits until its PGs are active+clean. */
async function createPool(mon: LabHost, pool: string, rule?: string): Promise<void> {
  await cephCmd(mon, `osd pool create ${pool} 8 8 replicated${rule ? ` ${rule}` : ''}`);
  await cephCmd(mon, `osd pool application enable ${pool} carapace-e2e`);
}

async function waitClean(sys: CephSystem, mon: LabHost, what: string): Promise<void> {
  await eventually(
    what,
    async () => {
      const pg = await sys.ceph(mon, 'pg stat');
      const states = (pg.pg_summary?.num_pg_by_state ?? []) as Json[];
      const total = pg.pg_summary?.num_pgs as number;
      const clean = states.filter((s) => s.name === 'active+clean').reduce((n, s) => n + (s.num as number), 0);
      return total > 0 && clean === total ? true : undefined;
    },
    180_000,
  );
}

async function deletePool(mon: LabHost, pool: string): Promise<void> {
  await cephCmd(mon, 'config set mon mon_allow_pool_delete true');
  await cephCmd(mon, `osd pool delete ${pool} ${pool} --yes-i-really-really-mean-it`);
  await cephCmd(mon, 'config rm mon mon_allow_pool_delete');
}

/**
 * remove_osd that would lose data: a pool of size 1 whose CRUSH rule places it only under
 * the host's bucket holds objects; remove_osd with a short safe_to_destroy_timeout fails
 * saying why, and leaves everything in place: the host's OSDs up, in and running, the
 * objects readable, the server in the cluster model. The pool and rule are removed again.
 */
export async function removeOsdRefusedWhenDataWouldBeLost(
  sys: CephSystem,
  deployed: DeployedCluster,
  serverId: string,
  timeoutSeconds = 20,
  opts: { previewFirst?: boolean } = {},
): Promise<PlaybookRun> {
  const monId = deployed.monIds[0] as string;
  const mon = sys.host(monId);
  const host = sys.host(serverId);
  const name = await hostname(host);
  const before = await osdsOfHost(mon, name);
  expect(before.length, `${host.name} has OSDs`).toBeGreaterThan(0);

  const pool = 'carapace-e2e-pinned';
  const rule = `carapace-e2e-only-${name}`;
  await cephCmd(mon, 'config set mon mon_allow_pool_size_one true');
  await cephCmd(mon, `osd crush rule create-replicated ${rule} ${name} osd`);
  await createPool(mon, pool, rule);
  await cephCmd(mon, `osd pool set ${pool} size 1 --yes-i-really-mean-it`);
  await waitClean(sys, mon, `the PGs of ${pool} active+clean`);
  const sums = await writeObjects(mon, pool, 4);

  let run: PlaybookRun;
  try {
    if (opts.previewFirst) {
      // A preview first: the gate's refusal is its answer, and nothing moved.
      const dumpBefore = await osdDump(sys, mon);
      const p = await preview(sys, await sys.configure('remove_osd', deployed.clusterId, [serverId], [{ id: 'safe_to_destroy_timeout', value: timeoutSeconds }], 'remove_osd preview'));
      expect(p.execution.data.state, p.log.slice(-3000)).toBe('failed');
      const refusals = tasksWith(p, 'would_fail').join('\n');
      expect(refusals, p.log.slice(-3000)).toMatch(/may be destroyed: their data has nowhere else to go: pool carapace-e2e-pinned keeps 1 copy/);
      expect(await osdsOfHost(mon, name)).toEqual(before);
      const dumpAfter = await osdDump(sys, mon);
      for (const osd of before) expect(dumpAfter.get(osd), `osd.${osd} after the preview`).toEqual(dumpBefore.get(osd));
      await expectObjects(mon, pool, sums);
    }
    run = await sys.run('remove_osd', deployed.clusterId, [serverId], [{ id: 'safe_to_destroy_timeout', value: timeoutSeconds }]);
    expect(run.execution.data.state, why(run)).toBe('failed');
    expect(run.log, why(run)).toMatch(/osd\.\d+(, osd\.\d+)*: not safe to destroy after \d+ s \(safe_to_destroy_timeout\): Error E[A-Z]+/);
    expect(run.log).toContain(`not safe to destroy after ${timeoutSeconds} s (safe_to_destroy_timeout)`);
    expect(run.log).toContain('Removing them now could lose data, so nothing was stopped, purged or wiped');
    expect(run.log).toContain('the OSDs were marked in again');
    const failed = run.steps.filter((s: Json) => s.data.result === 'error');
    expect(failed.map((s: Json) => s.data.role)).toContain('ceph_osd_remove');
    expect(run.steps.some((s: Json) => /Purge|Stop and disable|Wipe/.test(s.data.name as string) && s.data.result === 'changed')).toBe(false);

    expect(await osdsOfHost(mon, name)).toEqual(before);
    await eventually(
      `${host.name}'s OSDs up and in again`,
      async () => {
        const dump = await osdDump(sys, mon);
        return before.every((osd) => dump.get(osd)?.up === 1 && dump.get(osd)?.in === 1) ? true : undefined;
      },
      60_000,
    );
    for (const osd of before) expect((await sh(host, `systemctl is-active ceph-osd@${osd}`)).trim()).toBe('active');
    await expectObjects(mon, pool, sums);
    const cluster = await sys.cluster(deployed.clusterId);
    expect((cluster.data.configuration.osds as Json[]).map((m) => m.server_id)).toContain(serverId);
    expect((await sys.server(serverId)).data.cluster_id).toBe(deployed.clusterId);
  } finally {
    await deletePool(mon, pool);
    await cephCmd(mon, `osd crush rule rm ${rule}`);
    await cephCmd(mon, 'config rm mon mon_allow_pool_size_one');
  }
  await waitClean(sys, mon, 'every PG active+clean after the refused removal');
  await waitHealthy(sys, monId, 'healthy again');
  return run;
}

export interface RemovedOsds {
  run: PlaybookRun;
  /** The second run (none with `rerun: false`). */
  again?: PlaybookRun;
}

/**
 * remove_osd of `serverIds` while a replicated pool holds objects: the execution completes;
 * their OSDs are gone from the OSD map and CRUSH (their host buckets too), no ceph-osd runs on
 * the hosts, their devices carry no signature, the cluster is healthy and every object reads
 * back intact; the servers left the cluster model (cluster_id null). A second run of the
 * configuration: changed=0 (unless `rerun: false`).
 */
export async function removeOsdAndCheck(sys: CephSystem, deployed: DeployedCluster, serverIds: string[], opts: { rerun?: boolean } = {}): Promise<RemovedOsds> {
  const monId = deployed.monIds[0] as string;
  const mon = sys.host(monId);
  const pool = 'carapace-e2e-data';
  const removed = new Map<string, { name: string; ids: number[] }>();
  for (const id of serverIds) {
    const name = await hostname(sys.host(id));
    removed.set(id, { name, ids: await osdsOfHost(mon, name) });
  }
  const before = (await sys.ceph(mon, 'osd stat')).num_osds as number;
  const removedCount = [...removed.values()].reduce((n, r) => n + r.ids.length, 0);
  expect(removedCount).toBeGreaterThan(0);

  await createPool(mon, pool);
  await waitClean(sys, mon, `the PGs of ${pool} active+clean`);
  const sums = await writeObjects(mon, pool, 8);

  const configuration = await sys.configure('remove_osd', deployed.clusterId, serverIds);
  const run = await sys.execute(configuration);
  expectCompleted(run);
  expectNoKeyInLog(run);

  const dump = await osdDump(sys, mon);
  const tree = await sys.ceph(mon, 'osd tree');
  const treeIds = new Set((tree.nodes as Json[]).map((n) => n.id as number));
  const bucketNames = new Set((tree.nodes as Json[]).filter((n) => n.type === 'host').map((n) => n.name as string));
  for (const [id, { name, ids }] of removed) {
    const host = sys.host(id);
    for (const osd of ids) {
      expect(dump.has(osd), `osd.${osd} in the OSD map`).toBe(false);
      expect(treeIds.has(osd), `osd.${osd} in ceph osd tree`).toBe(false);
    }
    expect(bucketNames.has(name), `CRUSH bucket ${name}`).toBe(false);
    expect((await host.exec('pgrep -x ceph-osd', { check: false })).stdout.trim(), `${host.name}: ceph-osd`).toBe('');
    expect((await sh(host, 'ls -A /var/lib/ceph/osd')).trim(), `${host.name}: OSD directories`).toBe('');
    for (const disk of host.disks) {
      const blkid = await host.exec(`blkid -p ${disk.device}`, { check: false });
      expect(blkid.exitCode, `${host.name} ${disk.device}: ${blkid.stdout}`).toBe(2);
      expect((await host.exec(`ceph-bluestore-tool show-label --dev ${disk.device}`, { check: false })).exitCode).not.toBe(0);
    }
    if (!deployed.monIds.includes(id)) {
      expect((await host.exec('test -e /var/lib/ceph/bootstrap-osd/ceph.keyring', { check: false })).exitCode, `${host.name}: OSD bootstrap key`).not.toBe(0);
    }
    expect((await sys.server(id)).data.cluster_id).toBeNull();
  }
  await expectOsds(sys, monId, before - removedCount);
  const cluster = await sys.cluster(deployed.clusterId);
  const osdMembers = ((cluster.data.configuration.osds ?? []) as Json[]).map((m) => m.server_id as string);
  for (const id of serverIds) expect(osdMembers).not.toContain(id);
  await waitClean(sys, mon, 'every PG active+clean after the removal');
  await waitHealthy(sys, monId, 'healthy after the removal');
  await expectObjects(mon, pool, sums);

  let again: PlaybookRun | undefined;
  if (opts.rerun !== false) {
    again = await sys.execute(configuration);
    expectUnchanged(again);
    await expectOsds(sys, monId, before - removedCount);
  }

  await deletePool(mon, pool);
  return { run, again };
}
