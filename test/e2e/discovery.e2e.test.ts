// First-boot discovery end to end: a fresh lab host whose only input is the generated
// user-data registers itself, the embedded runner gathers its facts over SSH, and
// hello_world runs on it as the user cloud-init created.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCloudConfig } from '@carapace/cloud-init';
import { createLab, ensureBridge, LAB_GATEWAY, type Lab } from '../lab/lab.js';
import { Api, ControlPlane, DISCOVERY_TOKEN, eventually } from './system.js';

type Json = Record<string, any>;

describe('first-boot discovery on real hosts', { timeout: 300_000 }, () => {
  let lab: Lab;
  let cp: ControlPlane;
  let api: Api;
  let server: Json;
  let bootedAt: number;

  beforeAll(async () => {
    await ensureBridge();
    cp = await ControlPlane.start({ httpHost: LAB_GATEWAY, runner: 'embedded' });
    api = new Api(cp.url);
    await api.login();
    const embedded = await eventually(
      async () => {
        const list = await api.ok('GET', '/v1/runner/');
        return list.items.find((r: Json) => r.name === 'embedded' && r.state === 'connected' && r.ssh_public_key);
      },
      60_000,
      'the embedded runner',
    );
    const userData = generateCloudConfig({ url: cp.url, serverDiscoveryToken: DISCOVERY_TOKEN, publicKey: embedded.ssh_public_key, timeout: 5 });
    const wrongToken = generateCloudConfig({ url: cp.url, serverDiscoveryToken: 'not-the-discovery-token-0123456789', publicKey: embedded.ssh_public_key, timeout: 5 });
    bootedAt = Date.now();
    lab = await createLab({ name: 'e2e-discovery', hosts: [{ seed: { userData }, disks: [2 * 1024 ** 3] }, { seed: { userData: wrongToken } }] });
  }, 40 * 60_000);

  afterAll(async () => {
    await cp?.stop();
    await lab?.destroy();
    cp?.removeData();
  }, 120_000);

  it('registers within 60 s of boot and shows full facts', async () => {
    const host = lab.hosts[0];
    server = await eventually(
      async () => {
        const list = await api.ok('GET', '/v1/server/?all=true');
        const s = list.items.find((x: Json) => x.data.ip === host?.ip);
        return s?.data.state === 'operational' ? s : undefined;
      },
      60_000 - (Date.now() - bootedAt),
      'the host to register with its facts',
    );
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
      async () => {
        const e = await api.ok('GET', `/v1/execution/${execution.id}/`);
        return ['completed', 'failed', 'canceled'].includes(e.data.state) ? e : undefined;
      },
      180_000,
      'hello_world to end',
    );
    expect(done.data.state, done.data.reason).toBe('completed');
    const answer = await fetch(`http://${server.data.ip}:8085/`);
    expect(await answer.json()).toEqual({ result: 'ok' });
  });

  it('re-registers after a reboot without a duplicate', async () => {
    const before = await api.ok('GET', `/v1/server/${server.id}/`);
    await lab.hosts[0]?.reboot();
    const after = await eventually(
      async () => {
        const s = await api.ok('GET', `/v1/server/${server.id}/`);
        return s.version > before.version && s.data.state === 'operational' ? s : undefined;
      },
      90_000,
      'a new registration after the reboot',
    );
    expect(after.id).toBe(server.id);
    const list = await api.ok('GET', '/v1/server/?all=true');
    expect(list.items.filter((s: Json) => s.data.ip === lab.hosts[0]?.ip)).toHaveLength(1);
  });

  it('refuses a host with a wrong token: it shows up nowhere', async () => {
    const bad = lab.hosts[1];
    // Its discovery script has tried (and logged the refusal) by now.
    const logged = await eventually(
      async () => {
        const res = await bad?.exec('cat /var/log/carapace-discovery.log', { check: false });
        return res && /401|refused|Unauthorized/i.test(res.stdout) ? res.stdout : undefined;
      },
      60_000,
      'the refusal in the discovery log',
    );
    expect(logged).toMatch(/401|Unauthorized/i);
    const list = await api.ok('GET', '/v1/server/?all=true');
    expect(list.items.map((s: Json) => s.data.ip)).not.toContain(bad?.ip);
    expect(list.total).toBe(1);
  });
});
