// Ceph for real, end to end through the public API: hosts of the Ceph-ready lab image with
// disks discover themselves, then cluster_deploy, a second deploy that changes nothing,
// previews, add_osd (relaunched for the host cut off midway), remove_osd (and the one that
// would lose data), cinder_integration and purge_cluster run as executions, and each result
// is checked on the daemons themselves. The cluster status (GET /v1/cluster/{id}/status/, its
// alerts) is checked against what Ceph says, with an OSD and then every monitor stopped by
// hand. LVM and encrypted OSDs, which need a kernel of their own, are in ceph-vm.e2e.test.ts.
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployAndCheck, redeployUnchanged, type DeployedCluster } from './ceph/deploy.checks.js';
import { cinderIntegrationAndCheck } from './ceph/cinder.checks.js';
import { dmcryptRefusedAtPreflight } from './ceph/dmcrypt.checks.js';
import { addOsdDmcryptRefusedAtPreflight, removeOsdAndCheck, removeOsdRefusedWhenDataWouldBeLost } from './ceph/osd.checks.js';
import { purgeAndCheck } from './ceph/purge.checks.js';
import { previewAddOsd, previewRedeployUnchanged } from './ceph/preview.checks.js';
import { addOsdRelaunchFailedHosts } from './ceph/relaunch.checks.js';
import { monitorsDownUnreachable, muteLabChecks, osdDownAlerts, statusInBrowser, statusMatchesCeph, StatusSinks } from './ceph/status.checks.js';
import { CephSystem } from './ceph/system.js';
import { deviceMapperAvailable } from '../lab/ceph.js';

const ROOT = resolve(import.meta.dirname, '../..');
const HOSTS = 5;
const DISKS = 2;
/** The first three hosts make the cluster; the fourth and the fifth are added (the fifth cut off midway, then relaunched) and removed. */
const DEPLOYED = 3;
/**
 * Container hosts share the machine's kernel: where it has no device-mapper (this lab's
 * machine), dmcrypt is refused on them at the pre-flight, which these tests check; encrypted
 * OSDs are made on a VM host, which has a kernel of its own (ceph-vm.e2e.test.ts).
 */
const DM = deviceMapperAvailable();

describe('Ceph on real daemons through the API', { timeout: 20 * 60_000 }, () => {
  let sys: CephSystem;
  let deployed: DeployedCluster;
  let sinks: StatusSinks;

  beforeAll(async () => {
    sinks = await StatusSinks.start();
    sys = await CephSystem.start({ name: 'e2e-ceph', hosts: HOSTS, disks: DISKS, controlPlane: sinks.controlPlane() });
  }, 40 * 60_000);

  afterAll(async () => {
    await sys?.stop();
    await sinks?.stop();
  }, 180_000);

  it.skipIf(DM)('refuses dmcrypt at the pre-flight on hosts without device-mapper, before changing anything', async () => {
    await dmcryptRefusedAtPreflight(
      sys,
      sys.servers.slice(0, DEPLOYED).map((s) => s.id as string),
    );
  });

  it('deploys 3 hosts x 2 disks: monitors in quorum, every OSD up and in, healthy', async () => {
    deployed = await deployAndCheck(
      sys,
      sys.servers.slice(0, DEPLOYED).map((s) => s.id as string),
      DISKS,
    );
    expect(deployed.monIds.length).toBe(3);
  });

  it('runs the same configuration again: changed=0 on every host, still healthy', async () => {
    await redeployUnchanged(sys, deployed, DISKS);
  });

  /** The fourth and fifth hosts: added, then removed. */
  const fourth = (): string => sys.servers[DEPLOYED]?.id as string;
  const fifth = (): string => sys.servers[DEPLOYED + 1]?.id as string;

  it('shows the cluster status as Ceph does: health, monitors, managers, OSDs per host, capacity within 1 % of ceph df', async () => {
    await muteLabChecks(sys, deployed);
    await statusMatchesCeph(sys, deployed, DEPLOYED * DISKS);
  });

  it('an OSD stopped by hand: HEALTH_WARN with OSD_DOWN on its host within two intervals, one webhook and one e-mail; back to OK with one more', async () => {
    const { downSeconds, backSeconds } = await osdDownAlerts(sys, deployed, sinks);
    process.stderr.write(`[e2e-ceph] status: OSD_DOWN seen ${downSeconds.toFixed(1)} s after the stop, HEALTH_OK ${backSeconds.toFixed(1)} s after the start\n`);
  });

  it('the web UI, in the real browser, shows the health of the cluster and its capacity chart', async () => {
    await statusInBrowser(sys, deployed, join(ROOT, 'test-output', 'ui', 'ceph-cluster-status.png'));
  });

  it('every monitor stopped: the status says they do not answer and since when; an execution on another cluster starts as fast as before', async () => {
    const { before, during } = await monitorsDownUnreachable(sys, deployed, fourth());
    process.stderr.write(`[e2e-ceph] status: hello_world's first step ${before.toFixed(1)} s after its creation before, ${during.toFixed(1)} s with the monitors down\n`);
  });

  it.skipIf(DM)('refuses add_osd with dmcrypt at the pre-flight on a host without device-mapper', async () => {
    await addOsdDmcryptRefusedAtPreflight(sys, deployed, [fourth()]);
  });

  it('previews the deployed cluster_deploy: every task unchanged on every host, nothing changed, listed apart', async () => {
    await previewRedeployUnchanged(sys, deployed);
  });

  it('previews add_osd on a fourth host: the devices it would prepare, none prepared', async () => {
    await previewAddOsd(sys, deployed, fourth());
  });

  it('add_osd on a fourth and a fifth host, the fifth cut off midway: failed; relaunched for its failed host, it runs there only; every OSD joins up and in; a second run changes nothing', async () => {
    await addOsdRelaunchFailedHosts(sys, deployed, [fourth(), fifth()], DISKS);
  });

  it('refuses to remove OSDs whose data exists nowhere else, in a preview and in a run, and leaves them in place', async () => {
    await removeOsdRefusedWhenDataWouldBeLost(sys, deployed, fourth(), 20, { previewFirst: true });
  });

  it('removes the fourth and fifth hosts: OSDs gone, devices wiped, no object lost, healthy; a second run changes nothing', async () => {
    await removeOsdAndCheck(sys, deployed, [fourth(), fifth()]);
  });

  it('hands the cluster to OpenStack: pools and client keys, served files work as client.cinder from the removed host', async () => {
    await cinderIntegrationAndCheck(sys, deployed, fourth());
  });

  it('purges the cluster, also after a run canceled midway: nothing of Ceph left on any host, the cluster deleted, the servers free', async () => {
    // One cancel, once the daemons are stopped: a later one (after the packages) may land after the run ended on a busy machine.
    await purgeAndCheck(sys, deployed, deployed.serverIds, { interrupt: ['Stop the Ceph units'] });
  });
});
