// The real RunnerAgent hands a completed run's files to a real control plane over gRPC
// (RunArtifact events, before the result, in the execution's sequence): they survive an
// outage like every event and become the cluster's files; a failed run sends none.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addServer } from '@carapace/test-support/facts';
import { ControlPlaneBed, type TestAgent } from './support/control-plane.js';
import { ScriptedPorts } from './support/scripted-ports.js';
import { eventually } from '@carapace/test-support/eventually';

const KEY = 'AQBRl0FmAAAAABAAm5FcwzNs3C3ey7Xo1ZgY2A==';
const FILES = [
  { name: 'ceph.client.cinder.keyring', content: `[client.cinder]\n\tkey = ${KEY}\n` },
  { name: 'ceph.conf', content: '[global]\n\tfsid = f\n' },
];

describe('the runner agent hands files back', () => {
  let bed: ControlPlaneBed;
  let ports: ScriptedPorts;

  beforeEach(async () => {
    bed = await ControlPlaneBed.start();
    ports = new ScriptedPorts();
  });
  afterEach(async () => {
    await bed.stop();
  });

  async function execute(playbookId: string, serverIds: string[]): Promise<string> {
    const config = await bed.h.request('POST', '/v1/playbook_configuration/', {
      token: bed.root,
      body: { name: playbookId, cluster_id: bed.clusterId, playbook_id: playbookId, server_ids: serverIds },
    });
    if (config.status !== 200) throw new Error(`configuration: ${config.status} ${config.body}`);
    const created = await bed.h.request('POST', '/v1/execution/', { token: bed.root, body: { playbook_configuration: { id: config.json.id, version: 1 } } });
    if (created.status !== 200) throw new Error(`execution: ${created.status} ${created.body}`);
    return created.json.id;
  }

  /** A cluster deployed on one server (the run scripted as completed). */
  async function deployed(t: TestAgent): Promise<void> {
    await eventually('connected', () => t.agent.stats.connects >= 1);
    const server = await addServer(bed.h);
    const id = await execute('cluster_deploy', [server.id]);
    (await ports.run(id)).finish('completed');
    await bed.until(id, 'completed');
  }

  const cinderFiles = () => bed.h.request('GET', `/v1/cinder_integration/${bed.clusterId}/?root=/srv/os`, { token: bed.root });

  it('before the result, resent after an outage; stored as the cluster files once the run completed', async () => {
    const t = await bed.agent('files', ports, { slots: 1 });
    await deployed(t);
    const id = await execute('cinder_integration', []);
    const run = await ports.run(id);
    run.log('TASK [openstack_clients : Read the keys] ***\n');
    await eventually('log acknowledged', async () => t.agent.pendingEvents === 0 && (await bed.log(id)).includes('Read the keys'));

    await bed.closeGrpc();
    await eventually('the agent noticed the outage', () => t.log.count('stream to the control plane lost') >= 1);
    run.finish('completed', null, FILES);
    await eventually('run over in the agent', () => t.agent.runningIds.length === 0);
    expect(t.agent.pendingEvents).toBe(3); // two files, then the result

    await bed.openGrpc();
    await bed.until(id, 'completed');
    const served = await cinderFiles();
    expect(served.status, served.body).toBe(200);
    expect(served.json).toEqual({ '/srv/os/ceph.client.cinder.keyring': FILES[0]?.content, '/srv/os/ceph.conf': FILES[1]?.content });
    expect(await bed.log(id)).not.toContain(KEY);
    expect(JSON.stringify(t.log.lines)).not.toContain(KEY);
    await eventually('all acknowledged', () => t.agent.pendingEvents === 0);
  });

  it('sends none for a run that did not complete', async () => {
    const t = await bed.agent('failing', ports, { slots: 1 });
    await deployed(t);
    const id = await execute('cinder_integration', []);
    const run = await ports.run(id);
    run.log('TASK [openstack_clients : Read the keys] ***\n');
    await eventually('log acknowledged', async () => t.agent.pendingEvents === 0 && (await bed.log(id)).includes('Read the keys'));
    await bed.closeGrpc();
    await eventually('the agent noticed the outage', () => t.log.count('stream to the control plane lost') >= 1);
    run.finish('failed', 'a task failed', FILES);
    await eventually('run over in the agent', () => t.agent.runningIds.length === 0);
    expect(t.agent.pendingEvents).toBe(1); // the result only
    await bed.openGrpc();
    await bed.until(id, 'failed');
    expect((await cinderFiles()).status).toBe(404);
  });
});
