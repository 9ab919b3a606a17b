import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DMI_PRODUCT_UUID, LAB_GATEWAY, checkRequirements, createLab, ensureImage, generateKeyPair, labResidue, sshExec } from './lab.js';
import type { KeyPair, Lab, LabHost } from './lab.js';
import { processAlive, run, which } from './sys.js';

/** The first run builds the image with debootstrap (a few minutes). */
const SETUP_TIMEOUT_MS = 40 * 60_000;

async function systemState(host: LabHost): Promise<string> {
  const state = (await host.exec('systemctl is-system-running --wait', { check: false, timeoutMs: 120_000 })).stdout.trim();
  if (state !== 'running') {
    const failed = (await host.exec('systemctl --failed --no-legend --plain', { check: false })).stdout.trim();
    return `${state}; failed units on ${host.name}:\n${failed}`;
  }
  return state;
}

describe('lab: two booted Debian hosts', () => {
  let dir = '';
  let key: KeyPair;
  let lab: Lab | undefined;

  const hosts = (): readonly LabHost[] => {
    if (!lab) throw new Error('the lab was not created (see beforeAll)');
    return lab.hosts;
  };
  const host = (i: number): LabHost => {
    const h = hosts()[i];
    if (!h) throw new Error(`no host ${i}`);
    return h;
  };

  beforeAll(async () => {
    expect(await checkRequirements(), 'the lab needs these on this machine').toEqual([]);
    expect(await which('ansible'), 'ansible-core must be installed (apt-get install -y ansible-core)').toBeDefined();
    dir = await mkdtemp(join(tmpdir(), 'carapace-lab-test-'));
    key = await generateKeyPair(dir);
    await ensureImage();
    lab = await createLab({ hosts: 2, name: 'lab-test', sshKey: key });
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await lab?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('boots both hosts to a running system with distinct names and addresses', async () => {
    expect(hosts()).toHaveLength(2);
    expect(new Set(hosts().map((h) => h.name)).size).toBe(2);
    expect(new Set(hosts().map((h) => h.ip)).size).toBe(2);
    for (const h of hosts()) {
      expect(h.ip).toMatch(/^10\.77\.0\.\d+$/);
      expect(await systemState(h)).toBe('running');
      expect((await h.exec('hostname')).stdout.trim()).toBe(h.name);
      expect((await h.exec('cat /etc/machine-id')).stdout.trim()).toMatch(/^[0-9a-f]{32}$/);
    }
    const ids = await Promise.all(hosts().map(async (h) => (await h.exec('cat /etc/machine-id')).stdout));
    expect(new Set(ids).size).toBe(2);
    // Where the machine has DMI, each host reads its own product UUID instead of the machine's.
    const uuids = await Promise.all(hosts().map(async (h) => (await readFile(join(h.dir, 'product_uuid'), 'utf8')).trim()));
    expect(new Set(uuids).size).toBe(2);
    if (existsSync(DMI_PRODUCT_UUID)) for (const [i, h] of hosts().entries()) expect((await h.exec(`cat ${DMI_PRODUCT_UUID}`)).stdout.trim()).toBe(uuids[i]);
  }, 300_000);

  it('answers real SSH with the lab key', async () => {
    for (const h of hosts()) {
      const r = await sshExec(h, 'hostname && id -u', { privateKeyPath: key.privateKeyPath });
      expect(r.stdout.trim().split('\n')).toEqual([h.name, '0']);
    }
  }, 60_000);

  it('is reachable by Ansible (ansible -m ping)', async () => {
    const inventory = await lab!.writeInventory(join(dir, 'inventory.ini'));
    const r = await run('ansible', ['all', '-i', inventory, '-m', 'ping', '-o'], {
      cwd: dir,
      timeoutMs: 120_000,
      check: false,
      env: { ...process.env, ANSIBLE_HOST_KEY_CHECKING: 'False', ANSIBLE_NOCOLOR: '1', ANSIBLE_LOCAL_TEMP: join(dir, 'ansible-tmp') },
    });
    expect(r.exitCode, `ansible failed:\n${r.stdout}\n${r.stderr}`).toBe(0);
    for (const h of hosts()) expect(r.stdout).toMatch(new RegExp(`^${h.name} \\| SUCCESS .*"ping": "pong"`, 'm'));
  }, 180_000);

  it('lets hosts reach each other and the machine at 10.77.0.1', async () => {
    const server = createServer((_req, res) => res.end('hello from the machine\n'));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, LAB_GATEWAY, resolve);
    });
    try {
      const port = (server.address() as AddressInfo).port;
      for (const h of hosts()) {
        // no DNS in the lab: unknown names must fail at once, not after resolver timeouts
        const started = Date.now();
        expect((await h.exec('getent hosts no-such-host.example', { check: false })).exitCode).toBe(2);
        expect(Date.now() - started).toBeLessThan(3_000);
        const fromMachine = await h.exec(`curl -sS --max-time 10 http://${LAB_GATEWAY}:${port}/`);
        expect(fromMachine.stdout).toBe('hello from the machine\n');
        for (const other of hosts()) {
          if (other === h) continue;
          expect((await h.exec(`getent hosts ${other.name}`)).stdout).toMatch(new RegExp(`^${other.ip.replace(/\./g, '\\.')}\\s`));
          const banner = await h.exec(`timeout 10 bash -c 'exec 3<>/dev/tcp/${other.name}/22; head -c 4 <&3'`);
          expect(banner.stdout).toBe('SSH-');
        }
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 60_000);

  it('stops and starts one host, keeping its files', async () => {
    const h = host(0);
    const other = host(1);
    await h.exec('echo kept > /root/marker && sync');
    const nspawnPid = h.pid;
    expect(nspawnPid).toBeDefined();
    await h.stop();
    expect(h.running).toBe(false);
    expect(await processAlive(nspawnPid ?? 0)).toBe(false);
    const down = await sshExec(h, 'true', { privateKeyPath: key.privateKeyPath, check: false, timeoutMs: 30_000 });
    expect(down.exitCode).toBe(255);
    // the other host is untouched
    expect((await sshExec(other, 'hostname', { privateKeyPath: key.privateKeyPath })).stdout.trim()).toBe(other.name);

    await h.start();
    expect(h.running).toBe(true);
    expect((await sshExec(h, 'cat /root/marker', { privateKeyPath: key.privateKeyPath })).stdout).toBe('kept\n');
    expect(await systemState(h)).toBe('running');
  }, 180_000);

  it('comes back from a reboot inside the host', async () => {
    const h = host(1);
    const init = h.initPid;
    const machineId = (await h.exec('cat /etc/machine-id')).stdout;
    await h.reboot();
    // The id the discovery script registers with stays the same across reboots.
    expect((await h.exec('cat /etc/machine-id')).stdout).toBe(machineId);
    expect(h.running).toBe(true);
    expect(h.initPid).not.toBe(init);
    expect((await sshExec(h, 'hostname', { privateKeyPath: key.privateKeyPath })).stdout.trim()).toBe(h.name);
    expect(await systemState(h)).toBe('running');
  }, 180_000);

  it('destroy() leaves no netns, veth, mount, cgroup, process or file behind', async () => {
    const machines = hosts().map((h) => h.machine);
    const pids = hosts().map((h) => h.pid ?? 0);
    const roots = hosts().map((h) => h.root);
    await lab!.destroy();
    lab = undefined;
    expect(await labResidue(machines)).toEqual([]);
    for (const p of pids) expect(await processAlive(p)).toBe(false);
    const mounts = (await run('cat', ['/proc/self/mountinfo'])).stdout;
    for (const r of roots) expect(mounts).not.toContain(r);
    const links = (await run('ip', ['-o', 'link', 'show'])).stdout;
    for (const m of machines) expect(links).not.toContain(`v${m}:`);
  }, 120_000);
});
