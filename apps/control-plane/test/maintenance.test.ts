// Servers in maintenance through the API: a completed maintenance_enter puts its servers in
// the state maintenance_no_reconfig (the run's effect, with the run's end), every other
// playbook is refused on them (configurations at creation, executions also through a
// configuration made before), and a completed maintenance_exit makes them operational again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addServer } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';

describe('host maintenance in the model', () => {
  let h: Harness;
  let root: string;
  let clusterId: string;
  let a: { id: string };
  let b: { id: string };

  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'maintained' } })).json.id;
    a = await addServer(h);
    b = await addServer(h);
    await runToCompletion((await configure('cluster_deploy', [a.id, b.id])).id);
  });
  afterAll(() => h.stop());

  async function configure(playbookId: string, serverIds: string[]): Promise<{ id: string; version: number }> {
    const res = await h.request('POST', '/v1/playbook_configuration/', { token: root, body: { name: playbookId, cluster_id: clusterId, playbook_id: playbookId, server_ids: serverIds } });
    expect(res.status, res.body).toBe(200);
    return res.json;
  }

  const execute = (config: { id: string; version: number }) => h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.id, version: config.version } } });

  async function runToCompletion(configId: string): Promise<void> {
    const created = await execute({ id: configId, version: 1 });
    expect(created.status, created.body).toBe(200);
    await h.container.services.engine.claim('runner-a', 10);
    await h.container.services.engine.finish(created.json.id, 'completed', null);
    expect((await h.request('GET', `/v1/execution/${created.json.id}/`, { token: root })).json.data.state).toBe('completed');
  }

  const stateOf = async (id: string) => (await h.request('GET', `/v1/server/${id}/`, { token: root })).json.data.state as string;
  const executionCount = async () => (await h.request('GET', '/v1/execution/?per_page=1', { token: root })).json.total as number;

  it('maintenance_enter: the server in maintenance once the run completed; other playbooks refused on it, even through an earlier configuration', async () => {
    const earlier = await configure('hello_world', [b.id]);
    const enter = await configure('maintenance_enter', [b.id]);
    expect(await stateOf(b.id)).toBe('operational');
    await runToCompletion(enter.id);
    expect(await stateOf(b.id)).toBe('maintenance_no_reconfig');
    expect(await stateOf(a.id)).toBe('operational');

    const hello = await h.request('POST', '/v1/playbook_configuration/', { token: root, body: { name: 'x', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [b.id] } });
    expect(hello.status).toBe(400);
    expect(hello.json.error).toBe('ServerNotReadyError');
    const before = await executionCount();
    const refused = await execute(earlier);
    expect(refused.status, refused.body).toBe(409);
    expect(refused.json.error).toBe('ServerInMaintenanceError');
    expect(refused.json.message).toContain(b.id);
    const again = await execute(enter);
    expect(again.status).toBe(409);
    expect(await executionCount()).toBe(before);
    // the other server is not held up
    expect((await execute(await configure('hello_world', [a.id]))).status).toBe(200);
    // exit is the one playbook for it; enter and exit for a server not in maintenance are refused
    const exitOther = await h.request('POST', '/v1/playbook_configuration/', { token: root, body: { name: 'x', cluster_id: clusterId, playbook_id: 'maintenance_exit', server_ids: [a.id] } });
    expect(exitOther.status).toBe(400);
    expect(exitOther.json.error).toBe('ServerNotInMaintenanceError');
    const enterBoth = await h.request('POST', '/v1/playbook_configuration/', { token: root, body: { name: 'x', cluster_id: clusterId, playbook_id: 'maintenance_enter', server_ids: [a.id, b.id] } });
    expect(enterBoth.status).toBe(400);
  });

  it('maintenance_exit: operational again once the run completed; the earlier configuration runs again', async () => {
    await runToCompletion((await configure('maintenance_exit', [b.id])).id);
    expect(await stateOf(b.id)).toBe('operational');
    const hello = await configure('hello_world', [b.id]);
    expect((await execute(hello)).status).toBe(200);
  });
});
