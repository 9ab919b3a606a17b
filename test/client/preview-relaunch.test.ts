// The client library's calls of issue 31 against a real control plane (the runner's part
// scripted on its engine): createPreview, getPreviews, getExecutionPreview, relaunchExecution.
import { Client, ServiceApiError } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { ScriptedRunner } from '@carapace/test-support/runner';

describe('client: previews and relaunches', () => {
  let cp: TestControlPlane;
  let client: Client;
  let runner: ScriptedRunner;
  let configId = '';
  let serverId = '';

  beforeAll(async () => {
    cp = await TestControlPlane.start();
    client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD });
    runner = new ScriptedRunner(cp, 'client-runner');
    serverId = await cp.addServer(9);
    const cluster = await client.createCluster('client-previews');
    configId = (await client.createPlaybookConfiguration('hello', cluster.id, 'hello_world', [serverId])).id;
  });
  afterAll(() => cp.stop());

  it('creates a preview, lists it apart and reads its result', async () => {
    const preview = await client.createPreview(configId, 1);
    expect(preview.data.preview).toBe(true);
    expect((await client.getPreviews()).items.map((e) => e.id)).toContain(preview.id);
    expect((await client.getExecutions()).items.map((e) => e.id)).not.toContain(preview.id);
    await runner.claim(preview.id);
    await runner.finish(preview.id, 'completed');
    const result = await client.getExecutionPreview(preview.id);
    expect(result).toMatchObject({ execution_id: preview.id, state: 'completed', hosts: [{ server_id: serverId, tasks: [] }] });
  });

  it('relaunches a failed execution, and refuses failed hosts of a completed one', async () => {
    const execution = await client.createExecution(configId, 1);
    await runner.claim(execution.id);
    await runner.step(execution.id, { role: 'hello', name: 'say hello', result: 'error', serverId });
    await runner.finish(execution.id, 'failed', '1 host failed');
    const relaunch = await client.relaunchExecution(execution.id, 'failed');
    expect(relaunch.data).toMatchObject({ relaunch_of: execution.id, limit_server_ids: [serverId], relaunch: { hosts: 'failed', whole: false } });
    expect((await client.getExecution(execution.id)).data.relaunched_by).toEqual([relaunch.id]);
    await runner.claim(relaunch.id);
    await runner.finish(relaunch.id, 'completed');
    const refused = await client.relaunchExecution(relaunch.id, 'failed').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ServiceApiError);
    expect((refused as ServiceApiError).code).toBe(409);
    expect((await client.relaunchExecution(relaunch.id)).data.relaunch).toMatchObject({ hosts: 'all', whole: true });
  });
});
