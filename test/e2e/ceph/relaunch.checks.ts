// A relaunch of failed hosts on a real cluster (issue 31): add_osd on two new hosts, one of
// which stops answering SSH midway, then POST /v1/execution/{id}/relaunch/ with hosts: failed.
import { expect } from 'vitest';

import { waitHealthy, type DeployedCluster } from './deploy.checks.js';
import { expectAddedOsds } from './osd.checks.js';
import { recapTotal, why, type CephSystem, type Json, type PlaybookRun } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

/**
 * add_osd on `serverIds` where the last host stops answering SSH once it has a step: the run
 * fails with that host unreachable; with its sshd back, a relaunch of the failed hosts runs on
 * that host only and completes, and every OSD of both hosts is up and in (expectAddedOsds); a second run changes nothing.
 */
export async function addOsdRelaunchFailedHosts(sys: CephSystem, deployed: DeployedCluster, serverIds: string[], disksPerHost: number): Promise<{ failed: Json; relaunch: PlaybookRun }> {
  const before = (await sys.ceph(sys.host(deployed.monIds[0] as string), 'osd stat')).num_osds as number;
  const cut = serverIds[serverIds.length - 1] as string;
  const host = sys.host(cut);
  const configuration = await sys.configure('add_osd', deployed.clusterId, serverIds, [], 'add_osd relaunched');
  const created = await sys.api.ok('POST', '/v1/execution/', { playbook_configuration: { id: configuration.id, version: configuration.version } });
  const id = created.id as string;
  const steps = async (executionId: string): Promise<Json[]> => (await sys.api.ok('GET', `/v1/execution/${executionId}/steps/?all=true`)).items as Json[];
  await eventually(`a first step on ${host.name}`, async () => ((await steps(id)).some((s) => s.data.server_id === cut) ? true : undefined), 5 * 60_000);
  await host.exec('systemctl stop ssh.socket ssh.service 2>/dev/null; pkill -KILL -x sshd; true', { check: false });
  let failed: Json;
  try {
    failed = await eventually(
      `execution ${id} to end`,
      async () => {
        const e = await sys.api.ok('GET', `/v1/execution/${id}/`);
        return ['completed', 'failed', 'canceled'].includes(e.data.state) ? e : undefined;
      },
      15 * 60_000,
    );
  } finally {
    await host.exec('systemctl start ssh.service');
  }
  expect(failed.data.state).toBe('failed');
  const all = await steps(id);
  expect(all.some((s) => s.data.server_id === cut && s.data.result === 'unreachable'), 'an unreachable step of the cut host').toBe(true);

  const relaunched = await sys.api.ok('POST', `/v1/execution/${id}/relaunch/`, { hosts: 'failed' });
  expect(relaunched.data).toMatchObject({ relaunch_of: id, limit_server_ids: [cut], relaunch: { hosts: 'failed', whole: false } });
  const execution = await eventually(
    `relaunch ${relaunched.id} to end`,
    async () => {
      const e = await sys.api.ok('GET', `/v1/execution/${relaunched.id}/`);
      return ['completed', 'failed', 'canceled'].includes(e.data.state) ? e : undefined;
    },
    15 * 60_000,
  );
  const log = (await sys.api.call('GET', `/v1/execution/${relaunched.id}/log/`, undefined, true, { accept: 'text/plain' })).text;
  const relaunchSteps = await steps(relaunched.id);
  const relaunch: PlaybookRun = { id: relaunched.id, configurationId: configuration.id, execution, log, steps: relaunchSteps, recap: new Map(), seconds: 0 };
  expect(execution.data.state, why(relaunch)).toBe('completed');
  // On the cut host only, of the execution's servers; the monitors (no server of the
  // execution: server_id null) run their pre-flight reads and the wait for the new OSDs.
  expect(new Set(relaunchSteps.filter((s) => s.data.server_id !== null).map((s) => s.data.server_id)), 'the relaunch ran on the cut host only').toEqual(new Set([cut]));
  expect(relaunchSteps.filter((s) => s.data.server_id === null && s.data.result === 'changed').map((s) => s.data.name), 'nothing changed on the monitors').toEqual([]);
  expect((await sys.api.ok('GET', `/v1/execution/${id}/`)).data.relaunched_by).toEqual([relaunched.id]);

  await waitHealthy(sys, deployed.monIds[0] as string, 'healthy with the new OSDs');
  await expectAddedOsds(sys, deployed, serverIds, disksPerHost, before);
  // The whole configuration again: nothing left to do on either host.
  const again = await sys.execute(configuration);
  expect(again.execution.data.state, why(again)).toBe('completed');
  expect(recapTotal(again, 'changed'), why(again)).toBe(0);
  return { failed, relaunch };
}
