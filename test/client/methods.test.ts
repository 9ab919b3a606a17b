import { Client, ServiceApiError } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { recordingFetch } from '@carapace/test-support/recording-fetch';
import { ScriptedRunner } from '@carapace/test-support/runner';

/** Every method of the contract against a real control plane, in the order a user meets them. */
describe('client: every method against a running control plane', () => {
  let cp: TestControlPlane;
  let client: Client;
  let runner: ScriptedRunner;
  const recorder = recordingFetch();
  const ids = { role: '', user: '', cluster: '', server: '', factsServer: '', config: '', execution: '' };
  let alicePassword = '';

  beforeAll(async () => {
    cp = await TestControlPlane.start();
    client = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD, fetch: recorder.fetch });
    runner = new ScriptedRunner(cp);
  });
  afterAll(async () => {
    await client.close();
    await cp.stop();
  });

  it('getInfo: the version and time, without logging in', async () => {
    const info = await client.getInfo();
    expect(info.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(Math.abs(info.time.unix - Date.now() / 1000)).toBeLessThan(5);
    expect(info.time.utc).toMatch(/Z$/);
    expect(recorder.logins()).toBe(0);
    expect(client.token).toBeNull();
    expect(recorder.sent[0]?.url.pathname).toBe('/v1/info/');
    expect(recorder.sent[0]?.headers.has('authorization')).toBe(false);
  });

  it('getUserSelf, getRoleSelf, getPermissions, getPlaybooks: log in once, lazily', async () => {
    const self = await client.getUserSelf();
    expect(self).toMatchObject({ model: 'user', data: { login: 'root' } });
    expect(recorder.logins()).toBe(1);
    expect(client.token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(recorder.sent.at(-1)?.headers.get('authorization')).toBe(client.token);

    const role = await client.getRoleSelf();
    expect(role).toMatchObject({ model: 'role', data: { name: 'wheel' } });
    const permissions = await client.getPermissions();
    const api = permissions.items.find((g) => g.name === 'api')?.permissions ?? [];
    expect(api).toEqual(expect.arrayContaining(['create_cluster', 'view_execution_steps', 'view_cinder']));
    expect(permissions.items.find((g) => g.name === 'playbook')?.permissions).toEqual(expect.arrayContaining(['hello_world', 'cluster_deploy']));
    const playbooks = await client.getPlaybooks();
    expect(playbooks.items.map((p) => p.id).sort()).toEqual(['add_mon', 'add_osd', 'add_pool', 'cinder_integration', 'cluster_deploy', 'hello_world', 'maintenance_enter', 'maintenance_exit', 'purge_cluster', 'remove_mon', 'remove_osd', 'remove_pool', 'replace_mon', 'replace_osd', 'restart_services', 'update_ceph_configuration', 'upgrade_ceph']);
    expect(playbooks.items.find((p) => p.id === 'cluster_deploy')?.hints.map((h) => h.id)).toContain('dmcrypt');
    expect(recorder.logins()).toBe(1);
  });

  it('createRole, getRole, getRoles, updateRole, getRoleVersions, getRoleVersion', async () => {
    const role = await client.createRole('operators', { api: ['view_cluster', 'view_server', 'create_cluster'], playbook: ['hello_world'] });
    ids.role = role.id;
    expect(role).toMatchObject({ model: 'role', version: 1, time_deleted: 0, data: { name: 'operators' } });
    expect(role.data.permissions).toEqual(
      expect.arrayContaining([
        { name: 'api', permissions: ['create_cluster', 'view_cluster', 'view_server'] },
        { name: 'playbook', permissions: ['hello_world'] },
      ]),
    );
    const listed = await client.createRole('listed', [{ name: 'api', permissions: ['view_user'] }]);
    expect(listed.data.permissions).toContainEqual({ name: 'api', permissions: ['view_user'] });

    expect((await client.getRole(role.id)).data.name).toBe('operators');
    const page = await client.getRoles({ filter: { name: 'operators' } });
    expect(page).toMatchObject({ total: 1, page: 1, items: [{ id: role.id }] });
    const all = await client.getRoles({ sortBy: { name: -1 }, perPage: 2, page: 1 });
    expect(all.items.map((r) => r.data.name)).toEqual(['wheel', 'operators']);
    expect(all).toMatchObject({ per_page: 2, total: 3 });

    const renamed = await client.updateRole({ ...role, data: { ...role.data, name: 'operators-2' } });
    expect(renamed).toMatchObject({ id: role.id, version: 2, data: { name: 'operators-2' } });
    const versions = await client.getRoleVersions(role.id);
    expect(versions.items.map((v) => v.version)).toEqual([2, 1]);
    expect((await client.getRoleVersion(role.id, 1)).data.name).toBe('operators');
  });

  it('createUser (the password arrives by e-mail), getUser, getUsers, updateUser, getUserVersions, getUserVersion', async () => {
    const user = await client.createUser('alice', 'alice@example.com', 'Alice Liddell', ids.role);
    ids.user = user.id;
    expect(user).toMatchObject({ model: 'user', version: 1, data: { login: 'alice', email: 'alice@example.com', full_name: 'Alice Liddell', role_id: ids.role } });
    alicePassword = await cp.mail.passwordOf('alice@example.com');

    const alice = new Client({ url: cp.url, login: 'alice', password: alicePassword });
    expect((await alice.getUserSelf()).id).toBe(user.id);
    expect((await alice.getRoleSelf()).id).toBe(ids.role);

    const bare = await client.createUser('bob', 'bob@example.com');
    expect(bare.data).toMatchObject({ full_name: '', role_id: null });

    expect((await client.getUser(user.id)).data.login).toBe('alice');
    const users = await client.getUsers();
    expect(users.items.map((u) => u.data.login)).toEqual(expect.arrayContaining(['root', 'alice', 'bob']));
    expect(users.total).toBe(3);

    const updated = await client.updateUser({ ...user, data: { ...user.data, full_name: 'Alice L.' } });
    expect(updated).toMatchObject({ version: 2, data: { full_name: 'Alice L.' } });
    expect((await client.getUserVersions(user.id)).items.map((v) => v.data.full_name)).toEqual(['Alice L.', 'Alice Liddell']);
    expect((await client.getUserVersion(user.id, 1)).data.full_name).toBe('Alice Liddell');
  });

  it('requestPasswordReset, peekPasswordReset, resetPassword: the e-mailed token works once', async () => {
    const anonymous = new Client({ url: cp.url, login: '', password: '' });
    expect(await anonymous.requestPasswordReset('alice')).toEqual({ message: 'Password reset was requested.' });
    const token = await cp.mail.resetTokenOf('alice@example.com');
    expect(await anonymous.peekPasswordReset(token)).toEqual({ message: 'Password reset was requested.' });
    expect(await anonymous.resetPassword(token, 'alice-new-password-42')).toEqual({ message: 'Password has been reset.' });
    const again = await anonymous.peekPasswordReset(token).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ServiceApiError);
    expect((again as ServiceApiError).code).toBe(404);
    expect(anonymous.token).toBeNull();

    const old = await new Client({ url: cp.url, login: 'alice', password: alicePassword }).getUserSelf().catch((e: unknown) => e);
    expect((old as ServiceApiError).code).toBe(401);
    const renewed = new Client({ url: cp.url, login: 'alice', password: 'alice-new-password-42' });
    expect((await renewed.getUserSelf()).data.login).toBe('alice');
  });

  it('createCluster, getCluster, getClusters, updateCluster, getClusterVersions, getClusterVersion', async () => {
    const cluster = await client.createCluster('ceph-one');
    ids.cluster = cluster.id;
    expect(cluster).toMatchObject({ model: 'cluster', version: 1, data: { name: 'ceph-one', configuration: {} } });
    expect((await client.getCluster(cluster.id)).id).toBe(cluster.id);
    expect((await client.getClusters()).items.map((c) => c.id)).toContain(cluster.id);
    const renamed = await client.updateCluster({ ...cluster, data: { ...cluster.data, name: 'ceph-main' } });
    expect(renamed).toMatchObject({ version: 2, data: { name: 'ceph-main' } });
    const stale = await client.updateCluster({ ...cluster, data: { ...cluster.data, name: 'stale' } }).catch((e: unknown) => e);
    expect(stale).toMatchObject({ code: 409, error: 'CannotUpdateManagedFieldsError' });
    expect((await client.getClusterVersions(cluster.id)).items.map((v) => v.data.name)).toEqual(['ceph-main', 'ceph-one']);
    expect((await client.getClusterVersion(cluster.id, 1)).data.name).toBe('ceph-one');
  });

  it('createServer, getServer, getServers, putServer, getServerVersions, getServerVersion', async () => {
    const server = await client.createServer('0f0e0d0c-0b0a-4908-8706-050403020100', '10.9.0.7', 'ansible');
    ids.server = server.id;
    expect(server).toMatchObject({ model: 'server', version: 1, data: { ip: '10.9.0.7', username: 'ansible', cluster_id: null } });
    expect((await client.getServer(server.id)).data.ip).toBe('10.9.0.7');
    ids.factsServer = await cp.addServer(1);
    const page = await client.getServers({ filter: { ip: '10.9.0.7' } });
    expect(page.items.map((s) => s.id)).toEqual([server.id]);
    const current = await client.getServer(server.id);
    const renamed = await client.putServer({ ...current, data: { ...current.data, name: 'storage-7' } });
    expect(renamed).toMatchObject({ version: current.version + 1, data: { name: 'storage-7' } });
    const versions = await client.getServerVersions(server.id);
    expect(versions.items[0]?.data.name).toBe('storage-7');
    expect(versions.total).toBe(renamed.version);
    expect((await client.getServerVersion(server.id, 1)).data.name).toBe('10.9.0.7');
  });

  it('createPlaybookConfiguration, getPlaybookConfiguration(s), updatePlaybookConfiguration, versions', async () => {
    const config = await client.createPlaybookConfiguration('hello', ids.cluster, 'hello_world', [ids.factsServer]);
    ids.config = config.id;
    expect(config).toMatchObject({ model: 'playbook_configuration', version: 1, data: { name: 'hello', playbook_id: 'hello_world', server_ids: [ids.factsServer] } });
    expect(Object.keys(config.data.configuration.inventory)).toContain('_meta');
    const refused = await client.createPlaybookConfiguration('x', ids.cluster, 'make_coffee', [ids.factsServer]).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 400, error: 'UnknownPlaybookError' });

    expect((await client.getPlaybookConfiguration(config.id)).data.name).toBe('hello');
    expect((await client.getPlaybookConfigurations()).items[0]?.id).toBe(config.id);
    const edited = await client.updatePlaybookConfiguration({
      ...config,
      data: { ...config.data, name: 'hello-edited', configuration: { ...config.data.configuration, global_vars: { port_number: 9090 } } },
    });
    expect(edited).toMatchObject({ version: 2, data: { name: 'hello-edited', configuration: { global_vars: { port_number: 9090 } } } });
    expect((await client.getPlaybookConfigurationVersions(config.id)).items.map((v) => v.version)).toEqual([2, 1]);
    expect((await client.getPlaybookConfigurationVersion(config.id, 1)).data.name).toBe('hello');
  });

  it('createExecution, getExecution(s), getExecutionVersions, getExecutionVersion, getExecutionSteps, getExecutionLog', async () => {
    const execution = await client.createExecution(ids.config, 2);
    ids.execution = execution.id;
    expect(execution).toMatchObject({ model: 'execution', data: { state: 'created', playbook_configuration: { id: ids.config, version: 2, playbook_name: 'hello_world' } } });

    await runner.claim(execution.id);
    await runner.log(execution.id, 'PLAY [hello] *****\n');
    await runner.step(execution.id, { role: 'hello_world', name: 'Gathering Facts', result: 'ok', serverId: ids.factsServer });
    expect(await client.getExecutionLog(execution.id)).toBe('PLAY [hello] *****\n');
    await runner.step(execution.id, { role: 'hello_world', name: 'Answer on port 9090', result: 'ok', serverId: ids.factsServer });
    await runner.log(execution.id, 'TASK [Answer on port 9090] ok\nPLAY RECAP ok=2\n');
    await runner.finish(execution.id, 'completed');

    expect((await client.getExecution(execution.id)).data.state).toBe('completed');
    expect((await client.getExecutions()).items.map((e) => e.id)).toContain(execution.id);
    const versions = await client.getExecutionVersions(execution.id);
    expect(versions.items.map((v) => v.data.state)).toEqual(['completed', 'started', 'created']);
    expect((await client.getExecutionVersion(execution.id, 2)).data).toMatchObject({ state: 'started', runner_id: runner.name });
    const steps = await client.getExecutionSteps(execution.id);
    expect(steps.total).toBe(2);
    expect(steps.items.map((s) => [s.model, s.data.name, s.data.result])).toEqual([
      ['execution_step', 'Gathering Facts', 'ok'],
      ['execution_step', 'Answer on port 9090', 'ok'],
    ]);
    expect(await client.getExecutionLog(execution.id)).toBe('PLAY [hello] *****\nTASK [Answer on port 9090] ok\nPLAY RECAP ok=2\n');
  });

  it('cancelExecution: a queued execution at once, a running one through canceling', async () => {
    const queued = await client.createExecution(ids.config, 2);
    const canceled = await client.cancelExecution(queued.id);
    expect(canceled).toMatchObject({ id: queued.id, data: { state: 'canceled' } });

    const running = await client.createExecution(ids.config, 1);
    await runner.claim(running.id);
    expect((await client.cancelExecution(running.id)).data.state).toBe('canceling');
    await runner.finish(running.id, 'canceled', 'canceled by a user');
    expect((await client.getExecution(running.id)).data).toMatchObject({ state: 'canceled', reason: 'canceled by a user' });
  });

  it('getCinderIntegration: the files of the cluster under the root asked for', async () => {
    const missing = await client.getCinderIntegration(ids.cluster).catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: 404, error: 'NotFound' });
    const now = Math.floor(Date.now() / 1000);
    await cp.clusterFiles.put(ids.cluster, 'ceph.conf', '[global]\nfsid = 1\n', now);
    await cp.clusterFiles.put(ids.cluster, 'ceph.client.cinder.keyring', '[client.cinder]\nkey = k\n', now);
    expect(await client.getCinderIntegration(ids.cluster)).toEqual({
      '/etc/ceph/ceph.conf': '[global]\nfsid = 1\n',
      '/etc/ceph/ceph.client.cinder.keyring': '[client.cinder]\nkey = k\n',
    });
    expect(Object.keys(await client.getCinderIntegration(ids.cluster, '/srv/ceph'))).toEqual(['/srv/ceph/ceph.client.cinder.keyring', '/srv/ceph/ceph.conf']);
  });

  it('deletePlaybookConfiguration, deleteServer, deleteCluster, deleteUser, deleteRole', async () => {
    expect((await client.deletePlaybookConfiguration(ids.config)).time_deleted).toBeGreaterThan(0);
    expect((await client.deleteServer(ids.server)).time_deleted).toBeGreaterThan(0);
    expect((await client.deleteServer(ids.factsServer)).time_deleted).toBeGreaterThan(0);
    const inUse = await client.deleteRole(ids.role).catch((e: unknown) => e);
    expect(inUse).toMatchObject({ code: 409, error: 'CannotDeleteRoleWithActiveUsers' });
    expect((await client.deleteUser(ids.user)).time_deleted).toBeGreaterThan(0);
    expect((await client.deleteRole(ids.role)).time_deleted).toBeGreaterThan(0);
    expect((await client.deleteCluster(ids.cluster)).time_deleted).toBeGreaterThan(0);

    expect((await client.getClusters()).items.map((c) => c.id)).not.toContain(ids.cluster);
    const archived = await client.getClusters({ filter: { time_deleted: { ne: 0 } } });
    expect(archived.items.map((c) => c.id)).toEqual([ids.cluster]);
    expect((await client.getCluster(ids.cluster)).time_deleted).toBeGreaterThan(0);
  });

  it('logout: the server revokes the token, the client forgets it, and the next call logs in again', async () => {
    const token = client.token;
    expect(token).not.toBeNull();
    expect(await client.logout()).toEqual({});
    expect(client.token).toBeNull();
    const refused = await fetch(`${cp.url}/v1/user/self/`, { headers: { authorization: token ?? '' } });
    expect(refused.status).toBe(401);
    expect(await client.logout()).toEqual({});
    const logins = recorder.logins();
    expect((await client.getUserSelf()).data.login).toBe('root');
    expect(recorder.logins()).toBe(logins + 1);
    expect(client.token).not.toBe(token);
  });

  it('passes extra options to the request: headers, query parameters and a signal', async () => {
    await client.getClusters(undefined, { headers: { 'x-request-id': 'trace-42' }, query: { per_page: 1 } });
    const last = recorder.sent.at(-1);
    expect(last?.headers.get('x-request-id')).toBe('trace-42');
    expect(last?.headers.get('authorization')).toBe(client.token);
    expect(last?.url.searchParams.get('per_page')).toBe('1');
    const controller = new AbortController();
    controller.abort(new Error('changed my mind'));
    const aborted = await client.getClusters(undefined, { signal: controller.signal }).catch((e: unknown) => e);
    expect(aborted).toMatchObject({ name: 'ServiceError', cause: { message: 'changed my mind' } });
  });
});
