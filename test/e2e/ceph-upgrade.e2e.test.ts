// Day 2 for real, end to end through the public API: Debian 12's Ceph 16 (Pacific) deployed
// on three discovered lab hosts with two disks each, and a client on a fourth host writing and
// reading every 200 ms all along:
// - upgrade_ceph to Debian 13's Ceph 18 (Reef) from the lab image's repository with an OSD
//   of the last host stopped: Ceph's gate refuses the first OSD host, the managers and
//   monitors are upgraded, no OSD was touched, no flag is left;
// - the OSD started again, the same configuration finishes the upgrade; once more, it
//   restarts nothing;
// - restart_services of the OSDs: each restarted, none failed the client;
// - update_ceph_configuration: options set centrally and in ceph.conf, the OSDs restarted
//   for one read at start; once more, nothing changes; an option removed;
// - restart_services canceled during an OSD host's restart: canceled, its flag unset.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LabHost } from '../lab/lab.js';

import { deployAndCheck, LAB_HEALTH_CHECKS, waitHealthy, type DeployedCluster } from './ceph/deploy.checks.js';
import { runAndCancelAfter } from './ceph/purge.checks.js';
import { CephSystem, why, type Json } from './ceph/system.js';
import {
  daemonStarts,
  expectClientNeverInterrupted,
  expectHeldCheckSeen,
  expectNoHeldOptions,
  expectNoNoout,
  IoProbe,
  reefHints,
  runningVersions,
  TestPhases,
  upgradeAndCheck,
  writeObjects,
} from './ceph/upgrade.checks.js';
import { eventually } from '@carapace/test-support/eventually';

const DISKS = 2;
/** Three hosts make the cluster; the fourth runs the client. */
const DEPLOYED = 3;
const DAEMONS = 3 + 3 + DEPLOYED * DISKS;

function log(line: string): void {
  process.stderr.write(`[ceph-upgrade.e2e] ${line}\n`);
}

describe('day 2 of real Ceph daemons through the API: a rolling upgrade and rolling restarts', { timeout: 40 * 60_000 }, () => {
  let sys: CephSystem;
  let deployed: DeployedCluster;
  let upgrade: Json;
  let client: IoProbe;
  let stoppedOsd: string;

  const phases = new TestPhases();

  beforeAll(async () => {
    sys = await CephSystem.start({ name: 'e2e-upgrade', hosts: DEPLOYED + 1, disks: DISKS });
  }, 40 * 60_000);

  beforeEach((ctx) => {
    phases.mark(ctx.task.name);
  });

  afterAll(async () => {
    await client?.stop().catch(() => undefined);
    await sys?.stop();
  }, 180_000);

  const mon = (): LabHost => sys.host(deployed.monIds[0] as string);
  const clusterHosts = (): LabHost[] => deployed.serverIds.map((id) => sys.host(id));
  const last = (): LabHost => clusterHosts()[DEPLOYED - 1] as LabHost;
  const osdStarts = async () => Object.fromEntries(Object.entries(await daemonStarts(clusterHosts())).filter(([unit]) => unit.includes('/ceph-osd@')));

  it('deploys Ceph 16 (Pacific) on 3 hosts x 2 disks, writes objects, starts the client', async () => {
    deployed = await deployAndCheck(
      sys,
      sys.servers.slice(0, DEPLOYED).map((s) => s.id as string),
      DISKS,
    );
    for (const v of (await runningVersions(sys, mon())).overall ?? []) expect(v).toMatch(/^16\.2\./);
    await writeObjects(sys, mon());
    client = new IoProbe(sys.lab.hosts[DEPLOYED] as LabHost, mon());
    await client.start();
  });

  it("upgrade_ceph with an OSD of the last host down: Ceph's gate refuses the first OSD host, the managers and monitors are upgraded, no OSD touched, no flag left", async () => {
    stoppedOsd = (await sys.ceph<number[]>(mon(), `osd ls-tree ${last().name}`))[0]?.toString() ?? '';
    expect(stoppedOsd).not.toBe('');
    await last().exec(`systemctl stop ceph-osd@${stoppedOsd}`);
    await eventually('the OSD down', async () => ((await sys.ceph<Json>(mon(), 'osd stat')).num_up_osds === DEPLOYED * DISKS - 1 ? true : undefined), 60_000);
    const before = await osdStarts();
    upgrade = await sys.configure(
      'upgrade_ceph',
      deployed.clusterId,
      [],
      await reefHints(mon(), { warnings: ['OSD_DOWN', 'PG_DEGRADED'], extra: [{ id: 'ok_to_stop_timeout', value: 20 }] }),
    );
    const refused = await sys.execute(upgrade, 30 * 60_000);
    expect(refused.execution.data.state, why(refused)).toBe('failed');
    const failedStep = refused.steps.find((s) => s.data.result === 'error');
    expect(failedStep?.data.name, why(refused)).toMatch(/^Ask Ceph whether osd\.\d+, osd\.\d+ may stop$/);
    expect(failedStep?.data.server_id).toBe(deployed.serverIds[0]);
    expect(JSON.stringify(failedStep?.data.error), why(refused)).toMatch(/may not stop \(asked for \d+ s\).*ok_to_stop=False/);
    log(`refused: ${String((failedStep?.data.error as Json | undefined)?.msg)}`);
    const versions = await runningVersions(sys, mon());
    for (const kind of ['mon', 'mgr']) for (const v of versions[kind] ?? []) expect(v, JSON.stringify(versions)).toMatch(/^18\.2\./);
    for (const v of versions.osd ?? []) expect(v, JSON.stringify(versions)).toMatch(/^16\.2\./);
    expect(await osdStarts()).toEqual(before);
    expect(refused.log).toContain('[carapace runner] cleanup.yml completed');
    await expectNoNoout(sys, mon());
  });

  it('finishes the upgrade with the same configuration once the OSD is back: every daemon on Reef, healthy, no flag, objects intact', async () => {
    // The test's own start of the OSD, outside any execution, moves PGs' primaries back as
    // Carapace's restarts do: the client gets the same late-operation check for it (which
    // the test removes again once the cluster is healthy).
    await client.holdCheck();
    await last().exec(`systemctl start ceph-osd@${stoppedOsd}`);
    // Healthy but for the upgrade under way: the OSD started again runs Reef (its host's
    // packages were installed with its manager), so Ceph may say OSD_UPGRADE_FINISHED.
    await eventually(
      'the cluster healthy with the OSD back',
      async () => {
        const status = await sys.ceph<Json>(mon(), 'status');
        const checks = Object.keys(status.health?.checks ?? {}).filter((c) => !LAB_HEALTH_CHECKS.has(c) && c !== 'OSD_UPGRADE_FINISHED');
        return checks.length === 0 && status.pgmap?.num_pgs === (status.pgmap?.pgs_by_state ?? []).filter((p: Json) => p.state_name === 'active+clean').reduce((n: number, p: Json) => n + Number(p.count), 0) ? true : undefined;
      },
      300_000,
    );
    await client.releaseCheck();
    // The OSD started again comes back on Reef: its host's packages were installed with its manager.
    const pacificOsds = (await sys.ceph<Json[]>(mon(), 'osd metadata')).filter((m) => String(m.ceph_version_short).startsWith('16.2.')).length;
    log(`with the OSD back: ${JSON.stringify(await runningVersions(sys, mon()))}, ${pacificOsds} OSDs on Pacific`);
    expect(pacificOsds).toBeGreaterThanOrEqual(DEPLOYED * DISKS - 1);
    const run = await upgradeAndCheck(sys, deployed, upgrade, DISKS);
    log(`upgrade finished: ${run.seconds.toFixed(0)} s`);
    const daemonSteps = run.steps.filter((s) => /^(mon|mgr|osd)\.\S+ on \S+: /.test(s.data.name));
    for (const s of daemonSteps) log(`step: ${s.data.name}`);
    expect(daemonSteps.filter((s) => /^osd\.\S+ on \S+: 16\.2\.\d+ → 18\.2\.\d+, down \d+\.\d s$/.test(s.data.name)).length, why(run)).toBe(pacificOsds);
    expect(daemonSteps.filter((s) => /^(mon|mgr|osd)\.\S+ on \S+: already 18\.2\.\d+, not restarted$/.test(s.data.name)).length, why(run)).toBe(
      DAEMONS - pacificOsds,
    );
    expect(run.steps.some((s) => s.data.name === 'require_osd_release: pacific → reef'), why(run)).toBe(true);
  });

  it('runs the same configuration again: completes, restarts nothing', async () => {
    const before = await daemonStarts(clusterHosts());
    expect(Object.keys(before).length).toBe(DAEMONS);
    const again = await sys.execute(upgrade, 15 * 60_000);
    expect(again.execution.data.state, why(again)).toBe('completed');
    expect(await daemonStarts(clusterHosts())).toEqual(before);
    expect(again.steps.filter((s) => /: already 18\.2\.\d+, not restarted$/.test(s.data.name)).length, why(again)).toBe(DAEMONS);
  });

  it('restart_services of the OSDs: each OSD restarted once, host by host, nothing else', async () => {
    const before = await daemonStarts(clusterHosts());
    const run = await sys.run('restart_services', deployed.clusterId, [], [{ id: 'services', value: 'osd' }]);
    expect(run.execution.data.state, why(run)).toBe('completed');
    const after = await daemonStarts(clusterHosts());
    for (const [unit, since] of Object.entries(before)) {
      if (unit.includes('/ceph-osd@')) expect(after[unit], unit).not.toBe(since);
      else expect(after[unit], unit).toBe(since);
    }
    expect(run.steps.filter((s) => /^osd\.\S+ on \S+: 18\.2\.\d+, restarted, down \d+\.\d s$/.test(s.data.name)).length, why(run)).toBe(DEPLOYED * DISKS);
    await expectNoNoout(sys, mon());
  });

  it("update_ceph_configuration: a central option, one read at start (each OSD restarted, gated) and a ceph.conf one (applied at runtime); a rerun changes nothing; a removal", async () => {
    const before = await daemonStarts(clusterHosts());
    const options = 'osd osd_op_num_shards_hdd 2; mon mon_allow_pool_delete true; osd mempool_debug true';
    const configuration = await sys.configure('update_ceph_configuration', deployed.clusterId, [], [{ id: 'options', value: options }]);
    const run = await sys.execute(configuration, 20 * 60_000);
    expect(run.execution.data.state, why(run)).toBe('completed');
    for (const s of run.steps.filter((x) => /^(osd|mon|mgr)[ .]/.test(x.data.name))) log(`step: ${s.data.name}`);
    // central: what the monitors keep
    expect(String(await sys.ceph(mon(), 'config get osd.0 osd_op_num_shards_hdd'))).toBe('2');
    expect(String(await sys.ceph(mon(), `config get mon.${mon().name} mon_allow_pool_delete`))).toBe('true');
    // mempool_debug cannot be kept by the monitors: in ceph.conf on every host, and applied at runtime
    const confs = await Promise.all(clusterHosts().map(async (h) => (await h.exec('cat /etc/ceph/ceph.conf; stat -c %Y /etc/ceph/ceph.conf')).stdout));
    for (const conf of confs) expect(conf).toMatch(/\[osd\]\nmempool_debug = true\n/);
    const osds = (await sys.ceph<number[]>(mon(), 'osd ls')).map(String);
    expect(osds.length).toBe(DEPLOYED * DISKS);
    for (const id of osds) {
      expect(await sys.ceph<Json>(mon(), `tell osd.${id} config get mempool_debug`)).toEqual({ mempool_debug: 'true' });
      expect(await sys.ceph<Json>(mon(), `tell osd.${id} config get osd_op_num_shards_hdd`)).toEqual({ osd_op_num_shards_hdd: '2' });
    }
    // osd_op_num_shards_hdd is read at start: every OSD restarted, gated, nothing else
    expect(run.steps.filter((s) => /^osd\.\d+ on \S+: to restart, osd_op_num_shards_hdd is \d+, should be 2 \(read at start\)$/.test(s.data.name)).length, why(run)).toBe(DEPLOYED * DISKS);
    expect(run.steps.filter((s) => /^Ask Ceph whether osd\.\d+, osd\.\d+ may stop$/.test(s.data.name) && s.data.result === 'ok').length, why(run)).toBe(DEPLOYED);
    const after = await daemonStarts(clusterHosts());
    for (const [unit, since] of Object.entries(before)) {
      if (unit.includes('/ceph-osd@')) expect(after[unit], unit).not.toBe(since);
      else expect(after[unit], unit).toBe(since);
    }
    await expectNoNoout(sys, mon());
    expect((await sys.cluster(deployed.clusterId)).data.ceph_options).toEqual({
      osd: { osd_op_num_shards_hdd: '2', mempool_debug: 'true' },
      mon: { mon_allow_pool_delete: 'true' },
    });

    const again = await sys.execute(configuration, 10 * 60_000);
    expect(again.execution.data.state, why(again)).toBe('completed');
    expect(await daemonStarts(clusterHosts())).toEqual(after);
    expect(await Promise.all(clusterHosts().map(async (h) => (await h.exec('cat /etc/ceph/ceph.conf; stat -c %Y /etc/ceph/ceph.conf')).stdout))).toEqual(confs);
    expect(again.steps.filter((s) => /: already set centrally, no change$/.test(s.data.name)).length, why(again)).toBe(2);
    expect(again.steps.some((s) => s.data.name === 'No daemon needs a restart'), why(again)).toBe(true);
    expect(again.steps.some((s) => /applied at runtime$|: to restart, /.test(s.data.name)), why(again)).toBe(false);

    const removal = await sys.run('update_ceph_configuration', deployed.clusterId, [], [{ id: 'remove_options', value: 'mon mon_allow_pool_delete' }]);
    expect(removal.execution.data.state, why(removal)).toBe('completed');
    expect(String(await sys.ceph(mon(), `config get mon.${mon().name} mon_allow_pool_delete`))).toBe('false');
    expect((await sys.cluster(deployed.clusterId)).data.ceph_options).toEqual({ osd: { osd_op_num_shards_hdd: '2', mempool_debug: 'true' } });
    expect(await daemonStarts(clusterHosts())).toEqual(after);
  });

  it('the client never saw an operation fail (10 s each) or stall for 20 s, nor read back wrong data; it was told to look for late operations sooner while OSDs restarted, and no longer after', async () => {
    const report = await client.stop();
    await expectClientNeverInterrupted(report, phases, mon(), log);
    expectHeldCheckSeen(report);
    await expectNoHeldOptions(sys, mon());
  });

  it('restart_services canceled during an OSD host restart: canceled, the flag of that host unset', async () => {
    const configuration = await sys.configure('restart_services', deployed.clusterId, [], [{ id: 'services', value: 'osd' }]);
    const { run, canceledAfter } = await runAndCancelAfter(sys, configuration, /^Ask Ceph whether osd\.\d+, osd\.\d+ may stop$/);
    log(`canceled after: ${canceledAfter}`);
    expect(run.execution.data.state, run.log.slice(-3000)).toBe('canceled');
    expect(run.log).toContain('[carapace runner] cleanup.yml completed');
    await expectNoNoout(sys, mon());
    await waitHealthy(sys, deployed.monIds[0] as string, 'healthy after the canceled restart', 300_000);
  });
});
