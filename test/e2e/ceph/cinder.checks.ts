// cinder_integration through the API, checked the way OpenStack uses it: the files of
// GET /v1/cinder_integration/{id}/ on a host, `ceph -s` and `rbd` as the OpenStack clients;
// no key in the log or the steps; a second run changes nothing.
import { expect } from 'vitest';
import type { DeployedCluster } from './deploy.checks.js';
import { recapTotal, why, type CephSystem, type Json, type PlaybookRun } from './system.js';

/** Where the check asks the endpoint to put the files (`?root=`), on the client host. */
export const CLIENT_ROOT = '/tmp/openstack';

/** The pools and the keys the playbook makes. */
export const OPENSTACK_POOLS = ['backups', 'images', 'vms', 'volumes'];
export const OPENSTACK_CLIENTS = ['cinder', 'cinder-backup', 'glance'];

/** What the check found, for the checks that follow and the timings. */
export interface CinderIntegration {
  configuration: Json;
  run: PlaybookRun;
  again: PlaybookRun;
  /** Path → content, as the endpoint answered. */
  files: Record<string, string>;
}

const KEYRING = /^\[client\.([a-z0-9-]+)\]\n\tkey = ([A-Za-z0-9+/]{38}==)\n$/;

/**
 * Runs cinder_integration on a deployed cluster and checks it: the pools exist for RBD with
 * the cluster's replica count, the endpoint returns `ceph.conf` and the three keyrings
 * under `?root=`, and with those files alone, on the client host (`clientServerId`: a host
 * of the Ceph image, in the cluster or not; default the first monitor, where the files go to
 * another directory than /etc/ceph), `ceph -s --id cinder` and `rbd` work as OpenStack's
 * clients (cinder writes volumes, glance may not). No key appears in the log or the steps.
 * A second run of the same configuration: changed=0, the same files.
 */
export async function cinderIntegrationAndCheck(sys: CephSystem, deployed: DeployedCluster, clientServerId?: string): Promise<CinderIntegration> {
  const { clusterId } = deployed;
  const endpoint = `/v1/cinder_integration/${clusterId}/?root=${encodeURIComponent(CLIENT_ROOT)}`;
  // Nothing before the playbook ran.
  const before = await sys.api.call('GET', endpoint);
  expect(before.status, before.text).toBe(404);

  const playbooks = (await sys.api.ok('GET', '/v1/playbook/')).items as Json[];
  expect(playbooks.find((p) => p.id === 'cinder_integration')).toMatchObject({ required_server_list: false, hints: [] });
  const configuration = await sys.configure('cinder_integration', clusterId, []);
  expect([...configuration.data.server_ids].sort()).toEqual([...deployed.monIds].sort());
  const run = await sys.execute(configuration);
  expect(run.execution.data.state, why(run)).toBe('completed');
  expect(recapTotal(run, 'failed'), why(run)).toBe(0);
  expect(recapTotal(run, 'changed'), why(run)).toBeGreaterThan(0);

  // The pools, as the admin sees them on a monitor.
  const mon = sys.host(deployed.monIds[0] as string);
  const all = await sys.ceph<Json[]>(mon, 'osd pool ls detail');
  const pools = all.filter((p) => OPENSTACK_POOLS.includes(p.pool_name));
  expect(pools.map((p) => p.pool_name).sort()).toEqual(OPENSTACK_POOLS);
  // The cluster's default replica count: that of the pool the manager made at deploy time
  // (the monitors' osd_pool_default_size), else one per OSD host up to 3.
  const managerPool = all.find((p) => p.pool_name === 'device_health_metrics' || p.pool_name === '.mgr');
  const expectedSize = managerPool?.size ?? Math.min(3, deployed.osdIds.length);
  for (const pool of pools) {
    expect(Object.keys(pool.application_metadata ?? {}), pool.pool_name).toEqual(['rbd']);
    expect(pool.size, pool.pool_name).toBe(expectedSize);
  }

  // The files.
  const files = await sys.api.ok<Record<string, string>>('GET', endpoint);
  expect(Object.keys(files).sort()).toEqual([
    `${CLIENT_ROOT}/ceph.client.cinder-backup.keyring`,
    `${CLIENT_ROOT}/ceph.client.cinder.keyring`,
    `${CLIENT_ROOT}/ceph.client.glance.keyring`,
    `${CLIENT_ROOT}/ceph.conf`,
  ]);
  const conf = files[`${CLIENT_ROOT}/ceph.conf`] ?? '';
  expect(conf).toMatch(new RegExp(`\\n\\s*fsid = ${clusterId}\\n`));
  expect(conf).toMatch(/\n\s*mon_host = .*v2:\d+\.\d+\.\d+\.\d+:3300/);
  const keys: string[] = [];
  for (const client of OPENSTACK_CLIENTS) {
    const keyring = files[`${CLIENT_ROOT}/ceph.client.${client}.keyring`] ?? '';
    const m = KEYRING.exec(keyring);
    expect(m, `keyring of client.${client}: ${keyring.length} characters in the expected shape`).not.toBeNull();
    expect(m?.[1]).toBe(client);
    keys.push(m?.[2] ?? '');
  }
  expect(new Set(keys).size).toBe(3);
  // The admin's view of the keys is the same.
  for (const [i, client] of OPENSTACK_CLIENTS.entries()) {
    const { stdout } = await mon.exec(`timeout 60 ceph --connect-timeout 30 auth print-key client.${client}`);
    expect(stdout.trim() === keys[i], `client.${client}: the served key is the cluster's`).toBe(true);
  }
  expectNoKeys(run, keys);

  // Used as OpenStack uses them, from the files alone.
  const client = sys.host(clientServerId ?? (deployed.monIds[0] as string));
  await client.exec(`rm -rf ${CLIENT_ROOT} && mkdir -m 0700 ${CLIENT_ROOT}`);
  for (const [path, content] of Object.entries(files)) await client.exec(`umask 077 && cat > '${path}'`, { input: content });
  const as = (id: string) => `--conf ${CLIENT_ROOT}/ceph.conf --keyring ${CLIENT_ROOT}/ceph.client.${id}.keyring --id ${id}`;
  const status = JSON.parse((await client.exec(`timeout 60 ceph ${as('cinder')} --connect-timeout 30 -s -f json`, { timeoutMs: 90_000 })).stdout);
  expect(status.fsid).toBe(clusterId);
  const image = `e2e-cinder-${Date.now()}`;
  await client.exec(`timeout 60 rbd ${as('cinder')} create --size 16 volumes/${image}`, { timeoutMs: 90_000 });
  const listed = JSON.parse((await client.exec(`timeout 60 rbd ${as('cinder')} ls volumes --format json`, { timeoutMs: 90_000 })).stdout);
  expect(listed).toContain(image);
  // Glance reads and writes images, but not volumes; cinder-backup only backups.
  expect(JSON.parse((await client.exec(`timeout 60 rbd ${as('glance')} ls images --format json`, { timeoutMs: 90_000 })).stdout)).toEqual([]);
  const refused = await client.exec(`timeout 60 rbd ${as('glance')} create --size 16 volumes/${image}-glance`, { check: false, timeoutMs: 90_000 });
  expect(refused.exitCode, 'client.glance may not create a volume').not.toBe(0);
  expect(JSON.parse((await client.exec(`timeout 60 rbd ${as('cinder-backup')} ls backups --format json`, { timeoutMs: 90_000 })).stdout)).toEqual([]);
  await client.exec(`timeout 60 rbd ${as('cinder')} rm volumes/${image}`, { timeoutMs: 90_000 });
  await client.exec(`rm -rf ${CLIENT_ROOT}`);

  // Again: nothing changes, the same files.
  const again = await sys.execute(configuration);
  expect(again.execution.data.state, why(again)).toBe('completed');
  for (const [host, line] of again.recap) expect(line.changed, `${host} changed=${line.changed}\n${why(again)}`).toBe(0);
  expect(await sys.api.ok('GET', endpoint)).toEqual(files);
  expectNoKeys(again, keys);
  return { configuration, run, again, files };
}

/** No key in the log or the steps of a run (as text, whatever the encoding around it). */
function expectNoKeys(run: PlaybookRun, keys: readonly string[]): void {
  const steps = JSON.stringify(run.steps);
  for (const key of keys) {
    expect(run.log.includes(key), 'a key is in the log').toBe(false);
    expect(steps.includes(key), 'a key is in the steps').toBe(false);
    // the key's bytes, in case some output shows them decoded or re-encoded
    const raw = Buffer.from(key, 'base64');
    expect(run.log.includes(raw.toString('hex')), 'a key is in the log (hex)').toBe(false);
  }
}
