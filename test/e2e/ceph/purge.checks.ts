// purge_cluster through the API, checked on the hosts: a purge interrupted midway (canceled
// through the API) leaves the cluster in place, and a run of the same configuration then
// completes; afterwards no Ceph process, package, configuration, data, unit or OSD
// signature is left on any host, the cluster is deleted, its servers are free, and once they
// report their facts again a new cluster_deploy plans OSDs on the very devices the cluster
// had.
import { expect } from 'vitest';
import type { LabHost } from '../../lab/lab.js';

import type { DeployedCluster } from './deploy.checks.js';
import { recapTotal, why, type CephSystem, type Json, type PlaybookRun } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

/** Runs a shell command on a host (as root); returns stdout, stderr and the exit code. */
async function sh(host: LabHost, command: string, timeoutMs = 90_000): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  return host.exec(command, { timeoutMs, check: false });
}

/**
 * The Ceph packages a purged host may not have: every package built from the source
 * package `ceph` (daemons, tools, ceph-volume, and also the libraries and Python modules
 * librados2, librbd1, python3-rados...). The playbook removes the libraries only when
 * nothing else installed needs them; nothing else in a lab host does, so none may remain.
 */
export const CEPH_SOURCE_PACKAGE = 'ceph';

/** Paths a purged host may not have. */
export const PURGED_PATHS = [
  '/etc/ceph',
  '/var/lib/ceph',
  '/var/log/ceph',
  '/run/ceph',
  '/etc/systemd/system/ceph-osd@.service.d',
  '/usr/local/lib/carapace/ceph-osd-devices.py',
  '/etc/apt/sources.list.d/carapace-ceph.sources',
  '/etc/apt/keyrings/carapace-ceph.asc',
];

/**
 * The OSD devices of a host for the cluster: what the `block` link of each OSD directory
 * whose `ceph_fsid` names the cluster points to, each with a BlueStore signature.
 */
async function clusterDevices(host: LabHost, fsid: string): Promise<string[]> {
  const out = await sh(host, `for d in /var/lib/ceph/osd/ceph-*; do [ -L "$d/block" ] && echo "$(cat "$d/ceph_fsid") $(readlink -f "$d/block")"; done; true`);
  const devices: string[] = [];
  for (const line of out.stdout.split('\n').filter(Boolean)) {
    const [cluster, dev] = line.split(' ');
    if (cluster !== fsid || !dev) continue;
    const type = await sh(host, `blkid -p -o value -s TYPE ${dev}`);
    expect(type.stdout.trim(), `signature of ${dev} on ${host.name}`).toBe('ceph_bluestore');
    devices.push(dev);
  }
  return devices.sort();
}

/** Lines of installed (or half-removed) packages of the source package `ceph`. */
async function cephPackages(host: LabHost): Promise<string[]> {
  const out = (await sh(host, `dpkg-query -W -f='\${db:Status-Abbrev}|\${Package}|\${source:Package}\\n'`)).stdout;
  return out
    .split('\n')
    .map((l) => l.split('|'))
    .filter(([status, , source]) => status !== undefined && status[1] !== 'n' && source === CEPH_SOURCE_PACKAGE)
    .map(([status, name]) => `${(status ?? '').trim()} ${name ?? ''}`);
}

/** Starts an execution of a configuration and cancels it through the API once `step` (a name, or a pattern of one) is reported. */
export async function runAndCancelAfter(sys: CephSystem, configuration: Json, step: string | RegExp): Promise<{ run: PlaybookRun; canceledAfter: string }> {
  const matches = (name: string) => (typeof step === 'string' ? name === step : step.test(name));
  const started = Date.now();
  const created = await sys.api.ok('POST', '/v1/execution/', { playbook_configuration: { id: configuration.id, version: configuration.version } });
  const id = created.id as string;
  const seen = await eventually(
    `step "${String(step)}" of execution ${id}`,
    async () => {
      const steps = (await sys.api.ok('GET', `/v1/execution/${id}/steps/?all=true`)).items as Json[];
      if (steps.some((s) => matches(s.data.name as string))) return steps;
      const e = await sys.api.ok('GET', `/v1/execution/${id}/`);
      if (['completed', 'failed', 'canceled'].includes(e.data.state)) throw new Error(`execution ${id} ended (${e.data.state}) before step ${String(step)}: ${e.data.reason ?? ''}`);
      await new Promise((r) => setTimeout(r, 250));
      return undefined;
    },
    10 * 60_000,
  );
  await sys.api.ok('DELETE', `/v1/execution/${id}/`);
  const execution = await eventually(
    `execution ${id} to stop`,
    async () => {
      const e = await sys.api.ok('GET', `/v1/execution/${id}/`);
      return ['completed', 'failed', 'canceled'].includes(e.data.state) ? e : undefined;
    },
    5 * 60_000,
  );
  const log = (await sys.api.call('GET', `/v1/execution/${id}/log/`, undefined, true, { accept: 'text/plain' })).text;
  const steps = (await sys.api.ok('GET', `/v1/execution/${id}/steps/?all=true`)).items as Json[];
  const last = seen.reduce((a, b) => ((a.data.time_finished ?? 0) >= (b.data.time_finished ?? 0) ? a : b));
  return {
    run: { id, configurationId: configuration.id, execution, log, steps, recap: new Map(), seconds: (Date.now() - started) / 1000 },
    canceledAfter: `${last.data.role}: ${last.data.name}`,
  };
}

/** Where the purge is interrupted by default: once its daemons are stopped, then once the packages are gone. */
export const PURGE_INTERRUPTIONS = ['Stop the Ceph units', 'Purge the Ceph packages'];

export interface PurgeResult {
  /** The runs canceled midway, in order (none with `interrupt: []`). */
  interrupted: PlaybookRun[];
  /** For each canceled run: the last step reported when the cancel was asked for, and the steps that ran in all. */
  interruptedAt: { canceledAfter: string; steps: number }[];
  /** The run that completed the purge. */
  run: PlaybookRun;
  /** The OSD devices the cluster had, by server id (all wiped). */
  devices: Map<string, string[]>;
  timings: { interruptedS: number[]; purgeS: number; rediscoveryS: number };
}

/**
 * purge_cluster of a deployed cluster through the API, and the proof on the hosts.
 *
 * `allServerIds`: every server of the cluster (the purge runs on all of them). For each
 * step name of `interrupt` (default PURGE_INTERRUPTIONS), an execution of the configuration
 * is canceled through the API as soon as that step is reported: it ends `canceled`, the
 * cluster and its servers stay. The first stops after the daemons are down (packages, data
 * and devices still there); the second after the packages are gone (the next run finds
 * neither units nor Ceph tools: what a run on a purged host meets). The run of the same
 * configuration that follows must complete from whatever state the hosts were left in. Then:
 * - the execution completed, no host failed, no key in the log;
 * - on every host: no Ceph process (`pgrep -f ceph-`), no package of the source package
 *   ceph (CEPH_SOURCE_PACKAGE), none of PURGED_PATHS, no Ceph unit loaded or linked in
 *   /etc/systemd/system; each former OSD device has no signature (`blkid -p` finds nothing),
 *   its first 10 MiB are zero, and it is `root:disk` again;
 * - the API: the cluster's latest version is deleted with an empty configuration, the
 *   cluster list no longer has it, every server has `cluster_id` null, and running the purge
 *   configuration again is refused (`UnknownClusterError`: its cluster is deleted; the
 *   control plane refuses it before any playbook runs);
 * - the servers are free: once each host registered again (its discovery unit, as at every
 *   boot) and its facts were gathered anew, a cluster_deploy configuration on them is
 *   accepted and plans OSDs on exactly the devices the cluster had (the builder refuses a
 *   device with any signature). It is not run: lab hosts have no package mirror.
 */
export async function purgeAndCheck(sys: CephSystem, deployed: DeployedCluster, allServerIds: string[], opts: { interrupt?: string[] } = {}): Promise<PurgeResult> {
  const fsid = deployed.clusterId;
  const cluster = await sys.cluster(fsid);
  expect(cluster.time_deleted).toBe(0);
  for (const id of allServerIds) expect((await sys.server(id)).data.cluster_id).toBe(fsid);

  // What the cluster has before: its OSD devices on each OSD host.
  const devices = new Map<string, string[]>();
  for (const id of allServerIds) devices.set(id, await clusterDevices(sys.host(id), fsid));
  for (const id of deployed.osdIds) expect(devices.get(id)?.length ?? 0, `OSD devices of ${id} before the purge`).toBeGreaterThan(0);

  const configuration = await sys.configure('purge_cluster', fsid, []);
  expect((configuration.data.configuration.inventory.ceph.hosts as string[]).length).toBe(allServerIds.length);

  const result: Partial<PurgeResult> = { devices, interrupted: [], interruptedAt: [] };
  const interruptedS: number[] = [];
  for (const step of opts.interrupt ?? PURGE_INTERRUPTIONS) {
    const { run, canceledAfter } = await runAndCancelAfter(sys, configuration, step);
    interruptedS.push(run.seconds);
    expect(run.execution.data.state, `${run.execution.data.state}: ${run.execution.data.reason ?? ''}\n${run.log.slice(-3000)}`).toBe('canceled');
    // Nothing of the cluster model changed.
    const after = await sys.cluster(fsid);
    expect(after.time_deleted).toBe(0);
    for (const id of allServerIds) expect((await sys.server(id)).data.cluster_id).toBe(fsid);
    result.interrupted?.push(run);
    result.interruptedAt?.push({ canceledAfter, steps: run.steps.length });
  }

  const run = await sys.execute(configuration);
  expect(run.execution.data.state, why(run)).toBe('completed');
  expect(recapTotal(run, 'failed'), why(run)).toBe(0);
  expect(recapTotal(run, 'unreachable'), why(run)).toBe(0);
  expect(run.recap.size, why(run)).toBe(allServerIds.length);
  expect(run.log).not.toMatch(/AQ[A-Za-z0-9+/]{36}==/);
  result.run = run;

  // On every host: nothing of Ceph is left.
  for (const id of allServerIds) {
    const host = sys.host(id);
    const procs = await sh(host, `pgrep -a -f '[c]eph-'`);
    expect(procs.stdout.trim(), `Ceph processes on ${host.name}`).toBe('');
    expect(await cephPackages(host), `Ceph packages on ${host.name}`).toEqual([]);
    const paths = await sh(host, `for p in ${PURGED_PATHS.join(' ')}; do [ -e "$p" ] || [ -L "$p" ] && echo "$p"; done; true`);
    expect(paths.stdout.trim(), `paths left on ${host.name}`).toBe('');
    const units = await sh(host, `systemctl list-units --all --plain --no-legend 'ceph*' 'radosgw*' 'rbdmap*'; find /etc/systemd/system -name 'ceph*'`);
    expect(units.stdout.trim(), `Ceph units on ${host.name}`).toBe('');
    for (const dev of devices.get(id) ?? []) {
      const blkid = await sh(host, `blkid -p ${dev}`);
      expect({ dev, exitCode: blkid.exitCode, found: blkid.stdout.trim() }).toEqual({ dev, exitCode: 2, found: '' });
      const zero = await sh(host, `cmp -n 10485760 ${dev} /dev/zero`);
      expect(zero.exitCode, `${dev} on ${host.name}: ${zero.stdout}`).toBe(0);
      expect((await sh(host, `stat -c %U:%G ${dev}`)).stdout.trim()).toBe('root:disk');
    }
  }

  // The API: the cluster is deleted, its servers are free.
  const deleted = await sys.api.call('GET', `/v1/cluster/${fsid}/`);
  expect(deleted.status).toBe(200);
  const gone = deleted.json as Json;
  expect(gone.time_deleted).toBeGreaterThan(0);
  expect(gone.data.configuration).toEqual({});
  const live = (await sys.api.ok('GET', '/v1/cluster/?all=true')).items as Json[];
  expect(live.map((c) => c.id)).not.toContain(fsid);
  for (const id of allServerIds) expect((await sys.server(id)).data.cluster_id).toBeNull();
  const again = await sys.api.call('POST', '/v1/execution/', { playbook_configuration: { id: configuration.id, version: configuration.version } });
  expect(again.status, again.text).toBe(400);
  expect((again.json as Json).error).toMatch(/UnknownClusterError/);

  // The servers report their facts again (the discovery unit runs at every boot); the
  // builder then plans a new cluster on the devices the purge wiped.
  const t = Date.now();
  const restartedAt = Math.floor(t / 1000);
  for (const id of allServerIds) await sys.host(id).exec('systemctl restart carapace-discovery.service', { timeoutMs: 120_000 });
  for (const id of allServerIds) {
    const s = await eventually(
      `server ${id} registered again with facts gathered after the purge`,
      async () => {
        const s = await sys.server(id);
        return s.data.state === 'operational' && (s.data.facts?.gathered_at ?? 0) >= restartedAt ? s : undefined;
      },
      180_000,
    );
    // the facts see the former OSD devices without any signature
    for (const dev of devices.get(id) ?? []) {
      const disk = (s.data.facts.disks as Json[]).find((d) => d.path === dev);
      expect(disk, `${dev} in the facts of ${id}`).toBeDefined();
      expect({ dev, fstype: disk?.fstype, partitions: disk?.partitions }).toEqual({ dev, fstype: null, partitions: [] });
    }
  }
  const rediscoveryS = (Date.now() - t) / 1000;
  const next = await sys.createCluster('e2e-ceph-after-purge');
  const plan = await sys.configure('cluster_deploy', next, allServerIds);
  const hostvars = plan.data.configuration.inventory._meta.hostvars as Record<string, Json>;
  for (const id of deployed.osdIds) {
    const ip = (await sys.server(id)).data.ip as string;
    expect([...(hostvars[ip]?.carapace_osd_devices ?? [])].sort(), `devices planned on ${ip}`).toEqual([...(devices.get(id) ?? [])].sort());
  }
  // The new cluster is not deployed (no package mirror in the lab): remove it again.
  await sys.api.ok('DELETE', `/v1/cluster/${next}/`);

  result.timings = { interruptedS, purgeS: run.seconds, rediscoveryS };
  return result as PurgeResult;
}
