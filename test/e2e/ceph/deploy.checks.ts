// cluster_deploy through the API, checked on the daemons: monitors in quorum, every OSD up and
// in, health, the cluster model; then a second run of the same configuration changes nothing.
import { expect } from 'vitest';

import { recapTotal, why, type CephSystem, type Json, type PlaybookRun } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

/** What a deployed cluster of the flow is, for the checks that follow. */
export interface DeployedCluster {
  clusterId: string;
  /** The servers the cluster was deployed on, in the lab's order. */
  serverIds: string[];
  /** Monitor server ids, as the cluster model lists them. */
  monIds: string[];
  /** OSD host server ids, as the cluster model lists them. */
  osdIds: string[];
  deploy: PlaybookRun;
  configuration: Json;
}

/**
 * Health checks a small lab cannot pass, which the tests accept (and only these): a monitor
 * on the machine's shared disk may be low on space (the hosts' overlays live on it).
 */
export const LAB_HEALTH_CHECKS = new Set(['MON_DISK_LOW']);

/** Asserts HEALTH_OK or only warnings of LAB_HEALTH_CHECKS; returns the status. */
export async function expectHealthy(sys: CephSystem, serverId: string): Promise<Json> {
  const status = await sys.ceph(sys.host(serverId), 'status');
  const checks = Object.keys(status.health?.checks ?? {});
  expect(
    status.health.status === 'HEALTH_OK' || (status.health.status === 'HEALTH_WARN' && checks.every((c) => LAB_HEALTH_CHECKS.has(c))),
    `health ${status.health.status}: ${JSON.stringify(status.health.checks)}`,
  ).toBe(true);
  return status;
}

/**
 * Waits until expectHealthy passes, and fails with its message if it never does: for right
 * after a change of the OSDs. Their PGs peer and recover for a moment, and the monitor's
 * health lags the manager's PG statistics by a report or two: once every PG is active+clean,
 * `ceph status` may still show a PG_DEGRADED of the moment before.
 */
export async function waitHealthy(sys: CephSystem, serverId: string, what: string, timeoutMs = 120_000): Promise<Json> {
  return eventually(what, () => expectHealthy(sys, serverId), timeoutMs);
}

/** `ceph osd stat` numbers: every OSD up and in. */
export async function expectOsds(sys: CephSystem, monId: string, count: number): Promise<void> {
  const stat = await sys.ceph(sys.host(monId), 'osd stat');
  expect({ osds: stat.num_osds, up: stat.num_up_osds, in: stat.num_in_osds }).toEqual({ osds: count, up: count, in: count });
}

/** Runs cluster_deploy on `serverIds` (each with `disksPerHost` disks) and checks the result. */
export async function deployAndCheck(sys: CephSystem, serverIds: string[], disksPerHost: number, hints: { id: string; value: unknown }[] = []): Promise<DeployedCluster> {
  const clusterId = await sys.createCluster('e2e-ceph');
  const configuration = await sys.configure('cluster_deploy', clusterId, serverIds, hints);
  const deploy = await sys.execute(configuration);
  expect(deploy.execution.data.state, why(deploy)).toBe('completed');
  expect(recapTotal(deploy, 'failed'), why(deploy)).toBe(0);

  const cluster = await sys.cluster(clusterId);
  const monIds = (cluster.data.configuration.mons ?? []).map((m: Json) => m.server_id) as string[];
  const osdIds = (cluster.data.configuration.osds ?? []).map((m: Json) => m.server_id) as string[];
  expect(monIds.length).toBe(Math.min(3, serverIds.length));
  expect([...osdIds].sort()).toEqual([...serverIds].sort());
  for (const id of serverIds) expect((await sys.server(id)).data.cluster_id).toBe(clusterId);

  const mon = monIds[0] as string;
  const quorum = await sys.ceph(sys.host(mon), 'quorum_status');
  expect(quorum.quorum_names.length).toBe(monIds.length);
  expect(quorum.monmap.fsid).toBe(clusterId);
  await expectOsds(sys, mon, serverIds.length * disksPerHost);
  await waitHealthy(sys, mon, 'healthy after the deploy');
  // The log shows the cluster status the health role printed.
  expect(deploy.log).toMatch(/health: HEALTH_(OK|WARN)/);
  return { clusterId, serverIds, monIds, osdIds, deploy, configuration };
}

/** A second run of the same configuration: completed, changed=0 on every host, still healthy. */
export async function redeployUnchanged(sys: CephSystem, deployed: DeployedCluster, disksPerHost: number): Promise<PlaybookRun> {
  const again = await sys.execute(deployed.configuration);
  expect(again.execution.data.state, why(again)).toBe('completed');
  expect(again.recap.size).toBe(deployed.serverIds.length);
  for (const [host, line] of again.recap) expect(line.changed, `${host} changed=${line.changed}\n${why(again)}`).toBe(0);
  await expectOsds(sys, deployed.monIds[0] as string, deployed.serverIds.length * disksPerHost);
  await expectHealthy(sys, deployed.monIds[0] as string);
  return again;
}
