import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { buildCli, parsed, runCli } from '@carapace/test-support/cli';

/** The CLI as a subprocess: cluster, server, playbook and playbook-configuration. */
describe('carapace: clusters, servers, playbooks, playbook configurations', () => {
  let cp: TestControlPlane;
  let env: Record<string, string>;
  const ids = { cluster: '', server: '', factsServer: '', config: '' };
  const carapace = (...args: string[]) => runCli(args, { env });

  beforeAll(async () => {
    [cp] = await Promise.all([TestControlPlane.start(), buildCli()]);
    env = { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: ROOT_PASSWORD };
  }, 300_000);
  afterAll(() => cp.stop());

  it('cluster create, get-all, get, update, get-version-all, get-version', async () => {
    const created = await carapace('cluster', 'create', 'ceph-cli');
    expect(created.code, created.stderr).toBe(0);
    ids.cluster = parsed(created).id;
    const renamed = await carapace('cluster', 'update', ids.cluster, '--name', 'ceph-prod');
    expect(parsed(renamed)).toMatchObject({ version: 2, data: { name: 'ceph-prod' } });
    const [list, table, one, versions, first] = await Promise.all([
      carapace('cluster', 'get-all'),
      carapace('cluster', 'get-all', '--output', 'table'),
      carapace('cluster', 'get', ids.cluster),
      carapace('cluster', 'get-version-all', ids.cluster, '--page', '1', '--per-page', '1', '-o', 'table'),
      carapace('cluster', 'get-version', ids.cluster, '1'),
    ]);
    expect(parsed(list).map((c: { id: string }) => c.id)).toEqual([ids.cluster]);
    expect(table.stdout).toMatch(new RegExp(`^${ids.cluster}\\s+2\\s+ceph-prod\\s+0$`, 'm'));
    expect(parsed(one).data.name).toBe('ceph-prod');
    expect(versions.stdout).toContain('ceph-prod');
    expect(versions.stdout).not.toContain('ceph-cli');
    expect(versions.stdout).toContain('page 1 of 2, 2 in all');
    expect(parsed(first).data.name).toBe('ceph-cli');
  });

  it('server create, get-all (JSON, table and --compact CSV), get, update, get-version-all, get-version', async () => {
    const created = await carapace('server', 'create', '0a0b0c0d-0000-4000-8000-00000000abcd', '10.20.0.5', 'ansible');
    expect(created.code, created.stderr).toBe(0);
    ids.server = parsed(created).id;
    expect(parsed(created).data).toMatchObject({ ip: '10.20.0.5', username: 'ansible', state: 'gathering_facts' });
    ids.factsServer = await cp.addServer(42);

    const [list, table, compact, compactOne] = await Promise.all([
      carapace('server', 'get-all', '--sort-by', 'ip'),
      runCli(['server', 'get-all', '-o', 'table'], { env: { ...env, COLUMNS: '200' } }),
      carapace('server', 'get-all', '--compact'),
      carapace('server', 'get', ids.factsServer, '--compact'),
    ]);
    expect(parsed(list).map((s: { id: string }) => s.id)).toEqual([ids.factsServer, ids.server]);
    expect(table.stdout.split('\n')[0]).toMatch(/^id\s+version\s+name\s+fqdn\s+ip\s+username\s+state\s+cluster_id$/);
    expect(table.stdout).toMatch(/node42\s+node42\.lab\.example\.com\s+10\.0\.0\.44\s+ansible\s+operational/);
    const lines = compact.stdout.trim().split('\n');
    expect(lines[0]).toBe('"machine_id","version","fqdn","username","default_ip","interface=mac=ipv4=ipv6","..."');
    expect(lines).toContain(`"${ids.factsServer}","2","node42.lab.example.com","ansible","10.0.0.44","eth0=52:54:00:12:34:56=10.0.0.44=fe80::5054:ff:fe12:3456","eth1=52:54:00:12:34:57=192.168.0.44"`);
    expect(lines).toContain(`"${ids.server}","1","10.20.0.5","ansible","10.20.0.5"`);
    expect(compactOne.stdout.trim().split('\n')).toHaveLength(2);

    const renamed = await carapace('server', 'update', ids.server, '--name', 'storage-5');
    expect(parsed(renamed)).toMatchObject({ version: 2, data: { name: 'storage-5' } });
    const [one, versions, first] = await Promise.all([
      carapace('server', 'get', ids.server),
      carapace('server', 'get-version-all', ids.server),
      carapace('server', 'get-version', ids.server, '1'),
    ]);
    expect(parsed(one).data.name).toBe('storage-5');
    expect(parsed(versions).map((v: { version: number }) => v.version)).toEqual([2, 1]);
    expect(parsed(first).data.name).toBe('10.20.0.5');
  });

  it('playbook get-all; playbook-configuration create (with hints), get-all, get, update, get-version-all, get-version', async () => {
    const playbooks = await carapace('playbook', 'get-all', '-o', 'table');
    expect(playbooks.stdout).toMatch(/^cluster_deploy\s/m);
    expect(playbooks.stdout.split('\n')[0]).toMatch(/^id\s+name\s+servers\s+hints\s+description$/);
    expect(playbooks.stdout).toMatch(/^cluster_deploy\s+.*\s+required\s+(\S+ )*dmcrypt\b/m);

    const refused = await carapace('playbook-configuration', 'create', 'deploy', 'cluster_deploy', ids.cluster, ids.factsServer, '--hints', '{"dmcrypt": "yes"}');
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stderr)).toMatchObject({ code: 400, error: 'InvalidHintError' });
    const deploy = await carapace('playbook-configuration', 'create', 'deploy', 'cluster_deploy', ids.cluster, ids.factsServer, '--hints', '[{"id": "dmcrypt", "value": true}]');
    expect(deploy.code, deploy.stderr).toBe(0);
    expect(parsed(deploy).data).toMatchObject({ playbook_id: 'cluster_deploy', server_ids: [ids.factsServer] });
    expect(parsed(deploy).data.hints).toContainEqual({ id: 'dmcrypt', value: true });
    await carapace('playbook-configuration', 'delete', parsed(deploy).id);

    const created = await carapace('playbook-configuration', 'create', 'hello', 'hello_world', ids.cluster, ids.factsServer);
    ids.config = parsed(created).id;
    const updated = await carapace('playbook-configuration', 'update', ids.config, '--name', 'hello-2', '--global-vars', '{"port_number": 8086}');
    expect(parsed(updated)).toMatchObject({ version: 2, data: { name: 'hello-2', configuration: { global_vars: { port_number: 8086 } } } });
    const badJson = await carapace('playbook-configuration', 'update', ids.config, '--inventory', '[1, 2]');
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain('a JSON object is expected');

    const [list, one, versions, first] = await Promise.all([
      carapace('playbook-configuration', 'get-all'),
      carapace('playbook-configuration', 'get', ids.config),
      carapace('playbook-configuration', 'get-version-all', ids.config),
      carapace('playbook-configuration', 'get-version', ids.config, '1'),
    ]);
    expect(parsed(list).map((c: { id: string }) => c.id)).toEqual([ids.config]);
    expect(parsed(one).data.name).toBe('hello-2');
    expect(parsed(versions)).toHaveLength(2);
    expect(parsed(first).data.configuration.global_vars.port_number).toBe(8085);
  });

  it('cluster cinder-integration; deletes of playbook configurations, servers and clusters', async () => {
    await cp.clusterFiles.put(ids.cluster, 'ceph.conf', '[global]\n', Math.floor(Date.now() / 1000));
    const [files, rooted] = await Promise.all([
      carapace('cluster', 'cinder-integration', ids.cluster),
      carapace('cluster', 'cinder-integration', ids.cluster, '--root', '/opt/ceph'),
    ]);
    expect(parsed(files)).toEqual({ '/etc/ceph/ceph.conf': '[global]\n' });
    expect(parsed(rooted)).toEqual({ '/opt/ceph/ceph.conf': '[global]\n' });

    const config = await carapace('playbook-configuration', 'delete', ids.config);
    expect(parsed(config).time_deleted).toBeGreaterThan(0);
    const [server, factsServer] = await Promise.all([carapace('server', 'delete', ids.server), carapace('server', 'delete', ids.factsServer)]);
    expect(parsed(server).time_deleted).toBeGreaterThan(0);
    expect(parsed(factsServer).time_deleted).toBeGreaterThan(0);
    const cluster = await carapace('cluster', 'delete', ids.cluster);
    expect(parsed(cluster).time_deleted).toBeGreaterThan(0);
    const [active, archived] = await Promise.all([carapace('cluster', 'get-all'), carapace('cluster', 'get-all', '--list', 'archived')]);
    expect(parsed(active)).toEqual([]);
    expect(parsed(archived).map((c: { id: string }) => c.id)).toEqual([ids.cluster]);
  });
});
