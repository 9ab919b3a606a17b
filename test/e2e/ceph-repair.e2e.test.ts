// Day 2 repairs for real, end to end through the public API, on Ceph 16 (Pacific) deployed on
// three discovered lab hosts with two disks each, a client on a fourth host writing and
// reading every 200 ms all along:
// - maintenance_enter on the host of the active manager: Ceph's gates, the manager handed
//   over, noout on that host only, its daemons down (and still down after a reboot), no PG
//   remapped, the server in maintenance: a hello_world is refused there, even through a
//   configuration made before;
// - maintenance_enter on a second host, where Ceph's gate says no: refused, nothing changed;
// - maintenance_exit: the daemons back, HEALTH_OK, no flag left, the objects intact;
// - replace_osd: refused for an OSD of another host; after a disk failed (its OSD stopped, its
//   start overwritten), the same OSD id up and in on a new lab disk, never more OSDs;
// - the client never read back wrong data, and at most one operation ran out of its 10 s;
// - monitors, while a watcher asks quorum_status every 500 ms: cinder_integration first (its
//   client ceph.conf must follow), add_mon on a fifth host, remove_mon, replace_mon, a monitor
//   stopped (another removal is then refused by Carapace's quorum check, the stopped one may
//   be removed), down to one monitor; removing the last is refused with the reason; every
//   host's ceph.conf, the client ceph.conf and the cluster model name the monitors as they
//   are; the quorum was never lost;
// - pools (./ceph/pool.checks.ts): replicated and erasure-coded pools with quotas, a rerun
//   changes nothing, a converge, removal refused without the repeated name, then done.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LabHost } from '../lab/lab.js';
import { deployAndCheck, LAB_HEALTH_CHECKS, waitHealthy, type DeployedCluster } from './ceph/deploy.checks.js';
import { CephSystem, DISK_BYTES, logSteps, why, type Json, type PlaybookRun } from './ceph/system.js';
import { CLIENT_ROOT } from './ceph/cinder.checks.js';
import { poolTests } from './ceph/pool.checks.js';
import { confMonHost, expectConfNamesMonitors, monitorMap, monitorOnHost, QuorumWatcher, type QuorumReport } from './ceph/mon.checks.js';

import { expectClientNeverInterrupted, expectHeldCheckSeen, expectNoNoout, expectObjects, IoProbe, TestPhases, writeObjects } from './ceph/upgrade.checks.js';
import { eventually } from '@carapace/test-support/eventually';

const DISKS = 2;
/** Three hosts make the cluster; the fourth runs the client; the fifth becomes a monitor later. */
const DEPLOYED = 3;
const SPARE = DEPLOYED + 1;
/** What Ceph reports while one host's daemons are stopped under noout: nothing else may show. */
const MAINTENANCE_HEALTH = new Set(['OSD_DOWN', 'OSD_HOST_DOWN', 'PG_DEGRADED', 'MON_DOWN', 'OSD_FLAGS', ...LAB_HEALTH_CHECKS]);

function log(line: string): void {
  process.stderr.write(`[ceph-repair.e2e] ${line}\n`);
}

describe('day 2 repairs of real Ceph daemons through the API: host maintenance, a failed disk replaced, pools, monitors', { timeout: 30 * 60_000 }, () => {
  let sys: CephSystem;
  let deployed: DeployedCluster;
  let client: IoProbe;
  /** The server of the host in maintenance, and the lab host. */
  let inMaintenance: string;
  let earlierHello: Json;
  let watcher: QuorumWatcher | undefined;

  beforeAll(async () => {
    sys = await CephSystem.start({ name: 'e2e-repair', hosts: SPARE + 1, disks: DISKS });
  }, 30 * 60_000);

  const phases = new TestPhases();
  beforeEach((ctx) => {
    phases.mark(ctx.task.name);
  });

  afterAll(async () => {
    await client?.stop().catch(() => undefined);
    await watcher?.stop().catch(() => undefined);
    await sys?.stop();
  }, 180_000);

  const hostOf = (serverId: string): LabHost => sys.host(serverId);
  const monOutside = (): LabHost => hostOf(deployed.monIds.find((id) => id !== inMaintenance) as string);
  const units = async (host: LabHost): Promise<Record<string, string>> => {
    const { stdout } = await host.exec(
      "for u in $(systemctl list-unit-files --plain --no-legend 'ceph-mon@*' 'ceph-mgr@*' 'ceph-osd@*' | awk '{print $1}') $(systemctl list-units --all --plain --no-legend 'ceph-mon@*' 'ceph-mgr@*' 'ceph-osd@*' | awk '{print $1}'); do case $u in *@.service) ;; *) echo \"$u $(systemctl is-active $u) $(systemctl is-enabled $u)\";; esac; done | sort -u",
      { check: false },
    );
    return Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => {
          const [unit = '', ...state] = l.split(' ');
          return [unit, state.join(' ')];
        }),
    );
  };

  it('deploys Ceph 16 on 3 hosts x 2 disks, writes objects, starts the client', async () => {
    deployed = await deployAndCheck(
      sys,
      sys.servers.slice(0, DEPLOYED).map((s) => s.id as string),
      DISKS,
    );
    const mon = hostOf(deployed.monIds[0] as string);
    await writeObjects(sys, mon);
    // bounded at 30 s, not the upgrade's 10: see the verdict below
    client = new IoProbe(sys.lab.hosts[DEPLOYED] as LabHost, mon, 30);
    await client.start();
  });

  it("maintenance_enter on the active manager's host: gated, the manager handed over, noout there only, its daemons stopped and masked, nothing remapped", async () => {
    const mon = hostOf(deployed.monIds[0] as string);
    const active = String((await sys.ceph<Json>(mon, 'mgr dump')).active_name);
    inMaintenance = deployed.serverIds.find((id) => hostOf(id).name === active) as string;
    expect(inMaintenance, `the active manager ${active} runs on a cluster host`).toBeDefined();
    const host = hostOf(inMaintenance);
    const osds = (await sys.ceph<number[]>(mon, `osd ls-tree ${host.name}`)).map(String);
    expect(osds.length).toBe(DISKS);
    earlierHello = await sys.configure('hello_world', deployed.clusterId, [inMaintenance]);

    const run = await sys.run('maintenance_enter', deployed.clusterId, [inMaintenance]);
    expect(run.execution.data.state, why(run)).toBe('completed');
    log(`enter: ${run.seconds.toFixed(1)} s`);
    logSteps(run, log);
    const names = run.steps.map((s) => s.data.name as string);
    expect(names.some((n) => n.startsWith(`Ceph says mon.${host.name} may stop`)), why(run)).toBe(true);
    expect(names.some((n) => n.startsWith(`Ceph says osd.${osds[0]}, osd.${osds[1]} may stop: ok_to_stop=True`)), why(run)).toBe(true);
    expect(names.some((n) => n.startsWith(`mgr.${active} handed over: mgr.`)), why(run)).toBe(true);
    expect(names, why(run)).toContain(`noout set on ${host.name} only`);
    // its monitor stopped only once every PG had re-peered without its OSDs (issue 27: an election in the middle of peering held client IO)
    const wentDown = names.findIndex((n) => /^osd\.\d+, osd\.\d+ down \(noout/.test(n));
    expect(wentDown, why(run)).toBeGreaterThanOrEqual(0);
    expect(names.findIndex((n) => n.startsWith('Every PG active again without them: all ')), why(run)).toBeGreaterThan(wentDown);

    // the server is in maintenance; the manager runs elsewhere
    expect((await sys.server(inMaintenance)).data.state).toBe('maintenance_no_reconfig');
    const outside = monOutside();
    expect(String((await sys.ceph<Json>(outside, 'mgr dump')).active_name)).not.toBe(active);
    // its daemons stopped and masked
    const here = await units(host);
    expect(Object.keys(here).length, JSON.stringify(here)).toBe(2 + DISKS);
    for (const [unit, state] of Object.entries(here)) expect(state, unit).toBe('inactive masked');
    // noout on that host only, the OSDs down but in, no PG remapped, the quorum without it
    const dump = await sys.ceph<Json>(outside, 'osd dump');
    expect(dump.crush_node_flags).toEqual({ [host.name]: ['noout'] });
    expect(String(dump.flags)).not.toMatch(/noout/);
    for (const o of dump.osds as Json[]) expect(o.in, `osd.${o.osd} in`).toBe(1);
    expect((dump.osds as Json[]).filter((o) => o.up === 0).map((o) => String(o.osd)).sort()).toEqual([...osds].sort());
    const quorum = await sys.ceph<Json>(outside, 'quorum_status');
    expect(quorum.quorum_names).not.toContain(host.name);
    expect(quorum.quorum_names.length).toBe(DEPLOYED - 1);
    const status = await sys.ceph<Json>(outside, 'status');
    const checks = Object.keys(status.health?.checks ?? {});
    expect(checks.filter((c) => !MAINTENANCE_HEALTH.has(c)), JSON.stringify(status.health)).toEqual([]);
    expect(JSON.stringify(status.pgmap?.pgs_by_state ?? [])).not.toMatch(/remapped|backfill|recover/);
    log(`health in maintenance: ${checks.join(', ')}`);
  });

  it('keeps the daemons down across a reboot of the host', async () => {
    const host = hostOf(inMaintenance);
    await host.reboot();
    const here = await units(host);
    for (const [unit, state] of Object.entries(here)) expect(state, unit).toBe('inactive masked');
    const dump = await sys.ceph<Json>(monOutside(), 'osd dump');
    expect((dump.osds as Json[]).filter((o) => o.up === 0).length).toBe(DISKS);
  });

  it('refuses any other playbook on the host in maintenance, also through a configuration made before', async () => {
    const refusedConfiguration = async (playbookId: string): Promise<void> => {
      const res = await sys.api.call('POST', '/v1/playbook_configuration/', { name: playbookId, cluster_id: deployed.clusterId, playbook_id: playbookId, server_ids: [inMaintenance], hints: [] });
      expect(res.status, res.text).toBe(400);
      expect((res.json as Json).error).toBe('ServerNotReadyError');
    };
    await refusedConfiguration('hello_world');
    await refusedConfiguration('maintenance_enter');
    const execute = await sys.api.call('POST', '/v1/execution/', { playbook_configuration: { id: earlierHello.id, version: earlierHello.version } });
    expect(execute.status, execute.text).toBe(409);
    expect((execute.json as Json).error).toBe('ServerInMaintenanceError');
  });

  it("maintenance_enter on a second host while the first is in: Ceph's gate says no, refused with its answer, nothing changed", async () => {
    const second = deployed.serverIds.filter((id) => id !== inMaintenance)[1] as string;
    const host = hostOf(second);
    const before = await units(host);
    const run = await sys.run('maintenance_enter', deployed.clusterId, [second], [{ id: 'ok_to_stop_timeout', value: 10 }]);
    expect(run.execution.data.state, why(run)).toBe('failed');
    const failed = run.steps.find((s) => s.data.result === 'error');
    expect(failed?.data.name, why(run)).toBe('Ask Ceph whether every daemon of these hosts may stop, then set noout on them');
    expect(JSON.stringify(failed?.data.error), why(run)).toMatch(/may not stop \(asked for \d+ s\)/);
    log(`second host refused: ${String((failed?.data.error as Json | undefined)?.msg)}`);
    // the clean-up brought back nothing (nothing was stopped) and ended
    expect(run.log).toContain('[carapace runner] cleanup.yml completed');
    expect(await units(host)).toEqual(before);
    for (const state of Object.values(before)) expect(state).toBe('active enabled');
    expect((await sys.server(second)).data.state).toBe('operational');
    const dump = await sys.ceph<Json>(monOutside(), 'osd dump');
    expect(dump.crush_node_flags).toEqual({ [hostOf(inMaintenance).name]: ['noout'] });
    expect(Object.keys(await sys.ceph<Json>(monOutside(), 'config-key dump carapace/maintenance/'))).toEqual([`carapace/maintenance/${hostOf(inMaintenance).name}`]);
  });

  it('maintenance_exit: the daemons back, every PG active+clean, HEALTH_OK, no flag left, the objects intact', async () => {
    const host = hostOf(inMaintenance);
    const run = await sys.run('maintenance_exit', deployed.clusterId, [inMaintenance]);
    expect(run.execution.data.state, why(run)).toBe('completed');
    log(`exit: ${run.seconds.toFixed(1)} s`);
    logSteps(run, log);
    for (const s of run.steps.filter((x) => /^(mon|osd)\.|^Every PG|^noout/.test(x.data.name))) log(`step: ${s.data.name}`);
    expect(run.steps.some((s) => /^osd\.\d+, osd\.\d+ up and in after \d+\.\d s$/.test(s.data.name)), why(run)).toBe(true);
    expect(run.steps.some((s) => s.data.name === `noout unset on ${host.name}`), why(run)).toBe(true);
    for (const [unit, state] of Object.entries(await units(host))) expect(state, unit).toBe('active enabled');
    expect((await sys.server(inMaintenance)).data.state).toBe('operational');
    await waitHealthy(sys, deployed.monIds[0] as string, 'healthy after the maintenance', 300_000);
    await expectNoNoout(sys, monOutside());
    expect(await sys.ceph<Json>(monOutside(), 'config-key dump carapace/maintenance/')).toEqual({});
    expect((await host.exec('test -e /var/lib/carapace/maintenance.json && echo left || echo gone')).stdout.trim()).toBe('gone');
    await expectObjects(hostOf(deployed.monIds[0] as string));
    const hello = await sys.execute(earlierHello);
    expect(hello.execution.data.state, why(hello)).toBe('completed');
  });

  it("replace_osd refuses an OSD that is not on the server given, changing nothing", async () => {
    const [a, b] = deployed.serverIds as [string, string];
    const mon = hostOf(deployed.monIds[0] as string);
    const elsewhere = (await sys.ceph<number[]>(mon, `osd ls-tree ${hostOf(b).name}`))[0];
    const before = await sys.ceph<Json>(mon, 'osd dump');
    const run = await sys.run('replace_osd', deployed.clusterId, [a], [{ id: 'replacements', value: `${elsewhere}:/dev/vdb` }]);
    expect(run.execution.data.state, why(run)).toBe('failed');
    const failed = run.steps.find((s) => s.data.result === 'error');
    expect(failed?.data.name, why(run)).toBe('Find the OSDs, on this host only');
    expect(JSON.stringify(failed?.data.error)).toContain(`osd.${elsewhere} is on ${hostOf(b).name}, not on ${hostOf(a).name}`);
    const after = await sys.ceph<Json>(mon, 'osd dump');
    expect(after.osds.map((o: Json) => [o.osd, o.up, o.in])).toEqual(before.osds.map((o: Json) => [o.osd, o.up, o.in]));
  });

  it('replace_osd after a disk failed: the same OSD id up and in on a new disk, HEALTH_OK, the objects intact, never more OSDs than before', async () => {
    const serverId = deployed.serverIds[2] as string;
    const host = hostOf(serverId);
    const mon = hostOf(deployed.monIds[0] as string);
    const id = String((await sys.ceph<number[]>(mon, `osd ls-tree ${host.name}`))[0]);
    const blockOf = async () => (await host.exec(`readlink -f /var/lib/ceph/osd/ceph-${id}/block`)).stdout.trim();
    const oldDevice = await blockOf();
    expect(oldDevice).toMatch(/^\/dev\/vd[b-z]$/);
    const count = (await sys.ceph<number[]>(mon, 'osd ls')).length;
    // the disk fails: its OSD stops, its start is overwritten
    await host.exec(`systemctl stop ceph-osd@${id} && dd if=/dev/urandom of=${oldDevice} bs=1M count=8 conv=fsync status=none`);
    await eventually(`osd.${id} down`, async () => ((await sys.ceph<Json>(mon, 'osd dump')).osds.find((o: Json) => String(o.osd) === id)?.up === 0 ? true : undefined), 120_000);
    const disk = await host.addDisk(DISK_BYTES);
    // the OSD count, watched all along
    let most = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        most = Math.max(most, (await sys.ceph<number[]>(mon, 'osd ls').catch(() => [])).length);
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    const run = await sys.run('replace_osd', deployed.clusterId, [serverId], [{ id: 'replacements', value: `${id}:${disk.device}` }]);
    watching = false;
    await watcher;
    expect(run.execution.data.state, why(run)).toBe('completed');
    log(`replace_osd: ${run.seconds.toFixed(1)} s`);
    logSteps(run, log);
    const names = run.steps.map((s) => s.data.name as string);
    expect(names.some((n) => n.startsWith(`osd.${id} marked out`)), why(run)).toBe(true);
    expect(names.some((n) => n.startsWith(`Ceph says osd.${id} may be destroyed`)), why(run)).toBe(true);
    expect(names, why(run)).toContain(`osd.${id} destroyed: id, CRUSH place and weight kept`);
    expect(names.some((n) => n.startsWith(`osd.${id} made again on ${disk.device}`)), why(run)).toBe(true);
    const dump = await sys.ceph<Json>(mon, 'osd dump');
    const osd = dump.osds.find((o: Json) => String(o.osd) === id);
    expect({ up: osd.up, in: osd.in }).toEqual({ up: 1, in: 1 });
    expect(osd.state).not.toContain('destroyed');
    expect(await blockOf()).toBe(disk.device);
    expect(String((await sys.ceph<Json>(mon, `osd find ${id}`)).crush_location?.host)).toBe(host.name);
    expect(most, 'OSDs at most during the replacement').toBe(count);
    expect((await sys.ceph<number[]>(mon, 'osd ls')).length).toBe(count);
    await waitHealthy(sys, deployed.monIds[0] as string, 'healthy after the replacement', 300_000);
    await expectObjects(mon);
  });

  it('the client never saw an operation fail through the maintenance and the replacement, nor read back wrong data', async () => {
    // Operations bounded at 30 s and no stall bound below that: a replaced OSD's data moving
    // back ends a PG's temporary mapping outside any noout of Carapace's, so without the
    // late-operation check it holds then (docs/day2/repairs.md, measured).
    const report = await client.stop();
    await expectClientNeverInterrupted(report, phases, hostOf(deployed.monIds[0] as string), log, 30_000);
    // the maintenance held the check while the host's OSDs were down and came back
    expectHeldCheckSeen(report);
  });

  // ---- pools (every host up: placement counts the hosts with OSDs up and in) ----------------

  poolTests(() => ({ sys, clusterId: deployed.clusterId, monHost: hostOf(deployed.monIds[0] as string) }));

  // ---- monitors ----------------------------------------------------------------------------

  const spareId = (): string => sys.servers[SPARE]?.id as string;
  const monHost = (i: number): LabHost => hostOf(deployed.monIds[i] as string);
  /** The lab hosts of the cluster's servers as the model has them now. */
  const clusterHosts = async (): Promise<LabHost[]> => {
    const cluster = await sys.cluster(deployed.clusterId);
    const ids = new Set(Object.values(cluster.data.configuration as Record<string, Json[]>).flatMap((members) => members.map((m) => m.server_id as string)));
    return [...ids].map(hostOf);
  };
  const modelMons = async (): Promise<string[]> => ((await sys.cluster(deployed.clusterId)).data.configuration.mons as Json[]).map((m) => hostOf(m.server_id).name);
  const clientConf = async (): Promise<string> => {
    const files = await sys.api.ok<Record<string, string>>('GET', `/v1/cinder_integration/${deployed.clusterId}/?root=${encodeURIComponent(CLIENT_ROOT)}`);
    return files[`${CLIENT_ROOT}/ceph.conf`] ?? '';
  };
  /** After a monitor run: the map, every cluster host's ceph.conf, the client ceph.conf and the model agree. */
  const expectMonitorsEverywhere = async (expected: string[]): Promise<void> => {
    const via = monHost(2);
    const { names, ips } = await monitorMap(sys, via);
    expect([...names].sort()).toEqual([...expected].sort());
    const quorum = await sys.ceph<Json>(via, 'quorum_status');
    expect([...quorum.quorum_names].sort()).toEqual([...expected].sort());
    await expectConfNamesMonitors(sys, via, await clusterHosts());
    const conf = await clientConf();
    for (const ip of ips) expect(conf, 'the client ceph.conf').toContain(`v2:${ip}:3300`);
    expect(conf.match(/v2:/g)?.length, 'monitors in the client ceph.conf').toBe(ips.length);
    expect((await modelMons()).sort()).toEqual([...expected].sort());
  };
  const monSteps = (run: PlaybookRun): string[] => run.steps.map((s) => s.data.name as string).filter((n) => /^(mon\.|Ceph says|every monitor|the other monitors|the quorum|ceph-mon|no monitor)/.test(n));

  it('monitors: cinder_integration first, a watcher of the quorum started', async () => {
    const run = await sys.run('cinder_integration', deployed.clusterId, []);
    expect(run.execution.data.state, why(run)).toBe('completed');
    expect(await clientConf()).toMatch(/mon_host = /);
    // the watcher asks through the one monitor host that keeps its monitor throughout
    watcher = new QuorumWatcher(monHost(2));
    await watcher.start();
  });

  it('add_mon on a fifth host: gated, joined from the map, every ceph.conf and the model follow', async () => {
    const spare = hostOf(spareId());
    const names = [0, 1, 2].map((i) => monHost(i).name);
    const run = await sys.run('add_mon', deployed.clusterId, [spareId()]);
    expect(run.execution.data.state, why(run)).toBe('completed');
    log(`add_mon: ${run.seconds.toFixed(1)} s`);
    logSteps(run, log);
    const steps = monSteps(run);
    for (const s of steps) log(`step: ${s}`);
    expect(steps.some((n) => n.startsWith('every monitor in quorum')), why(run)).toBe(true);
    expect(steps.some((n) => n.startsWith(`Ceph says mon.${spare.name} may be added`)), why(run)).toBe(true);
    expect(steps, why(run)).toContain(`mon.${spare.name} store made from the cluster's map and key`);
    expect(steps.some((n) => n.startsWith(`mon.${spare.name} in quorum after`)), why(run)).toBe(true);
    await expectMonitorsEverywhere([...names, spare.name]);
    expect(await monitorOnHost(spare)).toMatchObject({ unit: 'active enabled', store: true, adminKey: true });
    expect((await sys.server(spareId())).data.cluster_id).toBe(deployed.clusterId);
    // asked again: refused before any run, it is a monitor already
    const again = await sys.api.call('POST', '/v1/playbook_configuration/', { name: 'again', cluster_id: deployed.clusterId, playbook_id: 'add_mon', server_ids: [spareId()], hints: [] });
    expect(again.status, again.text).toBe(400);
    expect((again.json as Json).error).toBe('ServerAlreadyInRoleError');
  });

  it('remove_mon of a monitor that runs: gated by ok-to-rm, removed from the map while it runs, then stopped, its store kept aside', async () => {
    const old = monHost(0);
    const run = await sys.run('remove_mon', deployed.clusterId, [deployed.monIds[0] as string]);
    expect(run.execution.data.state, why(run)).toBe('completed');
    log(`remove_mon: ${run.seconds.toFixed(1)} s`);
    const steps = monSteps(run);
    for (const s of steps) log(`step: ${s}`);
    expect(steps.some((n) => n.startsWith(`Ceph says mon.${old.name} may be removed`)), why(run)).toBe(true);
    expect(steps, why(run)).toContain(`mon.${old.name} removed from the map`);
    expect(steps.some((n) => n.startsWith(`ceph-mon@${old.name} stopped and disabled, its store kept in /var/lib/ceph/mon/removed-ceph-${old.name}-`)), why(run)).toBe(true);
    await expectMonitorsEverywhere([monHost(1).name, monHost(2).name, hostOf(spareId()).name]);
    expect(await monitorOnHost(old)).toMatchObject({ unit: 'inactive disabled', store: false, archived: true, adminKey: false });
    // still an OSD host of the cluster: its ceph.conf followed (checked above), it did not leave
    expect((await sys.server(deployed.monIds[0] as string)).data.cluster_id).toBe(deployed.clusterId);
  });

  it('replace_mon: the new monitor joins before the old one leaves', async () => {
    const [back, old] = [monHost(0), monHost(1)];
    const run = await sys.run('replace_mon', deployed.clusterId, [deployed.monIds[1] as string, deployed.monIds[0] as string]);
    expect(run.execution.data.state, why(run)).toBe('completed');
    log(`replace_mon: ${run.seconds.toFixed(1)} s`);
    const steps = monSteps(run);
    for (const s of steps) log(`step: ${s}`);
    const joined = steps.findIndex((n) => n.startsWith(`mon.${back.name} in quorum after`));
    const removed = steps.indexOf(`mon.${old.name} removed from the map`);
    expect(joined, why(run)).toBeGreaterThanOrEqual(0);
    expect(removed, why(run)).toBeGreaterThan(joined);
    await expectMonitorsEverywhere([back.name, monHost(2).name, hostOf(spareId()).name]);
    expect(await monitorOnHost(back)).toMatchObject({ unit: 'active enabled', store: true, adminKey: true });
    expect(await monitorOnHost(old)).toMatchObject({ unit: 'inactive disabled', store: false, adminKey: false });
  });

  it('a monitor stopped: removing another is refused while it is out of quorum; the stopped one may be removed', async () => {
    const spare = hostOf(spareId());
    await spare.exec(`systemctl stop ceph-mon@${spare.name}`);
    await eventually(`mon.${spare.name} out of quorum`, async () => (!(await sys.ceph<Json>(monHost(2), 'quorum_status')).quorum_names.includes(spare.name) ? true : undefined), 120_000);
    const refused = await sys.run('remove_mon', deployed.clusterId, [deployed.monIds[0] as string]);
    expect(refused.execution.data.state, why(refused)).toBe('failed');
    const failed = refused.steps.find((s) => s.data.result === 'error');
    expect(failed?.data.name, why(refused)).toBe('Ask Ceph whether the monitor may be removed');
    expect(JSON.stringify(failed?.data.error), why(refused)).toContain(`other monitors are out of quorum: ${spare.name}`);
    log(`refused: ${String((failed?.data.error as Json | undefined)?.msg)}`);
    expect((await monitorMap(sys, monHost(2))).names).toContain(monHost(0).name);

    const run = await sys.run('remove_mon', deployed.clusterId, [spareId()]);
    expect(run.execution.data.state, why(run)).toBe('completed');
    for (const s of monSteps(run)) log(`step: ${s}`);
    await expectMonitorsEverywhere([monHost(0).name, monHost(2).name]);
    // the spare had no other role: it left the cluster
    expect((await sys.server(spareId())).data.cluster_id).toBeNull();
    expect(await monitorOnHost(spare)).toMatchObject({ unit: 'inactive disabled', store: false, archived: true });
  });

  it('down to one monitor; the last is refused with the reason; the quorum was never lost', async () => {
    const run = await sys.run('remove_mon', deployed.clusterId, [deployed.monIds[0] as string]);
    expect(run.execution.data.state, why(run)).toBe('completed');
    await expectMonitorsEverywhere([monHost(2).name]);
    const res = await sys.api.call('POST', '/v1/playbook_configuration/', { name: 'last', cluster_id: deployed.clusterId, playbook_id: 'remove_mon', server_ids: [deployed.monIds[2]], hints: [] });
    expect(res.status, res.text).toBe(400);
    expect((res.json as Json).error).toBe('LastMonitorError');
    expect(String((res.json as Json).message)).toContain('is its last monitor');
    expect(await confMonHost(monHost(2))).toMatch(/^\[v2:[\d.]+:3300,v1:[\d.]+:6789\]$/);
    await waitHealthy(sys, deployed.monIds[2] as string, 'healthy with one monitor', 300_000);
    await expectObjects(monHost(2));

    const report = (await watcher?.stop()) as QuorumReport;
    watcher = undefined;
    log(`quorum watcher: ${report.samples.length} answers, ${report.lost.length} without a quorum, longest wait ${report.longestStall.toFixed(1)} s; maps: ${report.maps.join(' | ')}`);
    expect(report.samples.length).toBeGreaterThan(100);
    expect(report.lost).toEqual([]);
    expect(report.maps.length, 'every change of the map seen').toBeGreaterThanOrEqual(6);
  });
});
