// Facts describe the disks a host can use, on real lab hosts (systemd-nspawn containers that
// share the machine's kernel and sysfs): each host is given a loop device of the machine as
// /dev/vdb. The runner's own fact gathering over SSH must list that disk as `vdb` with its
// size, and none of the machine's devices (its loop devices, other hosts' disks, vda); the
// real cluster_deploy builder then plans OSDs on /dev/vdb.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { ServerFacts } from '@carapace/models';
import { clusterDeployPlugin, PlaybookInputError, resolveHints, type PluginCluster, type PluginServer } from '@carapace/playbooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatherFacts } from '@carapace/runner';
import { createLab, generateKeyPair, type KeyPair, type Lab, type LabHost } from '../lab/lab.js';
import { run } from '../lab/sys.js';

const GiB = 1024 ** 3;
const DISK_BYTES = 6 * GiB;
const CLUSTER: PluginCluster = { id: randomUUID(), name: 'disk-facts', configuration: {} };

describe('facts of lab hosts given a disk', { timeout: 120_000 }, () => {
  let dir: string;
  let key: KeyPair;
  let lab: Lab;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-disk-facts-'));
    key = await generateKeyPair(dir);
    lab = await createLab({ name: 'e2e-disk-facts', hosts: [{ disks: [DISK_BYTES] }, { disks: [DISK_BYTES] }], sshKey: key });
    // Accounts like the one cloud-init gives the runner (passwordless sudo), and one without sudo.
    const host = hostAt(0);
    for (const user of ['automation', 'plain']) {
      await host.exec(`useradd -m -s /bin/sh ${user} && install -d -m 700 -o ${user} -g ${user} /home/${user}/.ssh`);
      await host.exec(`install -m 600 -o ${user} -g ${user} /root/.ssh/authorized_keys /home/${user}/.ssh/authorized_keys`);
    }
    await host.exec("echo 'automation ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/automation && chmod 440 /etc/sudoers.d/automation");
  }, 40 * 60_000);

  afterAll(async () => {
    await lab?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  function hostAt(i: number): LabHost {
    const host = lab.hosts[i];
    if (!host) throw new Error(`no lab host ${i}`);
    return host;
  }

  /** Gathers facts the way the runner does (`main.ts`: the runner's key, its SSH timeout). */
  async function factsOf(host: LabHost, username = 'root'): Promise<ServerFacts> {
    const target = { address: host.ip, port: 22, username, expectedHostKey: null };
    const { facts } = await gatherFacts(target, { privateKey: readFileSync(key.privateKeyPath, 'utf8'), timeoutMs: 30_000 });
    return facts;
  }

  function pluginServer(host: LabHost, facts: ServerFacts): PluginServer {
    return { id: randomUUID(), version: 1, name: host.name, fqdn: facts.fqdn, ip: host.ip, username: 'root', state: 'operational', cluster_id: null, facts };
  }

  function clusterDeploy(servers: PluginServer[]) {
    const selected = clusterDeployPlugin.selectServers(CLUSTER, servers, []);
    return clusterDeployPlugin.buildConfiguration(CLUSTER, selected, resolveHints(clusterDeployPlugin.descriptor, []), []);
  }

  function hostvars(configuration: ReturnType<typeof clusterDeploy>, ip: string): Record<string, unknown> | undefined {
    return (configuration.inventory as { _meta: { hostvars: Record<string, Record<string, unknown>> } })._meta.hostvars[ip];
  }

  it('lists the host’s disk as vdb with its size, and none of the machine’s devices', async () => {
    const [a, b] = [hostAt(0), hostAt(1)];
    const facts = await factsOf(a);
    const loop = a.disks[0]?.loop ?? '';
    expect(loop).toMatch(/^\/dev\/loop\d+$/);
    expect(facts.disks).toEqual([
      {
        name: 'vdb',
        path: '/dev/vdb',
        kernel_name: basename(loop),
        size_bytes: DISK_BYTES,
        rotational: expect.any(Boolean),
        type: 'loop',
        model: null,
        serial: null,
        read_only: false,
        removable: false,
        fstype: null,
        mountpoint: null,
        holders: [],
        partitions: [],
      },
    ]);
    // The machine's block devices, the other host's disk among them, are not this host's.
    const machine = JSON.parse((await run('lsblk', ['-J', '-d', '-o', 'NAME'])).stdout) as { blockdevices: { name: string }[] };
    const machineNames = machine.blockdevices.map((d) => d.name);
    expect(machineNames).toContain(basename(b.disks[0]?.loop ?? '-'));
    expect(facts.disks.map((d) => d.name).filter((name) => machineNames.includes(name))).toEqual([]);
  });

  it('builds a cluster_deploy configuration with OSDs on each host’s /dev/vdb', async () => {
    const servers = await Promise.all(lab.hosts.map(async (h) => pluginServer(h, await factsOf(h))));
    const configuration = clusterDeploy(servers);
    expect(configuration.global_vars).toMatchObject({ fsid: CLUSTER.id, public_network: '10.77.0.0/24' });
    expect((configuration.inventory as { osds: { hosts: string[] } }).osds.hosts).toEqual(lab.hosts.map((h) => h.ip));
    for (const host of lab.hosts) {
      expect(hostvars(configuration, host.ip)).toMatchObject({
        carapace_osd_devices: ['/dev/vdb'],
        carapace_osd_devices_info: [{ path: '/dev/vdb', size_bytes: DISK_BYTES, rotational: expect.any(Boolean) }],
      });
    }
  });

  it('sees a filesystem written on the disk inside the host, and then refuses it', async () => {
    const b = hostAt(1);
    await b.exec('mkfs.ext4 -q /dev/vdb');
    try {
      const facts = await factsOf(b);
      expect(facts.disks.map((d) => [d.name, d.fstype])).toEqual([['vdb', 'ext4']]);
      let error: unknown;
      try {
        clusterDeploy([pluginServer(b, facts)]);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(PlaybookInputError);
      expect((error as PlaybookInputError).errorName).toBe('NoUsableDisksError');
      expect((error as PlaybookInputError).message).toContain('vdb: has a ext4 signature');
    } finally {
      await b.exec('wipefs -q -a /dev/vdb');
    }
  });

  it('probes the disk through sudo for an automation account, and never trusts a disk it cannot probe', async () => {
    const a = hostAt(0);
    const automation = await factsOf(a, 'automation');
    expect(automation.disks.map((d) => [d.name, d.fstype])).toEqual([['vdb', null]]);
    expect(hostvars(clusterDeploy([pluginServer(a, automation)]), a.ip)?.carapace_osd_devices).toEqual(['/dev/vdb']);

    const plain = await factsOf(a, 'plain');
    expect(plain.disks.map((d) => [d.name, d.fstype])).toEqual([['vdb', 'unknown']]);
    expect(() => clusterDeploy([pluginServer(a, plain)])).toThrow(/vdb: its signatures could not be read/);
  });
});
