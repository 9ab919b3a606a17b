// Encrypted OSDs (the `dmcrypt` hint): where the kernel has device-mapper, the OSD devices
// are LUKS; where it has none (this kind of machine: see test/lab/README.md), a configuration
// asking for dmcrypt fails at the pre-flight with that reason, before anything is changed.
import { expect } from 'vitest';
import { why, type CephSystem, type Json } from './system.js';
import { lvmOsds } from './vm-osd.checks.js';

/**
 * cluster_deploy with `dmcrypt: true` on hosts without device-mapper: the execution fails in
 * the pre-flight role, the log says why, no host got a ceph.conf or a running daemon, and the
 * cluster model and the servers are as before.
 */
export async function dmcryptRefusedAtPreflight(sys: CephSystem, serverIds: string[]): Promise<void> {
  const clusterId = await sys.createCluster('e2e-dmcrypt-refused');
  const run = await sys.run('cluster_deploy', clusterId, serverIds, [{ id: 'dmcrypt', value: true }]);
  expect(run.execution.data.state, why(run)).toBe('failed');
  expect(run.log).toContain('dmcrypt is requested but');
  expect(run.log).toMatch(/has no device-mapper/);
  const failed = run.steps.filter((s: Json) => s.data.result === 'error');
  expect(failed.length).toBeGreaterThan(0);
  expect(failed.every((s: Json) => s.data.role === 'ceph_preflight'), JSON.stringify(failed.map((s: Json) => [s.data.role, s.data.name]))).toBe(true);
  expect(run.steps.some((s: Json) => s.data.role !== 'ceph_preflight' && s.data.role !== '' && s.data.result === 'ok')).toBe(false);
  for (const [host, line] of run.recap) expect(line.changed, host).toBe(0);
  for (const id of serverIds) {
    const host = sys.host(id);
    expect((await host.exec('test -e /etc/ceph/ceph.conf', { check: false })).exitCode, host.name).not.toBe(0);
    expect((await host.exec('pgrep -x ceph-mon || pgrep -x ceph-osd', { check: false })).stdout.trim(), host.name).toBe('');
    expect((await sys.server(id)).data.cluster_id).toBeNull();
  }
  expect((await sys.cluster(clusterId)).data.configuration).toEqual({});
  await sys.api.ok('DELETE', `/v1/cluster/${clusterId}/`);
}

/** Every OSD of these hosts is an encrypted `ceph-volume lvm` OSD whose data volume is LUKS. */
export async function expectEncryptedOsds(sys: CephSystem, serverIds: string[], disksPerHost: number): Promise<void> {
  for (const id of serverIds) {
    const host = sys.host(id);
    const osds = await lvmOsds(host);
    expect(osds.length, host.name).toBe(disksPerHost);
    for (const osd of osds) {
      expect(osd.encrypted, `${host.name} ${osd.lvPath}: ceph.encrypted`).toBe(true);
      expect((await host.exec(`cryptsetup isLuks ${osd.lvPath}`, { check: false })).exitCode, `${host.name}: ${osd.lvPath} is not LUKS`).toBe(0);
    }
  }
}
