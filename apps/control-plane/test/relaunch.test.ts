// Previews and relaunches (issue 31) through the public API and a real gRPC stream, the
// runner spoken by hand: a preview is handed out with check_mode, locks no server, applies
// no effect, is listed apart and answers its verdicts per host; an older runner is not given
// one; a relaunch of failed hosts is limited to them (limit_hosts) where the playbook allows
// a subset, whole with a note where it does not, and linked both ways; bad input is a 4xx.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION } from '@carapace/protocol';
import type { GrpcServer } from '../src/grpc/grpc.server.js';
import { addServer } from '@carapace/test-support/facts';
import type { Harness } from '@carapace/test-support/harness';
import { RawRunnerStream, runnerToken as issueRunnerToken, startGrpcHarness } from '@carapace/test-support/raw-runner';
import { eventually } from '@carapace/test-support/eventually';

/** A runner spoken by hand: a raw stream to the real gRPC server. */
class RawRunner extends RawRunnerStream {
  private readonly seqs = new Map<string, number>();

  hello(name: string, capabilities: string[]): void {
    this.call.write({
      hello: { protocol_version: PROTOCOL_VERSION, name, version: 'test', labels: {}, slots: 8, running_execution_ids: [], ssh_public_key: '', capabilities },
    });
  }

  assignment(id: string) {
    return this.received.find((m) => m.body === 'assignment' && m.assignment?.execution_id === id)?.assignment;
  }

  private seq(id: string): number {
    const next = (this.seqs.get(id) ?? 0) + 1;
    this.seqs.set(id, next);
    return next;
  }

  step(id: string, host: string, name: string, result: string, extra: { preview?: unknown; error?: unknown; ignored?: boolean } = {}): void {
    const now = Date.now() / 1000;
    this.call.write({
      step: {
        execution_id: id,
        seq: this.seq(id),
        host,
        role: 'r',
        name,
        result,
        error_json: JSON.stringify(extra.error ?? {}),
        time_started: now,
        time_finished: now,
        preview_json: extra.preview ? JSON.stringify(extra.preview) : '',
        ignored: extra.ignored ?? false,
      },
    });
  }

  finish(id: string, outcome: 'completed' | 'failed' | 'canceled', reason = ''): void {
    this.call.write({ result: { execution_id: id, seq: this.seq(id), outcome, reason } });
  }
}

describe('previews and relaunches', () => {
  let h: Harness;
  let grpcServer: GrpcServer;
  let root: string;
  let clusterId: string;
  let runnerToken: string;
  let oldRunnerToken: string;
  const open: RawRunner[] = [];

  beforeAll(async () => {
    ({ h, grpcServer, root, clusterId } = await startGrpcHarness('previews'));
    runnerToken = await issueRunnerToken(h, root, 'new-runner');
    oldRunnerToken = await issueRunnerToken(h, root, 'old-runner');
  });
  afterEach(() => {
    for (const r of open.splice(0)) r.close();
  });
  afterAll(async () => {
    await grpcServer.close();
    await h.stop();
  });

  function runner(old = false): RawRunner {
    const r = new RawRunner(grpcServer.port, old ? oldRunnerToken : runnerToken);
    r.hello(old ? 'old-runner' : 'new-runner', old ? [] : ['preview']);
    open.push(r);
    return r;
  }

  async function configuration(playbookId: string, serverIds: string[], cluster = clusterId): Promise<{ id: string; version: number }> {
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: playbookId, cluster_id: cluster, playbook_id: playbookId, server_ids: serverIds },
    });
    expect(config.status, config.body).toBe(200);
    return { id: config.json.id, version: config.json.version };
  }

  async function execute(config: { id: string; version: number }, preview = false, token = root) {
    const body: Record<string, unknown> = { playbook_configuration: config };
    if (preview) body.preview = true;
    return h.request('POST', '/v1/execution/', { token, body });
  }

  async function execution(id: string) {
    return (await h.request('GET', `/v1/execution/${id}/`, { token: root })).json;
  }

  async function stateIs(id: string, state: string): Promise<boolean> {
    return (await execution(id)).data.state === state;
  }

  it('a preview: check_mode to the runner, verdicts per host, no effects, listed apart', async () => {
    const server = await addServer(h);
    const config = await configuration('cluster_deploy', [server.id]);
    const created = await execute(config, true);
    expect(created.status, created.body).toBe(200);
    expect(created.json.data).toMatchObject({ preview: true, state: 'created' });
    const id = created.json.id as string;

    // listed apart: not in the default list, alone with ?preview=true
    const real = await h.request('GET', '/v1/execution/?all=yes', { token: root });
    expect(real.json.items.map((e: { id: string }) => e.id)).not.toContain(id);
    const previews = await h.request('GET', '/v1/execution/?preview=true', { token: root });
    expect(previews.json.items.map((e: { id: string }) => e.id)).toEqual([id]);
    const streamed = await h.request('GET', '/v1/execution/?preview=yes&all=yes', { token: root });
    expect(streamed.json.items.map((e: { id: string }) => e.id)).toEqual([id]);
    const bad = await h.request('GET', '/v1/execution/?preview=maybe', { token: root });
    expect(bad.status).toBe(400);
    expect(bad.json.description).toMatch(/preview/);

    const r = runner();
    await eventually('preview assigned', () => r.assignment(id) !== undefined);
    expect(r.assignment(id)).toMatchObject({ check_mode: true, limit_hosts: [] });
    const ip = server.data.ip;
    r.step(id, ip, 'install ceph', 'ok', { preview: { status: 'would_change', diff: '+ceph-mon\n' } });
    r.step(id, ip, 'write ceph.conf', 'ok', { preview: { status: 'would_change', diff: '--- before\n+++ after\n+[global]\n' } });
    r.step(id, ip, 'python3 present', 'ok', { preview: { status: 'unchanged' } });
    r.step(id, ip, 'create the monitor', 'skipped', { preview: { status: 'unknown', why: 'remote module (command) does not support check mode' } });
    r.step(id, ip, 'quorum gate', 'error', { preview: { status: 'would_fail', why: 'no quorum' }, error: { msg: 'no quorum' } });
    r.finish(id, 'completed');
    await eventually('preview completed', () => stateIs(id, 'completed'));

    const result = await h.request('GET', `/v1/execution/${id}/preview/`, { token: root });
    expect(result.status, result.body).toBe(200);
    expect(result.json).toEqual({
      execution_id: id,
      state: 'completed',
      hosts: [
        {
          server_id: server.id,
          counts: { would_change: 2, unchanged: 1, would_fail: 1, unknown: 1 },
          tasks: [
            { role: 'r', name: 'install ceph', status: 'would_change', diff: '+ceph-mon\n' },
            { role: 'r', name: 'write ceph.conf', status: 'would_change', diff: '--- before\n+++ after\n+[global]\n' },
            { role: 'r', name: 'python3 present', status: 'unchanged' },
            { role: 'r', name: 'create the monitor', status: 'unknown', why: 'remote module (command) does not support check mode' },
            { role: 'r', name: 'quorum gate', status: 'would_fail', why: 'no quorum' },
          ],
        },
      ],
    });
    // the steps carry the verdict too
    const steps = await h.request('GET', `/v1/execution/${id}/steps/`, { token: root });
    expect(steps.json.items[0].data.preview).toEqual({ status: 'would_change', diff: '+ceph-mon\n' });

    // no effects: the server did not join, the cluster is as it was
    const after = (await h.request('GET', `/v1/server/${server.id}/`, { token: root })).json;
    expect(after.data.cluster_id).toBeNull();
    const cluster = (await h.request('GET', `/v1/cluster/${clusterId}/`, { token: root })).json;
    expect(cluster.data.configuration).toEqual({});

    // a real run has no preview result, and its steps no verdict
    const realRun = await execute(config);
    r.finish(realRun.json.id, 'completed');
    await eventually('real run assigned', () => r.assignment(realRun.json.id) !== undefined);
    expect(r.assignment(realRun.json.id)?.check_mode).toBe(false);
    expect(realRun.json.data.preview).toBeUndefined();
    const none = await h.request('GET', `/v1/execution/${realRun.json.id}/preview/`, { token: root });
    expect(none.status).toBe(404);
    expect(none.json.description).toMatch(/not a preview/);
    const unknown = await h.request('GET', '/v1/execution/3f1e1b4c-1111-4222-8333-444455556666/preview/', { token: root });
    expect(unknown.status).toBe(404);
  });

  it('a preview locks no server: it runs beside a real run of its servers and holds back none', async () => {
    const server = await addServer(h);
    const config = await configuration('hello_world', [server.id]);
    const r = runner();
    const real = (await execute(config)).json.id as string;
    await eventually('real run assigned', () => r.assignment(real) !== undefined);
    // the real run holds the server: a preview of it starts all the same
    const preview = (await execute(config, true)).json.id as string;
    await eventually('preview assigned beside the real run', () => r.assignment(preview) !== undefined);
    r.finish(real, 'completed');
    await eventually('real run completed', () => stateIs(real, 'completed'));
    // the preview still runs: a real run of the same server starts all the same
    const next = (await execute(config)).json.id as string;
    await eventually('real run assigned beside the preview', () => r.assignment(next) !== undefined);
    expect(await stateIs(preview, 'started')).toBe(true);
    r.finish(preview, 'completed');
    r.finish(next, 'completed');
    await eventually('both ended', async () => (await stateIs(preview, 'completed')) && (await stateIs(next, 'completed')));
  });

  it('an older runner, which would run a preview for real, is not given one', async () => {
    const server = await addServer(h);
    const config = await configuration('hello_world', [server.id]);
    runner(true);
    const preview = (await execute(config, true)).json.id as string;
    await eventually('preview failed', () => stateIs(preview, 'failed'));
    expect((await execution(preview)).data.reason).toMatch(/cannot run previews/);
  });

  it('relaunches the failed and unreachable hosts only, linked both ways; ignored errors do not count', async () => {
    const [a, b, c] = [await addServer(h), await addServer(h), await addServer(h)];
    const config = await configuration('hello_world', [a.id, b.id, c.id]);
    const r = runner();
    const first = (await execute(config)).json.id as string;
    await eventually('assigned', () => r.assignment(first) !== undefined);

    // running: no relaunch yet
    const early = await h.request('POST', `/v1/execution/${first}/relaunch/`, { token: root, body: {} });
    expect(early.status).toBe(409);
    expect(early.json.error).toBe('ExecutionNotFinished');

    r.step(first, a.data.ip, 'say hello', 'ok');
    r.step(first, a.data.ip, 'optional check', 'error', { error: { msg: 'ignored' }, ignored: true });
    r.step(first, b.data.ip, 'say hello', 'unreachable', { error: { msg: 'ssh: connect to host: No route to host' } });
    r.step(first, c.data.ip, 'say hello', 'error', { error: { msg: 'port in use' } });
    r.finish(first, 'failed', '1 host failed, 1 host unreachable');
    await eventually('failed', () => stateIs(first, 'failed'));

    const relaunched = await h.request('POST', `/v1/execution/${first}/relaunch/`, { token: root, body: { hosts: 'failed' } });
    expect(relaunched.status, relaunched.body).toBe(200);
    const second = relaunched.json.id as string;
    expect(relaunched.json.data).toMatchObject({
      playbook_configuration: { id: config.id, version: config.version, playbook_name: 'hello_world' },
      state: 'created',
      relaunch_of: first,
      limit_server_ids: [b.id, c.id],
      relaunch: { hosts: 'failed', whole: false, note: null },
    });
    expect(relaunched.json.data.preview).toBeUndefined();
    expect((await execution(first)).data.relaunched_by).toEqual([second]);
    await eventually('relaunch assigned', () => r.assignment(second) !== undefined);
    expect(r.assignment(second)?.limit_hosts).toEqual([b.data.ip, c.data.ip]);
    r.finish(second, 'completed');
    await eventually('relaunch completed', () => stateIs(second, 'completed'));

    // all, a second time: every host, and the original links both
    const all = await h.request('POST', `/v1/execution/${first}/relaunch/`, { token: root });
    expect(all.status, all.body).toBe(200);
    expect(all.json.data).toMatchObject({ relaunch_of: first, relaunch: { hosts: 'all', whole: true, note: null } });
    expect(all.json.data.limit_server_ids).toBeUndefined();
    expect((await execution(first)).data.relaunched_by).toEqual([second, all.json.id]);
    await eventually('assigned', () => r.assignment(all.json.id) !== undefined);
    expect(r.assignment(all.json.id)?.limit_hosts).toEqual([]);
    r.finish(all.json.id, 'completed');
    await eventually('completed', () => stateIs(all.json.id, 'completed'));

    // a completed execution has no failed hosts
    const none = await h.request('POST', `/v1/execution/${second}/relaunch/`, { token: root, body: { hosts: 'failed' } });
    expect(none.status).toBe(409);
    expect(none.json.error).toBe('CannotRelaunchFailedHosts');
  });

  it('a playbook that does not allow a subset relaunches whole, and says so', async () => {
    const server = await addServer(h);
    const fresh = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'whole' } })).json.id as string;
    const config = await configuration('cluster_deploy', [server.id], fresh);
    const r = runner();
    const first = (await execute(config)).json.id as string;
    await eventually('assigned', () => r.assignment(first) !== undefined);
    r.step(first, server.data.ip, 'create the monitor', 'error', { error: { msg: 'boom' } });
    r.finish(first, 'failed', '1 host failed');
    await eventually('failed', () => stateIs(first, 'failed'));
    const relaunched = await h.request('POST', `/v1/execution/${first}/relaunch/`, { token: root, body: { hosts: 'failed' } });
    expect(relaunched.status, relaunched.body).toBe(200);
    expect(relaunched.json.data.relaunch).toMatchObject({ hosts: 'failed', whole: true });
    expect(relaunched.json.data.relaunch.note).toMatch(/cluster_deploy does not run on a subset of its hosts \(a deployment configures its monitors/);
    expect(relaunched.json.data.limit_server_ids).toBeUndefined();
    await eventually('assigned', () => r.assignment(relaunched.json.id) !== undefined);
    r.finish(relaunched.json.id, 'canceled');
  });

  it('a canceled execution with no failed host relaunches on every host, and says why', async () => {
    const server = await addServer(h);
    const config = await configuration('hello_world', [server.id]);
    const queued = (await execute(config)).json.id as string;
    const canceled = await h.request('DELETE', `/v1/execution/${queued}/`, { token: root });
    expect(canceled.json.data.state).toBe('canceled');
    const relaunched = await h.request('POST', `/v1/execution/${queued}/relaunch/`, { token: root, body: { hosts: 'failed' } });
    expect(relaunched.status, relaunched.body).toBe(200);
    expect(relaunched.json.data.relaunch).toMatchObject({ hosts: 'failed', whole: true });
    expect(relaunched.json.data.relaunch.note).toMatch(/^No host failed on its own/);
    await h.request('DELETE', `/v1/execution/${relaunched.json.id}/`, { token: root });
  });

  it('a run that stopped at the pre-flight relaunches every host: none of them ran', async () => {
    const [a, b] = [await addServer(h), await addServer(h)];
    const config = await configuration('hello_world', [a.id, b.id]);
    const r = runner();
    const first = (await execute(config)).json.id as string;
    await eventually('assigned', () => r.assignment(first) !== undefined);
    r.step(first, b.data.ip, 'pre-flight SSH check', 'unreachable', { error: { msg: 'connect ETIMEDOUT', unreachable: true } });
    r.finish(first, 'failed', `pre-flight failed: ${b.data.ip}: connect ETIMEDOUT`);
    await eventually('failed', () => stateIs(first, 'failed'));
    const relaunched = await h.request('POST', `/v1/execution/${first}/relaunch/`, { token: root, body: { hosts: 'failed' } });
    expect(relaunched.status, relaunched.body).toBe(200);
    expect(relaunched.json.data.relaunch).toMatchObject({ hosts: 'failed', whole: true });
    expect(relaunched.json.data.relaunch.note).toMatch(/stopped at the pre-flight SSH check/);
    await eventually('assigned', () => r.assignment(relaunched.json.id) !== undefined);
    expect(r.assignment(relaunched.json.id)?.limit_hosts).toEqual([]);
    r.finish(relaunched.json.id, 'completed');
  });

  it('refuses bad input with clear 4xx answers, and needs the permissions of creating an execution', async () => {
    const server = await addServer(h);
    const config = await configuration('hello_world', [server.id]);
    const id = (await execute(config)).json.id as string;
    await h.request('DELETE', `/v1/execution/${id}/`, { token: root });

    const unknown = await h.request('POST', '/v1/execution/3f1e1b4c-1111-4222-8333-444455556666/relaunch/', { token: root, body: {} });
    expect(unknown.status).toBe(404);
    for (const body of [{ hosts: 'some' }, { hosts: 1 }, { hosts: 'failed', extra: true }, [], 'failed']) {
      const res = await h.request('POST', `/v1/execution/${id}/relaunch/`, { token: root, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.code).toBe(400);
    }
    const badPreview = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: config, preview: 'yes' } });
    expect(badPreview.status).toBe(400);

    const viewer = await h.userWith('relaunch-viewer', ['view_execution'], ['hello_world']);
    expect((await h.request('POST', `/v1/execution/${id}/relaunch/`, { token: viewer.token, body: {} })).status).toBe(403);
    const noPlaybook = await h.userWith('relaunch-no-playbook', ['view_execution', 'create_execution']);
    const refused = await h.request('POST', `/v1/execution/${id}/relaunch/`, { token: noPlaybook.token, body: {} });
    expect(refused.status).toBe(403);
    expect(refused.json.description).toMatch(/hello_world/);
    expect((await execution(id)).data.relaunched_by).toBeUndefined();
    const allowed = await h.userWith('relaunch-runner', ['view_execution', 'create_execution'], ['hello_world']);
    const ok = await h.request('POST', `/v1/execution/${id}/relaunch/`, { token: allowed.token, body: {} });
    expect(ok.status, ok.body).toBe(200);
    expect(ok.json.initiator_id).toBe(allowed.id);
    await h.request('DELETE', `/v1/execution/${ok.json.id}/`, { token: root });
  });
});
