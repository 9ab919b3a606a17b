// Ceph for real, end to end through the public API: hosts of the Ceph-ready lab image with
// disks discover themselves, then cluster_deploy, a second deploy that changes nothing,
// add_osd, remove_osd (and the one that would lose data), cinder_integration and
// purge_cluster run as executions, and each result is checked on the daemons themselves.
// LVM and encrypted OSDs, which need a kernel of its own, are in ceph-vm.e2e.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployAndCheck, redeployUnchanged, type DeployedCluster } from './ceph/deploy.checks.js';
import { cinderIntegrationAndCheck } from './ceph/cinder.checks.js';
import { dmcryptRefusedAtPreflight } from './ceph/dmcrypt.checks.js';
import { addOsdAndCheck, addOsdDmcryptRefusedAtPreflight, removeOsdAndCheck, removeOsdRefusedWhenDataWouldBeLost } from './ceph/osd.checks.js';
import { purgeAndCheck } from './ceph/purge.checks.js';
import { CephSystem } from './ceph/system.js';
import { deviceMapperAvailable } from '../lab/ceph.js';

const HOSTS = 4;
const DISKS = 2;
/** The first three hosts make the cluster; the fourth is added and removed. */
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

  beforeAll(async () => {
    sys = await CephSystem.start({ name: 'e2e-ceph', hosts: HOSTS, disks: DISKS });
  }, 40 * 60_000);

  afterAll(async () => {
    await sys?.stop();
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

  /** The fourth host: added, then removed. */
  const fourth = (): string => sys.servers[DEPLOYED]?.id as string;

  it.skipIf(DM)('refuses add_osd with dmcrypt at the pre-flight on a host without device-mapper', async () => {
    await addOsdDmcryptRefusedAtPreflight(sys, deployed, [fourth()]);
  });

  it('adds a fourth host: its OSDs join up and in; a second run changes nothing', async () => {
    await addOsdAndCheck(sys, deployed, [fourth()], DISKS);
  });

  it('refuses to remove OSDs whose data exists nowhere else, and leaves them in place', async () => {
    await removeOsdRefusedWhenDataWouldBeLost(sys, deployed, fourth());
  });

  it('removes the fourth host: OSDs gone, devices wiped, no object lost, healthy; a second run changes nothing', async () => {
    await removeOsdAndCheck(sys, deployed, [fourth()]);
  });

  it('hands the cluster to OpenStack: pools and client keys, served files work as client.cinder from the removed host', async () => {
    await cinderIntegrationAndCheck(sys, deployed, fourth());
  });

  it('purges the cluster, also after a run canceled midway: nothing of Ceph left on any host, the cluster deleted, the servers free', async () => {
    // One cancel, once the daemons are stopped: a later one (after the packages) may land after the run ended on a busy machine.
    await purgeAndCheck(sys, deployed, deployed.serverIds, { interrupt: ['Stop the Ceph units'] });
  });
});
