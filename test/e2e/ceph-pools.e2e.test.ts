// TEMPORARY (removed at merge, when test/e2e/ceph-repair.e2e.test.ts calls poolTests): the
// pool playbooks' end-to-end checks (./ceph/pool.checks.ts) on a cluster of their own, Ceph 16
// on three discovered lab hosts with two disks each.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { deployAndCheck, type DeployedCluster } from './ceph/deploy.checks.js';
import { poolTests } from './ceph/pool.checks.js';
import { CephSystem } from './ceph/system.js';

const DISKS = 2;
const DEPLOYED = 3;

describe('add_pool and remove_pool on real Ceph through the API', { timeout: 30 * 60_000 }, () => {
  let sys: CephSystem;
  let deployed: DeployedCluster;

  beforeAll(async () => {
    sys = await CephSystem.start({ name: 'e2e-pools', hosts: DEPLOYED, disks: DISKS });
  }, 30 * 60_000);

  afterAll(async () => {
    // development only: POOLS_HOLD=1 keeps the cluster until /tmp/pools-release exists (at most 100 min)
    if (process.env.POOLS_HOLD) {
      const end = Date.now() + 100 * 60_000;
      while (Date.now() < end && !existsSync('/tmp/pools-release')) await new Promise((r) => setTimeout(r, 5000));
    }
    await sys?.stop();
  }, 110 * 60_000);

  it('deploys Ceph 16 on 3 hosts x 2 disks', async () => {
    deployed = await deployAndCheck(
      sys,
      sys.servers.slice(0, DEPLOYED).map((s) => s.id as string),
      DISKS,
    );
  });

  poolTests(() => ({ sys, clusterId: deployed.clusterId, monHost: sys.host(deployed.monIds[0] as string) }));
});
