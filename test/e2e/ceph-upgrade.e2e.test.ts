// A rolling Ceph upgrade for real, end to end through the public API: Debian 12's Ceph 16
// (Pacific) deployed on three discovered lab hosts with two disks each, then upgrade_ceph to
// Debian 13's Ceph 18 (Reef) from the lab image's repository while a client on a fourth host
// writes and reads every 200 ms; then the same configuration again, which restarts nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployAndCheck, type DeployedCluster } from './ceph/deploy.checks.js';
import { CephSystem, why, type Json } from './ceph/system.js';
import { daemonStarts, IoProbe, reefHints, runningVersions, upgradeAndCheck, writeObjects, type ProbeReport } from './ceph/upgrade.checks.js';

const DISKS = 2;
/** Three hosts make the cluster; the fourth runs the client. */
const DEPLOYED = 3;

function log(line: string): void {
  process.stderr.write(`[ceph-upgrade.e2e] ${line}\n`);
}

describe('a rolling upgrade of real Ceph daemons through the API', { timeout: 40 * 60_000 }, () => {
  let sys: CephSystem;
  let deployed: DeployedCluster;
  let upgrade: Json;

  beforeAll(async () => {
    sys = await CephSystem.start({ name: 'e2e-upgrade', hosts: DEPLOYED + 1, disks: DISKS });
  }, 40 * 60_000);

  afterAll(async () => {
    await sys?.stop();
  }, 180_000);

  const mon = () => sys.host(deployed.monIds[0] as string);
  const clusterHosts = () => deployed.serverIds.map((id) => sys.host(id));

  it('deploys Ceph 16 (Pacific) on 3 hosts x 2 disks and writes objects', async () => {
    deployed = await deployAndCheck(
      sys,
      sys.servers.slice(0, DEPLOYED).map((s) => s.id as string),
      DISKS,
    );
    const versions = await runningVersions(sys, mon());
    for (const v of versions.overall ?? []) expect(v).toMatch(/^16\.2\./);
    await writeObjects(sys, mon());
  });

  it('upgrades to Ceph 18 (Reef) one daemon at a time while a client writes and reads: no failed operation, no flag left', async () => {
    const client = new IoProbe(sys.lab.hosts[DEPLOYED] as (typeof sys.lab.hosts)[number], mon());
    await client.start();
    upgrade = await sys.configure('upgrade_ceph', deployed.clusterId, [], await reefHints(mon()));
    let report: ProbeReport;
    try {
      const run = await upgradeAndCheck(sys, deployed, upgrade, DISKS);
      log(`upgrade: ${run.seconds.toFixed(0)} s`);
      // A step per daemon, with its versions and how long it was down.
      const daemonSteps = run.steps.filter((s) => /^(mon|mgr|osd)\.\S+ on \S+: /.test(s.data.name));
      for (const s of daemonSteps) log(`step: ${s.data.name}`);
      const osdSteps = daemonSteps.filter((s) => /^osd\./.test(s.data.name));
      expect(osdSteps.map((s) => s.data.name).filter((n) => /16\.2\.\d+ → 18\.2\.\d+, down \d+\.\d s$/.test(n)).length, why(run)).toBe(DEPLOYED * DISKS);
      expect(daemonSteps.some((s) => /^mon\.\S+ on \S+: 16\.2\.\d+ → 18\.2\.\d+, down/.test(s.data.name)), why(run)).toBe(true);
      expect(run.steps.some((s) => /^require_osd_release: pacific → reef$/.test(s.data.name)), why(run)).toBe(true);
    } finally {
      report = await client.stop();
    }
    log(`client: ${report.operations} operations, ${report.failures.length} failed, longest stall ${report.longestStallMs} ms`);
    expect(report.operations).toBeGreaterThan(100);
    expect(report.failures, 'operations the client saw fail').toEqual([]);
  });

  it('runs the same configuration again: completes, restarts nothing', async () => {
    const before = await daemonStarts(clusterHosts());
    expect(Object.keys(before).length).toBe(3 + 3 + DEPLOYED * DISKS);
    const again = await sys.execute(upgrade, 15 * 60_000);
    expect(again.execution.data.state, why(again)).toBe('completed');
    expect(await daemonStarts(clusterHosts())).toEqual(before);
    expect(again.steps.filter((s) => /: already 18\.2\.\d+, not restarted$/.test(s.data.name)).length, why(again)).toBe(3 + 3 + DEPLOYED * DISKS);
  });
});
