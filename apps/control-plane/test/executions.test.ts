import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@carapace/test-support/harness';
import { addServer } from '@carapace/test-support/facts';

describe('playbook configurations and executions', () => {
  let h: Harness;
  let root: string;
  let clusterId: string;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'exec-cluster' } })).json.id;
  });
  afterAll(() => h.stop());

  async function helloConfig(serverIds: string[], name = 'hello') {
    const res = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name, cluster_id: clusterId, playbook_id: 'hello_world', server_ids: serverIds },
    });
    expect(res.status, res.body).toBe(200);
    return res.json;
  }

  it('builds a configuration with the plugin: inventory keyed by IP with hostvars', async () => {
    const s = await addServer(h);
    const config = await helloConfig([s.id]);
    expect(config).toMatchObject({ model: 'playbook_configuration', version: 1, data: { playbook_id: 'hello_world', cluster_id: clusterId, server_ids: [s.id] } });
    const inventory = config.data.configuration.inventory;
    expect(inventory._meta.hostvars[s.data.ip]).toMatchObject({ ansible_host: s.data.ip, ansible_user: 'ansible' });
    expect(JSON.stringify(inventory)).toContain(s.data.ip);
    expect(config.data.configuration.global_vars.port_number).toBe(8085);
  });

  it('refuses unknown clusters, playbooks, servers, hints and missing server lists with named 400s', async () => {
    const s = await addServer(h);
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'x', cluster_id: '3f1e1b4c-1111-4222-8333-444455556666', playbook_id: 'hello_world', server_ids: [s.id] }, 'UnknownClusterError'],
      [{ name: 'x', cluster_id: clusterId, playbook_id: 'make_coffee', server_ids: [s.id] }, 'UnknownPlaybookError'],
      [{ name: 'x', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: ['3f1e1b4c-1111-4222-8333-444455556666'] }, 'UnknownServerError'],
      [{ name: 'x', cluster_id: clusterId, playbook_id: 'cluster_deploy', server_ids: [] }, 'ServerListIsRequiredForPlaybookError'],
      [{ name: 'x', cluster_id: clusterId, playbook_id: 'cluster_deploy', server_ids: [s.id], hints: [{ id: 'nope', value: 1 }] }, 'UnknownHintError'],
      [{ name: 'x', cluster_id: clusterId, playbook_id: 'cluster_deploy', server_ids: [s.id], hints: [{ id: 'dmcrypt', value: 'yes' }] }, 'InvalidHintError'],
    ];
    for (const [body, error] of cases) {
      const res = await h.request('POST', '/v1/playbook_configuration/', { token: root, body });
      expect(res.status, res.body).toBe(400);
      expect(res.json.error).toBe(error);
    }
  });

  it('accepts "playbook" as the key of the playbook id, and edits name and configuration by PUT', async () => {
    const s = await addServer(h);
    const res = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'by-key', cluster_id: clusterId, playbook: 'hello_world', server_ids: [s.id] },
    });
    expect(res.status).toBe(200);
    const edited = await h.request('PUT', `/v1/playbook_configuration/${res.json.id}/`, {
      token: root,
      body: {
        ...res.json,
        data: { ...res.json.data, name: 'edited', playbook_id: 'purge_cluster', configuration: { ...res.json.data.configuration, global_vars: { port_number: 9090 } } },
      },
    });
    expect(edited.status).toBe(200);
    expect(edited.json.data).toMatchObject({ name: 'edited', playbook_id: 'hello_world', configuration: { global_vars: { port_number: 9090 } } });
    const bad = await h.request('PUT', `/v1/playbook_configuration/${res.json.id}/`, {
      token: root,
      body: { ...edited.json, data: { ...edited.json.data, configuration: 'nope' } },
    });
    expect(bad.status).toBe(400);
  });

  it('creates executions with both body shapes, versioned on each state change, and cancels a queued one at once', async () => {
    const s = await addServer(h);
    const config = await helloConfig([s.id]);
    const a = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.id, version: 1 } } });
    expect(a.status).toBe(200);
    expect(a.json).toMatchObject({
      model: 'execution',
      version: 1,
      data: { state: 'created', playbook_configuration: { id: config.id, version: 1, playbook_name: 'hello_world' }, server_ids: [s.id] },
    });
    const b = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration_id: config.id, playbook_configuration_version: 1 } });
    expect(b.status).toBe(200);
    const canceled = await h.request('DELETE', `/v1/execution/${b.json.id}/`, { token: root });
    expect(canceled.status).toBe(200);
    expect(canceled.json).toMatchObject({ version: 2, time_deleted: 0, data: { state: 'canceled' } });
    expect((await h.request('DELETE', `/v1/execution/${b.json.id}/`, { token: root })).json.data.state).toBe('canceled');
    expect((await h.request('PUT', `/v1/execution/${a.json.id}/`, { token: root, body: a.json })).status).toBe(405);
    for (const body of [{}, { playbook_configuration: { id: config.id, version: 9 } }, { playbook_configuration_id: config.id }]) {
      expect((await h.request('POST', '/v1/execution/', { token: root, body })).status).toBe(400);
    }
    await h.container.services.engine.claim('runner-a', 10);
    await h.container.services.engine.finish(a.json.id, 'completed', null);
    const done = await h.request('DELETE', `/v1/execution/${a.json.id}/`, { token: root });
    expect(done.status).toBe(409);
    expect(done.json.error).toBe('CannotCancelFinishedExecution');
    const versions = await h.request('GET', `/v1/execution/${a.json.id}/version/`, { token: root });
    expect(versions.json.items.map((v: { data: { state: string } }) => v.data.state)).toEqual(['completed', 'started', 'created']);
  });

  it('refuses executions of a deleted configuration or of one whose cluster is deleted, and stores none', async () => {
    const s = await addServer(h);
    const count = async () => (await h.request('GET', '/v1/execution/?per_page=1', { token: root })).json.total;
    const config = await helloConfig([s.id], 'to-delete');
    const edited = await h.request('PUT', `/v1/playbook_configuration/${config.id}/`, { token: root, body: { ...config, data: { ...config.data, name: 'edited' } } });
    expect(edited.json.version).toBe(2);
    // An older version of a live configuration runs.
    const old = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.id, version: 1 } } });
    expect(old.status, old.body).toBe(200);
    expect((await h.request('DELETE', `/v1/playbook_configuration/${config.id}/`, { token: root })).status).toBe(200);
    const before = await count();
    for (const version of [1, 2]) {
      const res = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.id, version } } });
      expect(res.status, res.body).toBe(400);
      expect(res.json.error).toBe('UnknownPlaybookConfiguration');
    }
    // Without the playbook permission, a deleted configuration is still unknown first.
    const { token } = await h.userWith('runner-of-nothing-2', ['view_execution', 'create_execution']);
    const unknown = await h.request('POST', '/v1/execution/', { token, body: { playbook_configuration: { id: config.id, version: 2 } } });
    expect(unknown.status, unknown.body).toBe(400);
    expect(unknown.json.error).toBe('UnknownPlaybookConfiguration');

    const doomed = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'doomed-cluster' } })).json;
    const other = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'on-doomed', cluster_id: doomed.id, playbook_id: 'hello_world', server_ids: [s.id] },
    });
    expect(other.status, other.body).toBe(200);
    expect((await h.request('DELETE', `/v1/cluster/${doomed.id}/`, { token: root })).status).toBe(200);
    const orphan = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: other.json.id, version: 1 } } });
    expect(orphan.status, orphan.body).toBe(400);
    expect(orphan.json.error).toBe('UnknownClusterError');
    expect(await count()).toBe(before);
  });

  it('needs the playbook permission to run, also with run: true', async () => {
    const s = await addServer(h);
    const config = await helloConfig([s.id]);
    const { token } = await h.userWith('runner-of-nothing', ['view_execution', 'create_execution', 'view_playbook_configuration', 'create_playbook_configuration']);
    const res = await h.request('POST', '/v1/execution/', { token, body: { playbook_configuration: { id: config.id, version: 1 } } });
    expect(res.status).toBe(403);
    expect(res.json.description).toContain('hello_world');
    const run = await h.request('POST', '/v1/playbook_configuration/', {
      token,
      body: { name: 'r', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [s.id], run: true },
    });
    expect(run.status).toBe(403);
    const { token: allowed } = await h.userWith('runner-of-hello', ['view_execution', 'create_execution', 'view_playbook_configuration', 'create_playbook_configuration'], ['hello_world']);
    const ok = await h.request('POST', '/v1/playbook_configuration/', {
      token: allowed,
      body: { name: 'r', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [s.id], run: true },
    });
    expect(ok.status).toBe(200);
    const execution = await h.request('GET', `/v1/execution/${String(ok.headers['x-execution-id'])}/`, { token: root });
    expect(execution.json.data).toMatchObject({ state: 'created', playbook_configuration: { id: ok.json.id } });
  });

  it('run: true stores the configuration and its execution in one transaction: both or neither', async () => {
    const s = await addServer(h);
    const configurations = async () => (await h.request('GET', '/v1/playbook_configuration/?per_page=1', { token: root })).json.total;
    const executions = async () => (await h.request('GET', '/v1/execution/?per_page=1', { token: root })).json.total;
    const before = { configurations: await configurations(), executions: await executions() };
    // The database itself refuses the execution's row, after the configuration's is written.
    // The failing trigger is DDL of each engine's own: the test names the engine.
    const postgres = h.db.dialect === 'postgres';
    const refuse = postgres
      ? [
          sql.raw(`CREATE FUNCTION refuse_executions() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no executions today'; END $$`),
          sql.raw('CREATE TRIGGER refuse_executions BEFORE INSERT ON executions FOR EACH ROW EXECUTE FUNCTION refuse_executions()'),
        ]
      : [sql.raw("CREATE TRIGGER refuse_executions BEFORE INSERT ON executions BEGIN SELECT RAISE(ABORT, 'no executions today'); END")];
    for (const statement of refuse) await h.db.run(statement);
    try {
      const failed = await h.request('POST', '/v1/playbook_configuration/', {
        token: root,
        body: { name: 'atomic', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [s.id], run: true },
      });
      expect(failed.status).toBe(500);
      expect(failed.headers['x-execution-id']).toBeUndefined();
    } finally {
      await h.db.run(sql.raw('DROP TRIGGER refuse_executions' + (postgres ? ' ON executions' : '')));
      if (postgres) await h.db.run(sql.raw('DROP FUNCTION refuse_executions()'));
    }
    expect({ configurations: await configurations(), executions: await executions() }, 'what the failed request left').toEqual(before);
    const ok = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'atomic', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [s.id], run: true },
    });
    expect(ok.status, ok.body).toBe(200);
    expect({ configurations: await configurations(), executions: await executions() }).toEqual({ configurations: before.configurations + 1, executions: before.executions + 1 });
  });

  it('cancels a running execution through canceling, and tells its runner', async () => {
    const s = await addServer(h);
    const config = await helloConfig([s.id]);
    const created = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.id, version: 1 } } });
    const told: string[] = [];
    const off = h.container.services.engine.cancelRequested.on((c) => told.push(`${c.runnerId}:${c.executionId}`));
    const claimed = (await h.container.services.engine.claim('runner-c', 100)).map((a) => a.execution.id);
    expect(claimed).toContain(created.json.id);
    const canceling = await h.request('DELETE', `/v1/execution/${created.json.id}/`, { token: root });
    expect(canceling.json.data.state).toBe('canceling');
    expect(told).toContain(`runner-c:${created.json.id}`);
    await h.container.services.engine.finish(created.json.id, 'canceled', 'stopped by SIGINT');
    const final = await h.request('GET', `/v1/execution/${created.json.id}/`, { token: root });
    expect(final.json.data).toMatchObject({ state: 'canceled', reason: 'stopped by SIGINT' });
    expect(await h.container.services.engine.claim('runner-c', 100)).toEqual([]);
    off();
  });
});
