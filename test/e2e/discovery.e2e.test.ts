// First-boot discovery end to end, the documented way (`npm run lab -- up N --discover`): fresh
// lab hosts whose only input is the user-data `carapace cloud-config` generates for the running
// control plane (its generated discovery token, its embedded runner's key) register themselves,
// the embedded runner gathers their facts over SSH, and hello_world runs on them as the user
// cloud-init created.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlPlaneAccess, discoverLab, type ControlPlaneAccess, type DiscoveredLab } from '../lab/discover.js';
import { ensureBridge, LAB_GATEWAY, type Lab } from '../lab/lab.js';
import { ADMIN_PASSWORD, Api, ControlPlane } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

type Json = Record<string, any>;

describe('first-boot discovery on real hosts', { timeout: 300_000 }, () => {
  let lab: Lab;
  let cp: ControlPlane;
  let api: Api;
  let access: ControlPlaneAccess;
  let discovered: DiscoveredLab;
  let refused: unknown;
  let server: Json;

  beforeAll(async () => {
    await ensureBridge();
    // No CARAPACE_DISCOVERY_TOKEN: the control plane generates one in its data dir, where the lab reads it.
    cp = await ControlPlane.start({ httpHost: LAB_GATEWAY, runner: 'embedded', env: { CARAPACE_DISCOVERY_TOKEN: '' } });
    api = new Api(cp.url);
    await api.login();
    access = await controlPlaneAccess({ dataDir: cp.dataDir, url: cp.url, env: { CARAPACE_ADMIN_PASSWORD: ADMIN_PASSWORD } });
    [discovered, refused] = await Promise.all([
      discoverLab({ name: 'e2e-discovery', hosts: [{ disks: [2 * 1024 ** 3] }], access, timeoutMs: 60_000 }),
      discoverLab({ name: 'e2e-discovery-refused', hosts: 1, access: { ...access, token: 'not-the-discovery-token-0123456789' }, waitFor: 'registered', timeoutMs: 60_000 }).then(
        () => undefined,
        (err: unknown) => err,
      ),
    ]);
    lab = discovered.lab;
  }, 40 * 60_000);

  afterAll(async () => {
    await cp?.stop();
    await lab?.destroy();
    cp?.removeData();
  }, 120_000);

  it('reads what hosts need from the running control plane: the generated token, the runner key, a login', () => {
    expect(access.tokenSource).toBe(`${cp.dataDir}/discovery-token`);
    expect(access.token).toMatch(/^[0-9a-f]{48}$/);
    expect(access.publicKey).toMatch(/^ssh-ed25519 /);
    expect(access.credentials).toMatchObject({ login: 'root', source: 'CARAPACE_ADMIN_PASSWORD' });
    expect(discovered.userData).toContain(access.url);
  });

  it('registers within 60 s of boot and shows full facts', async () => {
    const host = lab.hosts[0];
    expect(discovered.checked).toBe('operational');
    expect((discovered.timings.operationalS ?? Infinity) - discovered.timings.bootedS).toBeLessThan(60);
    const found = discovered.hosts[0];
    expect(found?.state).toBe('operational');
    server = await api.ok('GET', `/v1/server/${found?.serverId}/`);
    expect(server.data.ip).toBe(host?.ip);
    expect(server.data.state).toBe('operational');
    expect(server.data.username).toBe('ansible');
    expect(server.data.facts.hostname).toBe(host?.name);
    expect(server.data.facts.os).toMatchObject({ id: 'debian', version_id: '12' });
    expect(server.data.facts.interfaces.find((i: Json) => i.default_route)?.addresses).toEqual(
      expect.arrayContaining([expect.objectContaining({ family: 'inet', address: host?.ip })]),
    );
    expect(server.data.facts.disks.map((d: Json) => d.size_bytes)).toContain(2 * 1024 ** 3);
    expect(server.data.ssh_host_key).toMatch(/^\S+ \S+$/);
  });

  it('runs hello_world on it as the user cloud-init created', async () => {
    const cluster = await api.ok('POST', '/v1/cluster/', { name: 'discovered' });
    const config = await api.ok('POST', '/v1/playbook_configuration/', { name: 'hello', cluster_id: cluster.id, playbook_id: 'hello_world', server_ids: [server.id] });
    expect(config.data.configuration.inventory._meta.hostvars[server.data.ip].ansible_user).toBe('ansible');
    const execution = await api.ok('POST', '/v1/execution/', { playbook_configuration: { id: config.id, version: config.version } });
    const done = await eventually(
      'hello_world to end',
      async () => {
        const e = await api.ok('GET', `/v1/execution/${execution.id}/`);
        return ['completed', 'failed', 'canceled'].includes(e.data.state) ? e : undefined;
      },
      180_000,
    );
    expect(done.data.state, done.data.reason).toBe('completed');
    const answer = await fetch(`http://${server.data.ip}:8085/`);
    expect(await answer.json()).toEqual({ result: 'ok' });
  });

  it('re-registers after a reboot without a duplicate', async () => {
    const before = await api.ok('GET', `/v1/server/${server.id}/`);
    await lab.hosts[0]?.reboot();
    const after = await eventually(
      'a new registration after the reboot',
      async () => {
        const s = await api.ok('GET', `/v1/server/${server.id}/`);
        return s.version > before.version && s.data.state === 'operational' ? s : undefined;
      },
      90_000,
    );
    expect(after.id).toBe(server.id);
    const list = await api.ok('GET', '/v1/server/?all=true');
    expect(list.items.filter((s: Json) => s.data.ip === lab.hosts[0]?.ip)).toHaveLength(1);
  });

  it('refuses a host with a wrong token: discoverLab says why at once, and it shows up nowhere', async () => {
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/did not register: .*HTTP 401, giving up/);
    const list = await api.ok('GET', '/v1/server/?all=true');
    expect(list.items.map((s: Json) => s.id)).toEqual([server.id]);
    expect(list.total).toBe(1);
  });
});
