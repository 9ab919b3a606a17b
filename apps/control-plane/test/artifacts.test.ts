// Files a run hands back (RunArtifact) over a real gRPC stream: stored once when they arrive,
// given to the playbook's effects when the run completes (cinder_integration: the cluster's
// files, GET /v1/cinder_integration/), forgotten when it ends otherwise, never in the log.
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACT_LIMITS, grpc, PROTOCOL_VERSION, type RunnerMessage } from '@carapace/protocol';
import type { GrpcServer } from '../src/grpc/grpc.server.js';
import { addServer } from '@carapace/test-support/facts';
import type { Harness } from '@carapace/test-support/harness';
import { RawRunnerStream, runnerToken, startGrpcHarness } from '@carapace/test-support/raw-runner';
import { eventually } from '@carapace/test-support/eventually';

/** A runner spoken by hand: a raw stream to the real gRPC server. */
class RawRunner extends RawRunnerStream {
  send(message: RunnerMessage): void {
    this.call.write(message);
  }

  hello(name: string, running: string[] = []): void {
    this.send({ hello: { protocol_version: PROTOCOL_VERSION, name, version: 'test', labels: {}, slots: 4, running_execution_ids: running, ssh_public_key: '' } });
  }

  assigned(id: string): boolean {
    return this.received.some((m) => m.body === 'assignment' && m.assignment?.execution_id === id);
  }

  ackOf(id: string): number {
    return Math.max(0, ...this.received.filter((m) => m.body === 'ack' && m.ack?.execution_id === id).map((m) => m.ack?.seq ?? 0));
  }
}

const KEY = 'AQBRl0FmAAAAABAAm5FcwzNs3C3ey7Xo1ZgY2A==';
const CONF = '# minimal ceph.conf\n[global]\n\tfsid = f\n\tmon_host = [v2:10.0.0.1:3300/0,v1:10.0.0.1:6789/0]\n';
const keyring = (client: string, key = KEY) => `[client.${client}]\n\tkey = ${key}\n`;

describe('files handed back by a run', () => {
  let h: Harness;
  let grpcServer: GrpcServer;
  let root: string;
  let clusterId: string;
  let token: string;
  const open: RawRunner[] = [];

  beforeAll(async () => {
    ({ h, grpcServer, root, clusterId } = await startGrpcHarness('openstack'));
    token = await runnerToken(h, root, 'files');
    // A deployed cluster: cluster_deploy of one server, completed by the runner.
    const server = await addServer(h);
    const deployed = await execute('cluster_deploy', [server.id]);
    const r = runner();
    await eventually('deploy assigned', () => r.assigned(deployed));
    r.send({ result: { execution_id: deployed, seq: 1, outcome: 'completed', reason: '' } });
    await eventually('deploy completed', async () => (await state(deployed)) === 'completed');
    r.close();
  });
  afterEach(() => {
    for (const r of open.splice(0)) r.close();
  });
  afterAll(async () => {
    await grpcServer.close();
    await h.stop();
  });

  function runner(running: string[] = []): RawRunner {
    const r = new RawRunner(grpcServer.port, token);
    r.hello('files', running);
    open.push(r);
    return r;
  }

  async function execute(playbookId: string, serverIds: string[]): Promise<string> {
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: playbookId, cluster_id: clusterId, playbook_id: playbookId, server_ids: serverIds },
    });
    expect(config.status, config.body).toBe(200);
    const created = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: 1 } } });
    expect(created.status, created.body).toBe(200);
    return created.json.id;
  }

  async function state(id: string): Promise<string> {
    return (await h.request('GET', `/v1/execution/${id}/`, { token: root })).json.data.state;
  }

  const cinderFiles = () => h.request('GET', `/v1/cinder_integration/${clusterId}/?root=/etc/ceph`, { token: root });
  const storedArtifacts = async () => (await h.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM execution_artifacts`))?.n;

  it('stores the files of a completed cinder_integration run as the cluster files, once, and keeps them out of the log', async () => {
    expect((await cinderFiles()).status).toBe(404);
    const id = await execute('cinder_integration', []);
    const r = runner();
    await eventually('assigned', () => r.assigned(id));
    const files = [
      { name: 'ceph.client.cinder.keyring', content: keyring('cinder') },
      { name: 'ceph.client.glance.keyring', content: keyring('glance', KEY.replace('AQ', 'AR')) },
      { name: 'ceph.conf', content: CONF },
    ];
    r.send({ log: { execution_id: id, seq: 1, offset: 0, text: 'TASK [openstack_clients : Read the keys]\nok: [10.0.0.10] => (item=None)\n' } });
    files.forEach((f, i) => r.send({ artifact: { execution_id: id, seq: i + 2, ...f } }));
    // resent after a blip: stored once
    r.send({ artifact: { execution_id: id, seq: 2, name: 'ceph.client.cinder.keyring', content: keyring('cinder') } });
    await eventually('artifacts acknowledged', () => r.ackOf(id) >= 4);
    expect(await storedArtifacts()).toBe(3);
    // not the cluster's before the run completed
    expect((await cinderFiles()).status).toBe(404);
    r.send({ result: { execution_id: id, seq: 5, outcome: 'completed', reason: '' } });
    await eventually('completed', async () => (await state(id)) === 'completed');
    const served = await cinderFiles();
    expect(served.status, served.body).toBe(200);
    expect(served.json).toEqual({
      '/etc/ceph/ceph.client.cinder.keyring': keyring('cinder'),
      '/etc/ceph/ceph.client.glance.keyring': keyring('glance', KEY.replace('AQ', 'AR')),
      '/etc/ceph/ceph.conf': CONF,
    });
    expect(await storedArtifacts()).toBe(0);
    for (const path of [`/v1/execution/${id}/log/`, `/v1/execution/${id}/steps/`, `/v1/execution/${id}/`, `/v1/execution/${id}/version/`]) {
      expect((await h.request('GET', path, { token: root })).body).not.toContain(KEY);
    }
  });

  it("a monitor run's client ceph.conf replaces the stored one; the keyrings stay; the model gains the monitor", async () => {
    const before = (await cinderFiles()).json as Record<string, string>;
    const newMon = await addServer(h);
    const id = await execute('add_mon', [newMon.id]);
    const r = runner();
    await eventually('assigned', () => r.assigned(id));
    const conf = CONF.replace(']\n', `],[v2:${newMon.data.ip}:3300/0,v1:${newMon.data.ip}:6789/0]\n`);
    r.send({ artifact: { execution_id: id, seq: 1, name: 'ceph.conf', content: conf } });
    // a keyring among a monitor run's files is not taken: only ceph.conf is refreshed
    r.send({ artifact: { execution_id: id, seq: 2, name: 'ceph.client.cinder.keyring', content: keyring('cinder', KEY.replace('AQ', 'AS')) } });
    await eventually('acknowledged', () => r.ackOf(id) >= 2);
    r.send({ result: { execution_id: id, seq: 3, outcome: 'completed', reason: '' } });
    await eventually('completed', async () => (await state(id)) === 'completed');
    expect((await cinderFiles()).json).toEqual({ ...before, '/etc/ceph/ceph.conf': conf });
    const cluster = (await h.request('GET', `/v1/cluster/${clusterId}/`, { token: root })).json;
    expect(cluster.data.configuration.mons.map((m: { server_id: string }) => m.server_id)).toContain(newMon.id);
    expect((await h.request('GET', `/v1/server/${newMon.id}/`, { token: root })).json.data.cluster_id).toBe(clusterId);
  });

  it('a run that fails or is canceled changes no file, and its files are forgotten', async () => {
    const before = (await cinderFiles()).json;
    for (const outcome of ['failed', 'canceled'] as const) {
      const id = await execute('cinder_integration', []);
      const r = runner();
      await eventually('assigned', () => r.assigned(id));
      r.send({ artifact: { execution_id: id, seq: 1, name: 'ceph.conf', content: '[global]\n\tfsid = other\n' } });
      await eventually('acknowledged', () => r.ackOf(id) >= 1);
      expect(await storedArtifacts()).toBe(1);
      if (outcome === 'canceled') expect((await h.request('DELETE', `/v1/execution/${id}/`, { token: root })).json.data.state).toBe('canceling');
      r.send({ result: { execution_id: id, seq: 2, outcome, reason: 'boom' } });
      await eventually(outcome, async () => (await state(id)) === outcome);
      expect((await cinderFiles()).json).toEqual(before);
      expect(await storedArtifacts()).toBe(0);
      // a file coming after the end is dropped (and acknowledged)
      r.send({ artifact: { execution_id: id, seq: 3, name: 'late.conf', content: 'x' } });
      await eventually('late one acknowledged', () => r.ackOf(id) >= 3);
      expect(await storedArtifacts()).toBe(0);
      r.close();
    }
  });

  it('refuses files past the bounds with INVALID_ARGUMENT', async () => {
    const id = await execute('cinder_integration', []);
    let r = runner();
    await eventually('assigned', () => r.assigned(id));
    const refused = async (message: RunnerMessage, why: RegExp) => {
      r.send(message);
      await eventually('stream refused', () => r.status !== null);
      expect(r.status?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(r.status?.details).toMatch(why);
      r = runner([id]);
      await eventually('welcomed', () => r.received.some((m) => m.body === 'welcome'));
    };
    await refused({ artifact: { execution_id: id, seq: 1, name: '../ceph.conf', content: 'x' } }, /artifact name/);
    await refused({ artifact: { execution_id: id, seq: 1, name: 'big', content: '✓'.repeat(ARTIFACT_LIMITS.maxBytes / 3 + 1) } }, /at most 65536 bytes/);
    for (let i = 1; i <= ARTIFACT_LIMITS.maxFiles; i++) r.send({ artifact: { execution_id: id, seq: i, name: `f${i}`, content: 'x' } });
    await eventually('all acknowledged', () => r.ackOf(id) >= ARTIFACT_LIMITS.maxFiles);
    await refused({ artifact: { execution_id: id, seq: ARTIFACT_LIMITS.maxFiles + 1, name: 'one-more', content: 'x' } }, /at most 32 files/);
    expect(await storedArtifacts()).toBe(ARTIFACT_LIMITS.maxFiles);
    r.send({ result: { execution_id: id, seq: ARTIFACT_LIMITS.maxFiles + 1, outcome: 'failed', reason: 'gave up' } });
    await eventually('failed', async () => (await state(id)) === 'failed');
    expect(await storedArtifacts()).toBe(0);
  });
});
