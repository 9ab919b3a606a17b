import { request as httpRequest } from 'node:http';
import { Client, SNAKE_CASE_ALIASES, isFinalExecutionState, type ExecutionProgress } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { recordingFetch } from '@carapace/test-support/recording-fetch';
import { ScriptedRunner } from '@carapace/test-support/runner';
import { TinyServer } from '@carapace/test-support/tiny-servers';

/** The contract's method names (service-contract.md, "Client library contract"). */
const CONTRACT_NAMES = `create_cluster, create_execution, create_playbook_configuration, create_role, create_server, create_user,
cancel_execution, delete_cluster, delete_playbook_configuration, delete_role, delete_server, delete_user, get_cinder_integration,
get_cluster, get_cluster_version, get_cluster_versions, get_clusters, get_execution, get_execution_log, get_execution_steps,
get_execution_version, get_execution_versions, get_executions, get_info, get_permissions, get_playbook_configuration,
get_playbook_configuration_version, get_playbook_configuration_versions, get_playbook_configurations, get_playbooks, get_role,
get_role_self, get_role_version, get_role_versions, get_roles, get_server, get_server_version, get_server_versions, get_servers,
get_user, get_user_self, get_user_version, get_user_versions, get_users, login, logout, peek_password_reset, put_server,
request_password_reset, reset_password, update_cluster, update_playbook_configuration, update_role, update_user`
  .split(',')
  .map((n) => n.trim());

/** The snake_case names of the Carapace extensions (not in the contract). */
const EXTENSION_NAMES = [
  'create_runner',
  'delete_runner',
  'get_runners',
  'create_preview',
  'get_previews',
  'get_execution_preview',
  'relaunch_execution',
  'get_cluster_status',
  'get_cluster_status_history',
  'get_cluster_statuses',
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('client: helpers and names', () => {
  let cp: TestControlPlane;
  let client: Client;
  let runner: ScriptedRunner;
  let configId = '';
  const recorder = recordingFetch();

  beforeAll(async () => {
    cp = await TestControlPlane.start();
    client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD, fetch: recorder.fetch });
    runner = new ScriptedRunner(cp);
    const serverId = await cp.addServer(7);
    const cluster = await client.createCluster('helpers');
    configId = (await client.createPlaybookConfiguration('hello', cluster.id, 'hello_world', [serverId])).id;
  });
  afterAll(() => cp.stop());

  it('has every method of the contract (and of the extensions) under its snake_case name, the same function as the camelCase one', async () => {
    expect(CONTRACT_NAMES).toHaveLength(54);
    const record = client as unknown as Record<string, unknown>;
    for (const name of [...CONTRACT_NAMES, ...EXTENSION_NAMES]) {
      const camel = name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
      expect(typeof record[name], name).toBe('function');
      expect(record[name], name).toBe(record[camel]);
    }
    expect(Object.keys(SNAKE_CASE_ALIASES).sort()).toEqual([...CONTRACT_NAMES.filter((n) => n.includes('_')), ...EXTENSION_NAMES].sort());
    const made = await client.create_cluster('snake-case');
    expect((await client.get_cluster(made.id)).data.name).toBe('snake-case');
    expect((await client.get_clusters({ filter: { name: 'snake-case' } })).total).toBe(1);
    expect((await client.get_info()).version).toMatch(/^\d/);
  });

  it('iterates over a whole list page by page', async () => {
    for (let i = 0; i < 7; i++) await client.createCluster(`iter-${i}`);
    const before = recorder.sent.length;
    const names: string[] = [];
    for await (const cluster of client.iterClusters({ perPage: 3, filter: { name: { regexp: '^iter-' } }, sortBy: { name: -1 } })) names.push(cluster.data.name);
    expect(names).toEqual(['iter-6', 'iter-5', 'iter-4', 'iter-3', 'iter-2', 'iter-1', 'iter-0']);
    const pages = recorder.sent.slice(before).map((r) => r.url.searchParams.get('page'));
    expect(pages).toEqual(['1', '2', '3']);

    const all: string[] = [];
    for await (const cluster of client.iterClusters()) all.push(cluster.data.name);
    expect(all).toHaveLength(9);
    let users = 0;
    for await (const user of client.iterUsers()) users += user.data.login === 'root' ? 1 : 0;
    expect(users).toBe(1);
    const roles = [];
    for await (const role of client.iterRoles()) roles.push(role.data.name);
    expect(roles).toEqual(['wheel']);
    const servers = [];
    for await (const server of client.iterServers()) servers.push(server.data.name);
    expect(servers).toEqual(['node7']);
    const configs = [];
    for await (const config of client.iterPlaybookConfigurations()) configs.push(config.id);
    expect(configs).toEqual([configId]);
  });

  it('follows a log as it grows, to the end of the execution', async () => {
    const execution = await client.createExecution(configId, 1);
    await runner.claim(execution.id);
    const received: string[] = [];
    const following = (async () => {
      for await (const text of client.followExecutionLog(execution.id)) received.push(text);
    })();
    const lines = ['PLAY [hello_world]\n', 'TASK [Gathering Facts]\n', 'ok: [10.0.0.9]\n', 'PLAY RECAP\n'];
    for (const line of lines) {
      await sleep(80);
      await runner.log(execution.id, line);
    }
    await sleep(80);
    expect(received.join('')).toBe(lines.join(''));
    await runner.finish(execution.id, 'completed');
    await following;
    expect(received.join('')).toBe(lines.join(''));

    const again: string[] = [];
    for await (const text of client.followExecutionLog(execution.id)) again.push(text);
    expect(again.join('')).toBe(lines.join(''));
    for await (const e of client.iterExecutions()) expect(isFinalExecutionState(e.data.state)).toBe(true);
    const steps = [];
    for await (const step of client.iterExecutionSteps(execution.id)) steps.push(step);
    expect(steps).toEqual([]);
  });

  it('opens a followed log again when the stream breaks, without repeating text', async () => {
    const execution = await client.createExecution(configId, 1);
    await runner.claim(execution.id);
    await runner.log(execution.id, 'before the break\n');
    let cut = 0;
    const target = new URL(cp.url);
    const proxy = await TinyServer.start((req, res) => {
      const forward = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (req.url?.includes('follow=yes') && cut++ === 0) {
          answer.once('data', (chunk: Buffer) => {
            res.write(chunk);
            setTimeout(() => {
              res.socket?.destroy();
              answer.destroy();
            }, 50);
          });
          return;
        }
        answer.pipe(res);
      });
      req.pipe(forward);
    });
    try {
      const viaProxy = new Client({ url: proxy.url, login: 'root', password: ROOT_PASSWORD });
      const received: string[] = [];
      const following = (async () => {
        for await (const text of viaProxy.followExecutionLog(execution.id)) received.push(text);
      })();
      await sleep(300);
      await runner.log(execution.id, 'after the break\n');
      await runner.finish(execution.id, 'failed', 'boom');
      await following;
      expect(cut).toBeGreaterThanOrEqual(2);
      expect(received.join('')).toBe('before the break\nafter the break\n');
    } finally {
      await proxy.stop();
    }
  });

  it('stops following when the loop breaks', async () => {
    const execution = await client.createExecution(configId, 1);
    await runner.claim(execution.id);
    await runner.log(execution.id, 'one\n');
    for await (const text of client.followExecutionLog(execution.id)) {
      expect(text).toBe('one\n');
      break;
    }
    await runner.finish(execution.id, 'completed');
    expect((await client.getExecution(execution.id)).data.state).toBe('completed');
  });

  it('watches an execution: a progress at each change with the new steps, the last one final', async () => {
    const execution = await client.createExecution(configId, 1);
    const progress: ExecutionProgress[] = [];
    const watching = (async () => {
      for await (const p of client.watchExecution(execution.id, { intervalMs: 50 })) progress.push(p);
    })();
    await sleep(150);
    await runner.claim(execution.id);
    await sleep(150);
    await runner.step(execution.id, { role: 'hello_world', name: 'first', result: 'ok', serverId: null });
    await sleep(150);
    await runner.step(execution.id, { role: 'hello_world', name: 'second', result: 'error', serverId: null });
    await runner.finish(execution.id, 'failed', 'a step failed');
    await watching;
    expect(progress[0]?.execution.data.state).toBe('created');
    expect(progress.map((p) => p.execution.data.state)).toContain('started');
    const last = progress.at(-1);
    expect(last).toMatchObject({ final: true, execution: { data: { state: 'failed', reason: 'a step failed' } } });
    expect(progress.flatMap((p) => p.newSteps.map((s) => s.data.name))).toEqual(['first', 'second']);
    expect(last?.steps.map((s) => s.data.result)).toEqual(['ok', 'error']);
    expect(progress.filter((p) => p.final)).toHaveLength(1);
  });

  it('waits for an execution to end, and gives up when aborted', async () => {
    const execution = await client.createExecution(configId, 1);
    const controller = new AbortController();
    const abandoned = client.waitForExecution(execution.id, { intervalMs: 50, signal: controller.signal }).catch((e: unknown) => e);
    await sleep(100);
    controller.abort(new Error('enough'));
    expect(await abandoned).toMatchObject({ name: 'ServiceError' });

    const waiting = client.waitForExecution(execution.id, { intervalMs: 50 });
    await runner.claim(execution.id);
    await runner.finish(execution.id, 'completed');
    expect((await waiting).data.state).toBe('completed');
  });
});
