// The carapace-runner Debian package as an operator uses it: built by `npm run package`,
// installed with dpkg on a lab host (Debian 12, systemd, no Node.js, no route to a mirror),
// enrolled with mTLS to a control plane this test starts, serving a second lab host that
// joined with the user-data `carapace cloud-config` prints for the key enroll printed; it runs
// hello_world there. Then an upgrade to a second build while idle (same identity, same key),
// a remove that keeps configuration, key and data, and a purge that leaves nothing.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverLab } from '../lab/discover.js';
import { createLab, ensureBridge, LAB_GATEWAY, type Lab, type LabHost } from '../lab/lab.js';
import { buildDeb, installDeb, installedVersion, leftovers, makeTlsFiles, ownerAndMode, putFile, unitProperties, type BuiltDeb, type TlsFiles } from './packages.js';
import { ADMIN_PASSWORD, Api, ControlPlane, DISCOVERY_TOKEN, freePort } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

type Json = Record<string, any>;

/** The lab image of jump hosts: the base image plus what the package depends on (Debian's Ansible and OpenSSH client). */
const JUMP_HOST_IMAGE = { name: 'jump-host', extraPackages: ['ansible-core', 'openssh-client'] };
const RUNNER = 'jump-1';
const PURGED_PATHS = ['/etc/carapace', '/var/lib/carapace', '/usr/lib/carapace-runner', '/usr/bin/carapace-runner', '/lib/systemd/system/carapace-runner.service', '/usr/share/doc/carapace-runner'];

describe('the carapace-runner .deb on a lab host: enrolled with mTLS, hello_world, upgrade, remove, purge', { timeout: 240_000 }, () => {
  let dir: string;
  let tls: TlsFiles;
  let first: BuiltDeb;
  let second: BuiltDeb;
  let cp: ControlPlane;
  let api: Api;
  let jumpLab: Lab;
  let serverLab: Lab | undefined;
  let jump: LabHost;
  let grpcPort: number;
  let token: string;
  let publicKey = '';
  let serverId = '';
  let clusterId = '';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-e2e-deb-runner-'));
    await ensureBridge();
    tls = await makeTlsFiles(join(dir, 'tls'), LAB_GATEWAY, RUNNER);
    grpcPort = await freePort(LAB_GATEWAY);
    // Two builds of the package, as two releases would be; the lab boots meanwhile.
    const [built, lab] = await Promise.all([
      (async () => [await buildDeb('runner', '0.1.0+e2e1', join(dir, 'debs')), await buildDeb('runner', '0.1.0+e2e2', join(dir, 'debs'))] as const)(),
      createLab({ hosts: 1, name: 'deb-runner', image: JUMP_HOST_IMAGE }),
      (async () => {
        cp = await ControlPlane.start({
          httpHost: LAB_GATEWAY,
          grpcPort,
          runner: 'none',
          env: {
            CARAPACE_GRPC_HOST: LAB_GATEWAY,
            CARAPACE_GRPC_TLS_CERT: tls.serverCert,
            CARAPACE_GRPC_TLS_KEY: tls.serverKey,
            CARAPACE_GRPC_TLS_CLIENT_CA: tls.ca,
          },
        });
        api = new Api(cp.url);
        await api.login();
      })(),
    ]);
    [first, second] = built;
    jumpLab = lab;
    jump = lab.hosts[0] as LabHost;
    token = (await api.ok('POST', '/v1/runner/', { name: RUNNER, labels: { site: 'lab' } })).token as string;
  }, 40 * 60_000);

  afterAll(async () => {
    await serverLab?.destroy();
    await jumpLab?.destroy();
    await cp?.stop();
    cp?.removeData();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  async function runner(): Promise<Json | undefined> {
    return ((await api.ok('GET', '/v1/runner/')).items as Json[]).find((r) => r.name === RUNNER);
  }

  async function connected(since = 0): Promise<Json> {
    return eventually(`runner ${RUNNER} to connect`, async () => {
      const r = await runner();
      return r?.state === 'connected' && Number(r.connected_since) >= since ? r : undefined;
    }, 60_000);
  }

  async function helloWorld(name: string): Promise<Json> {
    clusterId ||= (await api.ok('POST', '/v1/cluster/', { name: 'deb' })).id as string;
    const config = await api.ok('POST', '/v1/playbook_configuration/', { name, cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [serverId] });
    const execution = await api.ok('POST', '/v1/execution/', { playbook_configuration: { id: config.id, version: config.version } });
    return eventually(`hello_world ${name} to end`, async () => {
      const e = await api.ok('GET', `/v1/execution/${execution.id as string}/`);
      return ['completed', 'failed', 'canceled'].includes(e.data.state as string) ? e : undefined;
    }, 150_000);
  }

  it('installs with dpkg on a host without Node.js: its own runtime, a system user, a hardened unit not yet enabled', async () => {
    expect((await jump.exec('command -v node nodejs', { check: false })).stdout.trim()).toBe('');
    expect((await jump.exec('test -e /etc/carapace', { check: false })).exitCode).not.toBe(0);
    await installDeb(jump, first);
    expect(await installedVersion(jump, 'carapace-runner')).toBe(first.version);
    expect((await jump.exec('/usr/lib/carapace-runner/node --version')).stdout.trim()).toBe(process.version);
    expect((await jump.exec('getent passwd carapace-runner')).stdout).toMatch(/^carapace-runner:x:\d+:\d+:Carapace runner:\/var\/lib\/carapace\/runner:\/usr\/sbin\/nologin$/m);
    expect(await ownerAndMode(jump, '/etc/carapace/runner.yaml')).toBe('carapace-runner:carapace-runner 600');
    expect(await ownerAndMode(jump, '/var/lib/carapace/runner')).toBe('carapace-runner:carapace-runner 700');
    const unit = await unitProperties(jump, 'carapace-runner', ['User', 'NoNewPrivileges', 'PrivateTmp', 'ProtectSystem', 'ProtectHome', 'StateDirectory', 'UnitFileState', 'ActiveState']);
    expect(unit).toEqual({ User: 'carapace-runner', NoNewPrivileges: 'yes', PrivateTmp: 'yes', ProtectSystem: 'strict', ProtectHome: 'yes', StateDirectory: 'carapace/runner', UnitFileState: 'disabled', ActiveState: 'inactive' });
  });

  it('enrolls with mTLS in one command, prints its public key, and connects once enabled', async () => {
    for (const [from, to] of [[tls.ca, '/root/tls/ca.pem'], [tls.clientCert, '/root/tls/runner.pem'], [tls.clientKey, '/root/tls/runner.key']] as const) await putFile(jump, from, to);
    const bad = await jump.exec(`carapace-runner enroll --url https://${LAB_GATEWAY}:${grpcPort} --token ${token}`, { check: false });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/must be host:port, without a scheme/);
    const r = await jump.exec(
      `carapace-runner enroll --url ${LAB_GATEWAY}:${grpcPort} --token ${token} --label site=lab --tls-ca /root/tls/ca.pem --tls-cert /root/tls/runner.pem --tls-key /root/tls/runner.key`,
    );
    publicKey = r.stdout.trim();
    expect(publicKey).toMatch(/^ssh-ed25519 [A-Za-z0-9+/]+={0,2} carapace-runner$/);
    expect(r.stderr).toMatch(new RegExp(`runner ${RUNNER} of ${LAB_GATEWAY}:${grpcPort} \\(mTLS\\)`));
    expect(await ownerAndMode(jump, '/etc/carapace/runner.yaml')).toBe('carapace-runner:carapace-runner 600');
    expect(await ownerAndMode(jump, '/etc/carapace/runner-key.pem')).toBe('carapace-runner:carapace-runner 600');
    expect(await ownerAndMode(jump, '/var/lib/carapace/runner/id_ed25519')).toBe('carapace-runner:carapace-runner 600');
    expect((await jump.exec('cat /var/lib/carapace/runner/id_ed25519.pub')).stdout.trim()).toBe(publicKey);

    // mTLS is required: the same configuration without the client certificate is refused.
    await jump.exec("grep -v -e '^  certFile:' -e '^  keyFile:' /etc/carapace/runner.yaml > /root/no-client-cert.yaml");
    const refused = await jump.exec('CARAPACE_RUNNER_WORK_DIR=/root/no-client-cert timeout 4 carapace-runner --config /root/no-client-cert.yaml 2>&1', { check: false });
    expect(refused.stdout).toMatch(/certificate required/);
    expect(refused.stdout).not.toMatch(/connected to the control plane/);

    await jump.exec('systemctl enable --now carapace-runner');
    const seen = await connected();
    expect(seen.ssh_public_key).toBe(publicKey);
    expect(seen.labels).toEqual({ site: 'lab' });
    expect((await jump.exec('ps -o user:32= -C node')).stdout.trim()).toBe('carapace-runner');
    // Its log is in the journal.
    expect((await jump.exec('journalctl -u carapace-runner --no-pager -o cat')).stdout).toMatch(/connected to the control plane/);
  });

  it('gathers the facts of a host that joined with its key (user-data that installs nothing: the host has python3 and sudo) and runs hello_world there', async () => {
    const discovered = await discoverLab({
      hosts: 1,
      name: 'deb-runner-server',
      access: { url: cp.url, token: DISCOVERY_TOKEN, tokenSource: 'test', publicKey, credentials: { login: 'root', password: ADMIN_PASSWORD, source: 'test' } },
      timeoutMs: 150_000,
    });
    serverLab = discovered.lab;
    const host = discovered.hosts[0];
    serverId = host?.serverId ?? '';
    expect(host?.state).toBe('operational');
    // No mirror is reachable from lab hosts: cloud-init finished without error and installed nothing.
    const status = await host!.host.exec('cloud-init status --long', { check: false });
    expect(status.stdout, status.stdout).toMatch(/^status: done$/m);
    expect((await host!.host.exec('systemctl is-failed cloud-config.service cloud-final.service', { check: false })).stdout.trim().split('\n')).toEqual(['active', 'active']);
    expect((await host!.host.readHostFile('/var/log/cloud-init-output.log')) ?? '').not.toMatch(/carapace: installing|apt-get|Err:/);

    const done = await helloWorld('deb-hello');
    expect(done.data.state, done.data.reason).toBe('completed');
    expect(await (await fetch(`http://${discovered.hosts[0]!.host.ip}:8085/`)).json()).toEqual({ result: 'ok' });
  });

  it('upgrades to a second build while idle: drained and started again, the same identity and key, still runs hello_world', async () => {
    const before = createHash('sha256').update((await jump.readHostFile('/var/lib/carapace/runner/id_ed25519')) ?? '').digest('hex');
    const config = await jump.readHostFile('/etc/carapace/runner.yaml');
    const oldPid = (await jump.exec('systemctl show -p MainPID --value carapace-runner')).stdout.trim();
    const since = Math.floor(Date.now() / 1000);
    await installDeb(jump, second);
    expect(await installedVersion(jump, 'carapace-runner')).toBe(second.version);
    expect((await jump.exec('systemctl is-active carapace-runner')).stdout.trim()).toBe('active');
    expect((await jump.exec('systemctl show -p MainPID --value carapace-runner')).stdout.trim()).not.toBe(oldPid);
    // The old process drained on the way out.
    expect((await jump.exec('journalctl -u carapace-runner --no-pager -o cat')).stdout).toMatch(/draining, then stopping[\s\S]*runner stopped/);
    expect(createHash('sha256').update((await jump.readHostFile('/var/lib/carapace/runner/id_ed25519')) ?? '').digest('hex')).toBe(before);
    expect(await jump.readHostFile('/etc/carapace/runner.yaml')).toBe(config);
    const seen = await connected(since);
    expect(seen.ssh_public_key).toBe(publicKey);
    const done = await helloWorld('deb-hello-after-upgrade');
    expect(done.data.state, done.data.reason).toBe('completed');
  });

  it('remove keeps configuration, key and data; purge leaves nothing of it', async () => {
    await jump.exec('dpkg -r carapace-runner');
    expect((await jump.exec('systemctl is-active carapace-runner', { check: false })).stdout.trim()).not.toBe('active');
    for (const kept of ['/etc/carapace/runner.yaml', '/etc/carapace/runner-key.pem', '/var/lib/carapace/runner/id_ed25519']) {
      expect((await jump.exec(`test -f ${kept}`, { check: false })).exitCode, kept).toBe(0);
    }
    expect((await jump.exec('test -e /usr/lib/carapace-runner', { check: false })).exitCode).not.toBe(0);
    // What a purge must take away is still there (the check below is not blind).
    expect(await leftovers(jump, 'carapace-runner', 'carapace-runner', PURGED_PATHS)).toEqual(
      expect.arrayContaining(['path /etc/carapace', 'path /var/lib/carapace', 'user carapace-runner', 'group carapace-runner', 'file /var/lib/dpkg/info/carapace-runner.postrm']),
    );
    await jump.exec('dpkg --purge carapace-runner');
    expect(await leftovers(jump, 'carapace-runner', 'carapace-runner', PURGED_PATHS)).toEqual([]);
  });
});
