// Previews and relaunches (issue 31) end to end through the public API: a control plane and a
// runner as real processes, real Debian hosts of the lab (discovered at first boot), real
// sshd, real ansible-playbook. A preview of hello_world runs in check mode, tells per host
// what would change, and changes nothing on the host; previews are listed apart; a run on two
// hosts where one stops answering SSH midway fails, and a relaunch of its failed hosts runs on
// that host only, once it is back, and completes; a playbook that cannot run on a subset
// relaunches whole and says so; bad input is a clear 4xx.
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlPlaneAccess, discoverLab } from '../lab/discover.js';
import { ensureBridge, generateKeyPair, LAB_GATEWAY, type Lab } from '../lab/lab.js';
import { ADMIN_PASSWORD, DISCOVERY_TOKEN, executionLog, finishedExecution, startRunner, startRunnersControlPlane, tearDownLab, type Api, type ControlPlane, type Proc } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

type Json = Record<string, any>;

/** What hello_world installs on a host (libs/playbooks/ansible/hello_world). */
const INSTALLED = '/usr/local/lib/carapace /etc/systemd/system/carapace-hello-world.service';

describe('previews and relaunches on real hosts', { timeout: 600_000 }, () => {
  let dir: string;
  let lab: Lab;
  let cp: ControlPlane;
  let api: Api;
  let runner: Proc;
  let clusterId: string;
  const servers: Json[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-e2e-preview-'));
    const key = await generateKeyPair(dir);
    await ensureBridge();
    ({ cp, api } = await startRunnersControlPlane(LAB_GATEWAY));
    const runnerToken = (await api.ok('POST', '/v1/runner/', { name: 'preview-runner' })).token;
    runner = await startRunner({
      controlPlane: cp.grpcAddress,
      token: runnerToken,
      workDir: join(dir, `runner-${randomUUID().slice(0, 8)}`),
      sshKeyFile: key.privateKeyPath,
      slots: 2,
    });
    const access = await controlPlaneAccess({
      dataDir: cp.dataDir,
      url: cp.url,
      publicKeyFile: key.publicKeyPath,
      env: { CARAPACE_DISCOVERY_TOKEN: DISCOVERY_TOKEN, CARAPACE_ADMIN_PASSWORD: ADMIN_PASSWORD },
    });
    // a disk each: cluster_deploy (previewed below, never run) needs one for an OSD
    const disk = 8 * 1024 ** 3;
    const discovered = await discoverLab({ hosts: [{ disks: [disk] }, { disks: [disk] }], name: 'e2e-preview', access, timeoutMs: 120_000 });
    lab = discovered.lab;
    for (const h of discovered.hosts) servers.push(h.server as Json);
    clusterId = (await api.ok('POST', '/v1/cluster/', { name: 'e2e-preview' })).id;
  }, 40 * 60_000);

  afterAll(() => tearDownLab({ runner, cp, lab, dir }), 120_000);

  async function configuration(playbookId: string, serverIds: string[], name: string, cluster = clusterId): Promise<Json> {
    return api.ok('POST', '/v1/playbook_configuration/', { name, cluster_id: cluster, playbook_id: playbookId, server_ids: serverIds });
  }

  async function execute(config: Json, preview = false): Promise<string> {
    const body: Json = { playbook_configuration: { id: config.id, version: config.version } };
    if (preview) body.preview = true;
    return (await api.ok('POST', '/v1/execution/', body)).id as string;
  }

  async function execution(id: string): Promise<Json> {
    return api.ok('GET', `/v1/execution/${id}/`);
  }

  async function log(id: string): Promise<string> {
    return executionLog(api, id);
  }

  async function steps(id: string): Promise<Json[]> {
    return (await api.ok('GET', `/v1/execution/${id}/steps/?all=true`)).items;
  }

  /** Waits for the execution to end; the reason of one that did not complete carries the end of its log. */
  async function finished(id: string, timeoutMs = 180_000): Promise<Json> {
    return finishedExecution(api, id, timeoutMs, 'not completed');
  }

  /** What is installed of hello_world on a host, and whether its port answers. */
  async function helloState(index: number): Promise<string> {
    const host = lab.hosts[index];
    const r = await host?.exec(`ls -d ${INSTALLED} 2>/dev/null; systemctl is-active carapace-hello-world.service 2>/dev/null || true`, { check: false });
    return (r?.stdout ?? '').trim();
  }

  it('previews hello_world on a fresh host: per task what would change, and nothing changes on the host', async () => {
    const server = servers[0] as Json;
    const before = await helloState(0);
    expect(before).not.toMatch(/carapace-hello-world/);
    const etcBefore = (await lab.hosts[0]?.exec('find /etc /usr/local -xdev -type f -printf "%p %s %T@\\n" | sort | sha256sum'))?.stdout;
    const config = await configuration('hello_world', [server.id], 'preview-fresh');
    const id = await execute(config, true);
    const done = await finished(id);
    // a preview ends completed, or failed where a task would fail: both are answers
    expect(['completed', 'failed'], done.data.reason).toContain(done.data.state);
    expect(await log(id)).toMatch(/PLAY RECAP/);

    const preview = await api.ok('GET', `/v1/execution/${id}/preview/`);
    expect(preview.execution_id).toBe(id);
    expect(preview.hosts).toHaveLength(1);
    const host = preview.hosts[0];
    expect(host.server_id).toBe(server.id);
    const byName = Object.fromEntries(host.tasks.map((t: Json) => [t.name, t]));
    const seen = JSON.stringify(host.tasks.map((t: Json) => [t.name, t.status]));
    expect(byName['Install the hello world server']?.status, seen).toBe('would_change');
    expect(byName['Install the systemd unit']?.status, seen).toBe('would_change');
    // the unit's content, as a diff
    expect(byName['Install the systemd unit']?.diff).toMatch(/\+ExecStart=/);
    expect(host.counts.would_change).toBeGreaterThanOrEqual(2);
    for (const task of host.tasks) expect(['would_change', 'unchanged', 'would_fail', 'unknown']).toContain(task.status);
    // the steps carry the same verdicts
    expect((await steps(id)).every((s) => s.data.preview !== undefined)).toBe(true);

    // nothing changed on the host: nothing installed, no file of /etc or /usr/local written
    expect(await helloState(0)).toBe(before);
    expect((await lab.hosts[0]?.exec('find /etc /usr/local -xdev -type f -printf "%p %s %T@\\n" | sort | sha256sum'))?.stdout).toBe(etcBefore);
    await expect(fetch(`http://${server.data.ip}:8085/`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow();

    // listed apart from real runs
    const real = await api.ok('GET', '/v1/execution/?all=yes');
    expect(real.items.map((e: Json) => e.id)).not.toContain(id);
    const previews = await api.ok('GET', '/v1/execution/?preview=true');
    expect(previews.items.map((e: Json) => e.id)).toContain(id);
  });

  it('previews a deployed host: the files and the unit are unchanged', async () => {
    const server = servers[0] as Json;
    const config = await configuration('hello_world', [server.id], 'deploy-then-preview');
    const run = await finished(await execute(config));
    expect(run.data.state, run.data.reason).toBe('completed');
    const id = await execute(config, true);
    await finished(id);
    const preview = await api.ok('GET', `/v1/execution/${id}/preview/`);
    const byName = Object.fromEntries(preview.hosts[0].tasks.map((t: Json) => [t.name, t]));
    expect(byName['Create the install directory']?.status).toBe('unchanged');
    expect(byName['Install the hello world server']?.status).toBe('unchanged');
    expect(byName['Install the systemd unit']?.status).toBe('unchanged');
    expect(byName['Enable and start the service']?.status).toBe('unchanged');
  });

  it('relaunches the host that stopped answering midway, on that host only, once it is back', async () => {
    const [a, b] = servers as [Json, Json];
    const hostB = lab.hosts[1];
    if (!hostB) throw new Error('no second host');
    const config = await configuration('hello_world', [a.id, b.id], 'two-hosts');
    const id = await execute(config);
    // As soon as B has a step, its sshd goes (listener and sessions): its next task is unreachable.
    await eventually('a first step on B', async () => ((await steps(id)).some((s) => s.data.server_id === b.id) ? true : undefined), 120_000);
    await hostB.exec('systemctl stop ssh.socket ssh.service 2>/dev/null; pkill -KILL -x sshd; true', { check: false });
    let failed: Json;
    try {
      failed = await finished(id);
    } finally {
      await hostB.exec('systemctl start ssh.service');
    }
    expect(failed.data.state, failed.data.reason).toBe('failed');
    const all = await steps(id);
    expect(all.some((s) => s.data.server_id === b.id && s.data.result === 'unreachable')).toBe(true);
    expect(all.filter((s) => s.data.server_id === a.id).map((s) => s.data.result)).not.toContain('error');

    // bad input first: a clear 4xx each
    expect((await api.call('POST', `/v1/execution/${id}/relaunch/`, { hosts: 'some' })).status).toBe(400);
    expect((await api.call('POST', `/v1/execution/${randomUUID()}/relaunch/`, {})).status).toBe(404);

    const relaunch = await api.ok('POST', `/v1/execution/${id}/relaunch/`, { hosts: 'failed' });
    expect(relaunch.data).toMatchObject({ relaunch_of: id, limit_server_ids: [b.id], relaunch: { hosts: 'failed', whole: false } });
    // while it runs it cannot be relaunched
    const running = await api.call('POST', `/v1/execution/${relaunch.id}/relaunch/`, {});
    if ((await execution(relaunch.id)).data.state !== 'completed') expect(running.status).toBe(409);
    const done = await finished(relaunch.id);
    expect(done.data.state, done.data.reason).toBe('completed');
    const relaunchSteps = await steps(relaunch.id);
    expect(relaunchSteps.length).toBeGreaterThan(0);
    expect(new Set(relaunchSteps.map((s) => s.data.server_id))).toEqual(new Set([b.id]));
    expect(await log(relaunch.id)).not.toContain(a.data.ip);
    expect((await execution(id)).data.relaunched_by).toEqual([relaunch.id]);
    const answer = await fetch(`http://${b.data.ip}:8085/`);
    expect(await answer.json()).toEqual({ result: 'ok' });
  });

  it('a playbook that cannot run on a subset relaunches whole, and says so', async () => {
    const [a] = servers as [Json];
    const fresh = (await api.ok('POST', '/v1/cluster/', { name: 'e2e-whole' })).id as string;
    const config = await configuration('cluster_deploy', [a.id], 'deploy-preview', fresh);
    // A preview (which changes nothing) of cluster_deploy, canceled: it has failed hosts to relaunch.
    const id = await execute(config, true);
    await api.ok('DELETE', `/v1/execution/${id}/`);
    expect((await finished(id, 120_000)).data.state).toBe('canceled');
    const relaunch = await api.ok('POST', `/v1/execution/${id}/relaunch/`, { hosts: 'failed' });
    expect(relaunch.data).toMatchObject({ preview: true, relaunch_of: id, relaunch: { hosts: 'failed', whole: true } });
    expect(relaunch.data.relaunch.note).toMatch(/cluster_deploy does not run on a subset/);
    expect(relaunch.data.limit_server_ids).toBeUndefined();
    await api.ok('DELETE', `/v1/execution/${relaunch.id}/`);
    await finished(relaunch.id, 120_000);
    // a completed run has no failed hosts
    const completed = (await api.ok('GET', `/v1/execution/?filter=${encodeURIComponent(JSON.stringify({ state: 'completed' }))}`)).items[0] as Json;
    const refused = await api.call('POST', `/v1/execution/${completed.id}/relaunch/`, { hosts: 'failed' });
    expect(refused.status).toBe(409);
  });
});
