// Previews and relaunches (issue 31) on a real cluster: a preview of the deployed cluster's
// cluster_deploy changes nothing and finds every task unchanged; a preview of add_osd names
// the devices it would prepare and prepares none. The preview of remove_osd whose data exists
// nowhere else, and the relaunch of add_osd's failed host, are in osd.checks.ts.
import { expect } from 'vitest';

import type { DeployedCluster } from './deploy.checks.js';
import type { CephSystem, Json } from './system.js';
import type { LabHost } from '../../lab/lab.js';
import { eventually } from '@carapace/test-support/eventually';

/** What a preview answered: the execution, its per-host result, its log. */
export interface PreviewRun {
  id: string;
  execution: Json;
  preview: Json;
  log: string;
}

/** Runs a preview of a configuration's latest version through the API and waits for its end. */
export async function preview(sys: CephSystem, configuration: Json, timeoutMs = 10 * 60_000): Promise<PreviewRun> {
  const created = await sys.api.ok('POST', '/v1/execution/', { playbook_configuration: { id: configuration.id, version: configuration.version }, preview: true });
  const id = created.id as string;
  expect(created.data.preview).toBe(true);
  const execution = await eventually(
    `preview ${id} (${configuration.data?.playbook_id}) to end`,
    async () => {
      const e = await sys.api.ok('GET', `/v1/execution/${id}/`);
      return ['completed', 'failed', 'canceled'].includes(e.data.state) ? e : undefined;
    },
    timeoutMs,
  );
  const result = await sys.api.ok('GET', `/v1/execution/${id}/preview/`);
  const log = (await sys.api.call('GET', `/v1/execution/${id}/log/`, undefined, true, { accept: 'text/plain' })).text;
  return { id, execution, preview: result, log };
}

/** The tasks of a preview with a status, as `host: role/name (why)` lines, for messages. */
export function tasksWith(run: PreviewRun, status: string): string[] {
  return (run.preview.hosts as Json[]).flatMap((h) =>
    (h.tasks as Json[]).filter((t) => t.status === status).map((t) => `${h.server_id}: ${t.role ?? ''}/${t.name} ${t.why ?? ''} ${(t.diff ?? '').slice(0, 200)}`),
  );
}

/** What a host is, for "nothing changed": its files under /etc and /var/lib/ceph, its packages, its block devices' signatures. */
async function fingerprint(host: LabHost): Promise<string> {
  const { stdout } = await host.exec(
    [
      // /etc by content and time; /var/lib/ceph by name only (the daemons write their stores all the time)
      'find /etc -xdev -type f -printf "%p %s %T@\\n" 2>/dev/null | grep -v -e "^/etc/ld.so.cache" | sort | sha256sum',
      'find /var/lib/ceph -maxdepth 2 -printf "%p\\n" 2>/dev/null | grep -v "^/var/lib/ceph/crash" | sort | sha256sum',
      "dpkg-query -W -f '${Package} ${Version}\\n' | sha256sum",
      'ls /dev/disk/by-id 2>/dev/null | sort | sha256sum',
      'for d in $(lsblk -dnpo NAME 2>/dev/null); do echo "$d $(blkid -p -o value -s TYPE "$d" 2>/dev/null)"; done | sort',
    ].join('; '),
    { timeoutMs: 120_000 },
  );
  return stdout;
}

/** The OSD map's OSDs (id, up, in) and the monitors, on a monitor. */
async function cephState(sys: CephSystem, mon: LabHost): Promise<string> {
  const dump = await sys.ceph(mon, 'osd dump');
  const monmap = await sys.ceph(mon, 'mon dump');
  return JSON.stringify({ osds: (dump.osds as Json[]).map((o) => [o.osd, o.up, o.in]), flags: dump.flags, mons: (monmap.mons as Json[]).map((m) => m.name) });
}

/** A preview of the deployed cluster's own cluster_deploy: completed, every task unchanged on every host, nothing changed. */
export async function previewRedeployUnchanged(sys: CephSystem, deployed: DeployedCluster): Promise<PreviewRun> {
  const mon = sys.host(deployed.monIds[0] as string);
  const hosts = deployed.serverIds.map((id) => sys.host(id));
  const before = await Promise.all(hosts.map(fingerprint));
  const ceph = await cephState(sys, mon);
  const run = await preview(sys, deployed.configuration);
  expect(run.execution.data.state, `${run.execution.data.reason}\n${run.log.slice(-3000)}`).toBe('completed');
  expect(run.preview.hosts).toHaveLength(deployed.serverIds.length);
  expect(tasksWith(run, 'would_change'), 'tasks that would change on a deployed cluster').toEqual([]);
  expect(tasksWith(run, 'would_fail')).toEqual([]);
  expect(tasksWith(run, 'unknown'), 'tasks a preview cannot know on a deployed cluster').toEqual([]);
  for (const h of run.preview.hosts as Json[]) expect(h.counts.unchanged).toBeGreaterThan(0);
  expect(await Promise.all(hosts.map(fingerprint))).toEqual(before);
  expect(await cephState(sys, mon)).toBe(ceph);
  // Listed apart: not among the real runs.
  const real = await sys.api.ok('GET', '/v1/execution/?all=yes');
  expect((real.items as Json[]).map((e) => e.id)).not.toContain(run.id);
  return run;
}

/** A preview of add_osd on a host with free disks: names the devices it would prepare, prepares none. */
export async function previewAddOsd(sys: CephSystem, deployed: DeployedCluster, serverId: string): Promise<PreviewRun> {
  const mon = sys.host(deployed.monIds[0] as string);
  const host = sys.host(serverId);
  const before = await fingerprint(host);
  const ceph = await cephState(sys, mon);
  const cluster = await sys.cluster(deployed.clusterId);
  const configuration = await sys.configure('add_osd', deployed.clusterId, [serverId], [], 'add_osd preview');
  const run = await preview(sys, configuration);
  expect(run.execution.data.state, `${run.execution.data.reason}\n${run.log.slice(-3000)}`).toBe('completed');
  const server = await sys.server(serverId);
  // The devices the run would prepare (the configuration's inventory), each named in what the preview says it would change.
  const hostvars = (configuration.data.configuration?.inventory?._meta?.hostvars?.[server.data.ip] ?? {}) as Json;
  const named = (hostvars.carapace_osd_devices ?? []) as string[];
  const changes = JSON.stringify((run.preview.hosts as Json[]).flatMap((h) => (h.tasks as Json[]).filter((t) => t.status === 'would_change')));
  expect(named.length, `the devices of ${host.name}: ${JSON.stringify(hostvars).slice(0, 500)}`).toBeGreaterThan(0);
  for (const device of named) expect(changes, `the preview names ${device}`).toContain(device.replace(/^\/dev\//, ''));
  expect(await fingerprint(host)).toBe(before);
  expect(await cephState(sys, mon)).toBe(ceph);
  expect((await sys.cluster(deployed.clusterId)).version).toBe(cluster.version);
  expect((await sys.server(serverId)).data.cluster_id ?? null).toBe(server.data.cluster_id ?? null);
  return run;
}
