// The carapace-control-plane Debian package: built by `npm run package`, installed with dpkg
// on a lab host (Debian 12, systemd, no Node.js), it serves /v1/info/ and the web UI from its
// own runtime and keeps its SQLite data across an upgrade to a second build; purge leaves nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLab, type Lab, type LabHost } from '../lab/lab.js';
import { buildDeb, installDeb, installedVersion, leftovers, ownerAndMode, unitProperties, type BuiltDeb } from './packages.js';
import { Api } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

const PASSWORD = 'deb-admin-password-0123';
const PURGED_PATHS = ['/etc/carapace', '/var/lib/carapace', '/usr/lib/carapace-control-plane', '/usr/bin/carapace-control-plane', '/usr/bin/carapace', '/lib/systemd/system/carapace-control-plane.service'];

describe('the carapace-control-plane .deb on a lab host: /v1/info/ and the web UI, SQLite data kept across an upgrade, purge', { timeout: 180_000 }, () => {
  let dir: string;
  let first: BuiltDeb;
  let second: BuiltDeb;
  let lab: Lab;
  let host: LabHost;
  let url: string;
  let api: Api;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-e2e-deb-cp-'));
    const [built, booted] = await Promise.all([
      (async () => [await buildDeb('control-plane', '0.1.0+e2e1', join(dir, 'debs')), await buildDeb('control-plane', '0.1.0+e2e2', join(dir, 'debs'))] as const)(),
      createLab({ hosts: 1, name: 'deb-control-plane' }),
    ]);
    [first, second] = built;
    lab = booted;
    host = lab.hosts[0] as LabHost;
    url = `http://${host.ip}:8080`;
    api = new Api(url);
  }, 40 * 60_000);

  afterAll(async () => {
    await lab?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  async function info(): Promise<Record<string, any>> {
    return eventually('the packaged control plane to answer /v1/info/', async () => {
      const res = await fetch(`${url}/v1/info/`, { signal: AbortSignal.timeout(3_000) });
      return res.ok ? ((await res.json()) as Record<string, any>) : undefined;
    }, 60_000);
  }

  it('installs on a host without Node.js: a system user, its configuration 0600, a hardened unit not yet enabled', async () => {
    expect((await host.exec('command -v node nodejs', { check: false })).stdout.trim()).toBe('');
    await installDeb(host, first);
    expect(await installedVersion(host, 'carapace-control-plane')).toBe(first.version);
    expect(await ownerAndMode(host, '/etc/carapace/carapace.yaml')).toBe('carapace:carapace 600');
    expect((await host.exec('getent passwd carapace')).stdout).toMatch(/^carapace:x:\d+:\d+:Carapace control plane:\/var\/lib\/carapace\/control-plane:\/usr\/sbin\/nologin$/m);
    const unit = await unitProperties(host, 'carapace-control-plane', ['User', 'NoNewPrivileges', 'PrivateTmp', 'ProtectSystem', 'StateDirectory', 'UnitFileState']);
    expect(unit).toEqual({ User: 'carapace', NoNewPrivileges: 'yes', PrivateTmp: 'yes', ProtectSystem: 'strict', StateDirectory: 'carapace/control-plane', UnitFileState: 'disabled' });
  });

  it('serves /v1/info/ and the web UI once enabled, from its own runtime, as its user, logging to the journal', async () => {
    // As an operator would: open the API to the network, set root's first password.
    await host.exec(`sed -i 's/^  host: 127.0.0.1$/  host: 0.0.0.0/' /etc/carapace/carapace.yaml && printf 'admin:\\n  password: ${PASSWORD}\\n' >> /etc/carapace/carapace.yaml`);
    await host.exec('systemctl enable --now carapace-control-plane');
    expect((await info()).version).toBe('0.1.0');
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    const script = /<script[^>]+src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script, html.slice(0, 500)).toBeDefined();
    const asset = await fetch(`${url}${script ?? ''}`);
    expect(asset.status).toBe(200);
    expect((await asset.text()).length).toBeGreaterThan(10_000);
    // and the documentation site, carried by the package, at /docs/ (the Help menu's links)
    for (const path of ['/docs/', '/docs/guide/troubleshooting']) {
      const doc = await fetch(`${url}${path}`);
      expect(doc.status, path).toBe(200);
      expect(await doc.text(), path).toMatch(/<title>[^<]*Carapace/);
    }
    expect((await host.exec('ps -o user:32=,args= -C node')).stdout.trim()).toMatch(/^carapace +\/usr\/lib\/carapace-control-plane\/node \/usr\/lib\/carapace-control-plane\/carapace-control-plane\.mjs$/);
    expect(await ownerAndMode(host, '/var/lib/carapace/control-plane')).toBe('carapace:carapace 700');
    // The carapace command comes with it, on the same runtime.
    expect((await host.exec('carapace --url http://127.0.0.1:8080 --version')).stdout.trim()).toBe('0.1.0');
    expect((await host.exec('journalctl -u carapace-control-plane --no-pager -o cat')).stdout).toMatch(/serving the web UI at \//);
  });

  it('keeps its SQLite data across an upgrade to a second build', async () => {
    await api.login('root', PASSWORD);
    const cluster = await api.ok('POST', '/v1/cluster/', { name: 'kept-across-upgrades' });
    const db = (await host.exec('stat -c %i /var/lib/carapace/control-plane/carapace.db')).stdout.trim();
    await installDeb(host, second);
    expect(await installedVersion(host, 'carapace-control-plane')).toBe(second.version);
    expect((await host.exec('systemctl is-active carapace-control-plane')).stdout.trim()).toBe('active');
    await info();
    await api.login('root', PASSWORD);
    expect((await api.ok('GET', `/v1/cluster/${cluster.id as string}/`)).data.name).toBe('kept-across-upgrades');
    expect((await host.exec('stat -c %i /var/lib/carapace/control-plane/carapace.db')).stdout.trim()).toBe(db);
    expect(await host.readHostFile('/etc/carapace/carapace.yaml')).toContain(`password: ${PASSWORD}`);
  });

  it('purge leaves nothing of it', async () => {
    await host.exec('dpkg --purge carapace-control-plane');
    expect(await leftovers(host, 'carapace-control-plane', 'carapace', PURGED_PATHS)).toEqual([]);
  });
});
