// End to end through the public API: a control plane and a runner as real processes, real
// Debian hosts of the lab that join the documented way (`npm run lab -- up N --discover`: the
// generated user-data, registration at first boot), real sshd, real ansible-playbook running
// hello_world.
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlPlaneAccess, discoverLab } from '../lab/discover.js';
import { ensureBridge, generateKeyPair, LAB_GATEWAY, type Lab } from '../lab/lab.js';
import { ADMIN_PASSWORD, Api, DISCOVERY_TOKEN, executionLog, finishedExecution, startRunner, startRunnersControlPlane, tearDownLab, type ControlPlane, type Proc } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

type Json = Record<string, any>;

describe('runs on real hosts through a runner', { timeout: 300_000 }, () => {
  let dir: string;
  let lab: Lab;
  let cp: ControlPlane;
  let api: Api;
  let runner: Proc;
  let runnerToken: string;
  let keyFile: string;
  let clusterId: string;
  const servers: Json[] = [];

  async function newRunner(): Promise<Proc> {
    return startRunner({
      controlPlane: cp.grpcAddress,
      token: runnerToken,
      workDir: join(dir, `runner-${randomUUID().slice(0, 8)}`),
      sshKeyFile: keyFile,
      slots: 2,
      env: { CARAPACE_RUNNER_CANCEL_GRACE_MS: '3000' },
    });
  }

  async function startCp(): Promise<void> {
    ({ cp, api } = await startRunnersControlPlane(LAB_GATEWAY));
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-e2e-runner-'));
    const key = await generateKeyPair(dir);
    keyFile = key.privateKeyPath;
    await ensureBridge();
    await startCp();
    runnerToken = (await api.ok('POST', '/v1/runner/', { name: 'lab-runner', labels: { site: 'lab' } })).token;
    runner = await newRunner();
    // The hosts authorize this runner's key through their user-data, as `cloud-config` would.
    const access = await controlPlaneAccess({
      dataDir: cp.dataDir,
      url: cp.url,
      publicKeyFile: key.publicKeyPath,
      env: { CARAPACE_DISCOVERY_TOKEN: DISCOVERY_TOKEN, CARAPACE_ADMIN_PASSWORD: ADMIN_PASSWORD },
    });
    const discovered = await discoverLab({ hosts: 2, name: 'e2e-runner', access, timeoutMs: 120_000 });
    lab = discovered.lab;
    for (const h of discovered.hosts) servers.push(h.server as Json);
    clusterId = (await api.ok('POST', '/v1/cluster/', { name: 'e2e' })).id;
  }, 40 * 60_000);

  afterAll(() => tearDownLab({ runner, cp, lab, dir }), 120_000);

  async function run(serverIds: string[], name = 'hello'): Promise<string> {
    const config = await api.ok('POST', '/v1/playbook_configuration/', { name, cluster_id: clusterId, playbook_id: 'hello_world', server_ids: serverIds });
    const execution = await api.ok('POST', '/v1/execution/', { playbook_configuration: { id: config.id, version: config.version } });
    return execution.id as string;
  }

  async function execution(id: string): Promise<Json> {
    return api.ok('GET', `/v1/execution/${id}/`);
  }

  /** Waits for the execution to end; a failed one's reason carries the end of its log. */
  async function finished(id: string, timeoutMs = 180_000): Promise<Json> {
    return finishedExecution(api, id, timeoutMs, 'failed');
  }

  async function log(id: string): Promise<string> {
    return executionLog(api, id);
  }

  async function steps(id: string): Promise<Json[]> {
    return (await api.ok('GET', `/v1/execution/${id}/steps/?all=true`)).items;
  }

  it('gathered the facts of each self-registered host over SSH; each host is a server of its own', () => {
    expect(new Set(servers.map((s) => s.id)).size).toBe(lab.hosts.length);
    for (const [i, s] of servers.entries()) {
      expect(s.data.username).toBe('ansible');
      expect(s.data.facts.hostname).toBe(lab.hosts[i]?.name);
      expect(s.data.facts.default_ipv4).toBe(lab.hosts[i]?.ip);
      expect(s.data.facts.os.id).toBe('debian');
      expect(s.data.facts.memory.total_bytes).toBeGreaterThan(0);
      expect(s.data.ssh_host_key).toMatch(/^(ssh-ed25519|ecdsa-sha2-nistp256|ssh-rsa) /);
    }
  });

  it('runs hello_world: completed, steps, PLAY RECAP while and after, and the service answers', async () => {
    const server = servers[0] as Json;
    const id = await run([server.id]);
    // While it runs, the log grows through the API.
    const live = await eventually('a live log', async () => {
      const e = await execution(id);
      const text = await log(id);
      return e.data.state === 'started' && text.includes('TASK [') ? text : undefined;
    }, 120_000);
    expect(live).toContain('pre-flight');
    const followed = await api.call('GET', `/v1/execution/${id}/log/?follow=yes`, undefined, true, { accept: 'text/plain' });
    expect(followed.text).toContain('PLAY RECAP');
    const done = await finished(id);
    expect(done.data.state, done.data.reason).toBe('completed');
    const text = await log(id);
    expect(text).toContain('PLAY RECAP');
    expect(text).toBe(followed.text);
    const all = await steps(id);
    expect(all.length).toBeGreaterThan(3);
    expect(all.every((s) => s.data.server_id === server.id)).toBe(true);
    expect(all.map((s) => s.data.result)).not.toContain('error');
    expect(all.some((s) => s.data.role === 'hello_world' && s.data.result === 'ok')).toBe(true);
    const answer = await fetch(`http://${server.data.ip}:8085/`);
    expect(await answer.json()).toEqual({ result: 'ok' });
    // The servers are free again and the runner holds nothing.
    const runners = await api.ok('GET', '/v1/runner/');
    expect(runners.items.find((r: Json) => r.name === 'lab-runner')).toMatchObject({ state: 'connected', executions: [] });
  });

  it('runs two executions on one host one after the other, and on two hosts at the same time', async () => {
    const [a, b] = servers as [Json, Json];
    const first = await run([a.id], 'same-1');
    const second = await run([a.id], 'same-2');
    const other = await run([b.id], 'other');
    const [e1, e2, e3] = [await finished(first), await finished(second), await finished(other)];
    for (const e of [e1, e2, e3]) expect(e.data.state, e.data.reason).toBe('completed');
    // Same host: the second started after the first ended.
    expect(e2.data.time_started).toBeGreaterThanOrEqual(e1.data.time_finished);
    // Different hosts: the third ran while the first did.
    expect(e3.data.time_started).toBeLessThanOrEqual(e1.data.time_finished);
    const v1 = (await api.ok('GET', `/v1/execution/${first}/version/?all=true`)).items.map((v: Json) => v.data.state);
    expect(v1).toEqual(expect.arrayContaining(['created', 'started', 'completed']));
  });

  it('cancels a run midway: SIGINT reaches Ansible, the run ends canceled, the host is free', async () => {
    const host = lab.hosts[1];
    const server = servers[1] as Json;
    const id = await run([server.id], 'to-cancel');
    await eventually('a first step', async () => ((await steps(id)).length > 0 ? true : undefined), 120_000);
    // The host stops answering, so Ansible hangs on its next task until canceled.
    await host?.exec('ip link set eth0 down');
    try {
      const del = await api.ok('DELETE', `/v1/execution/${id}/`);
      expect(['canceling', 'canceled']).toContain(del.data.state);
      const done = await finished(id, 60_000);
      expect(done.data.state).toBe('canceled');
    } finally {
      await host?.exec('ip link set eth0 up && ip route replace default via 10.77.0.1');
    }
    const next = await run([server.id], 'after-cancel');
    expect((await finished(next)).data.state).toBe('completed');
  });

  it('fails the run of a killed runner, frees its servers, and runs the next one on a new runner', async () => {
    const server = servers[0] as Json;
    const id = await run([server.id], 'runner-dies');
    await eventually('a first step', async () => ((await steps(id)).length > 0 ? true : undefined), 120_000);
    await runner.kill();
    const done = await finished(id, 60_000);
    expect(done.data.state).toBe('failed');
    expect(done.data.reason).toMatch(/lab-runner/);
    runner = await newRunner();
    const next = await run([server.id], 'after-runner-death');
    expect((await finished(next)).data.state).toBe('completed');
  });

  it('survives a control-plane restart midway: the run completes, the log is whole, nothing is doubled', async () => {
    const server = servers[1] as Json;
    // Applied once already, the reference and the restarted run are the same idempotent run.
    expect((await finished(await run([server.id], 'warm'))).data.state).toBe('completed');
    const reference = await run([server.id], 'reference');
    expect((await finished(reference)).data.state).toBe('completed');
    const referenceSteps = (await steps(reference)).length;

    const id = await run([server.id], 'cp-restart');
    await eventually('a first step', async () => ((await steps(id)).length > 0 ? true : undefined), 120_000);
    cp = await cp.restart('kill');
    api = new Api(cp.url);
    await api.login();
    const done = await finished(id);
    expect(done.data.state, done.data.reason).toBe('completed');
    const text = await log(id);
    expect(text.match(/PLAY RECAP/g)).toHaveLength(1);
    expect(text.match(/pre-flight SSH check/g)).toHaveLength(1);
    const all = await steps(id);
    expect(all).toHaveLength(referenceSteps);
    expect(new Set(all.map((s) => `${s.data.role}|${s.data.name}`)).size).toBe(new Set((await steps(reference)).map((s) => `${s.data.role}|${s.data.name}`)).size);
  });
});
