import { mkdtemp, rm } from 'node:fs/promises';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostDeviceMapperStatus } from './ceph.js';
import { VmHost, checkRequirements, createLab, generateKeyPair, labResidue, sshExec } from './lab.js';
import { ansibleUserSeed, SEEDED_MARKER } from './seed-fixture.js';
import type { KeyPair, Lab } from './lab.js';
import { listProcesses, processAlive, run } from './sys.js';
import { checkVmRequirements, tapName } from './vm.js';

/** The first run builds the base, Ceph and VM images (about 8 minutes on a fresh machine). */
const SETUP_TIMEOUT_MS = 40 * 60_000;
/** Sized for TCG (no working KVM here): a boot takes about 1.5 minutes. */
const BOOT_MS = 10 * 60_000;
const GIB = 1024 ** 3;

describe('lab: a VM host with a kernel of its own (QEMU; KVM if it works, else TCG)', () => {
  let dir = '';
  let key: KeyPair;
  let lab: Lab | undefined;

  const host = (): VmHost => {
    const h = lab?.hosts[0];
    if (!h) throw new Error('the lab was not created (see beforeAll)');
    if (!(h instanceof VmHost)) throw new Error(`${h.machine} is not a VM host`);
    return h;
  };

  beforeAll(async () => {
    expect(await checkRequirements(), 'the lab needs these on this machine').toEqual([]);
    expect(await checkVmRequirements(), 'VM hosts need these on this machine').toEqual([]);
    dir = await mkdtemp(join(tmpdir(), 'carapace-lab-vm-'));
    key = await generateKeyPair(dir);
    const userData = ansibleUserSeed(key.publicKey);
    lab = await createLab({ hosts: [{ kind: 'vm', seed: { userData }, disks: [2 * GIB] }], name: 'vm-test' });
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await lab?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('boots its own Debian kernel in QEMU, on the lab bridge at its slot address', async () => {
    const h = host();
    expect(h.kind).toBe('vm');
    expect(h.ip).toMatch(/^10\.77\.0\.\d+$/);
    const uname = (await h.exec('uname -r')).stdout.trim();
    expect(uname).toMatch(/-amd64$/);
    expect(uname).not.toBe(release());
    expect((await h.exec('systemd-detect-virt', { check: false })).stdout.trim()).toBe(h.accel.accel === 'kvm' ? 'kvm' : 'qemu');
    expect((await h.exec('ip -4 -o addr show dev eth0')).stdout).toContain(`${h.ip}/24`);
    expect((await h.exec('hostname')).stdout.trim()).toBe(h.name);
    const state = await h.exec('systemctl is-system-running --wait', { check: false, timeoutMs: 300_000 });
    const failed = (await h.exec('systemctl --failed --no-legend --plain', { check: false })).stdout;
    expect(state.stdout.trim(), `failed units:\n${failed}`).toBe('running');
  }, BOOT_MS);

  it('ran cloud-init with its NoCloud user-data: SSH as the seeded user, root only with the lab management key', async () => {
    const h = host();
    const r = await h.exec('cloud-init status --wait --long', { check: false, timeoutMs: 300_000 });
    expect(r.exitCode, `cloud-init status:\n${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/^status: done$/m);
    expect(r.stdout).toMatch(/NoCloud/);
    expect((await h.exec(`cat ${SEEDED_MARKER.path}`)).stdout).toBe(SEEDED_MARKER.content);
    const ssh = await sshExec(h, 'whoami && sudo -n whoami && hostname', { user: 'ansible', privateKeyPath: key.privateKeyPath });
    expect(ssh.stdout.trim().split('\n')).toEqual(['ansible', 'root', h.name]);
    expect((await sshExec(h, 'true', { privateKeyPath: key.privateKeyPath, check: false })).exitCode).toBe(255);
  }, BOOT_MS);

  it('has device-mapper with the crypt target', async () => {
    const h = host();
    const dm = await hostDeviceMapperStatus(h);
    expect(dm.available, dm.reason).toBe(true);
    expect(dm.osdMode).toBe('lvm');
    expect((await h.exec('test -c /dev/mapper/control && echo yes')).stdout.trim()).toBe('yes');
    // The crypt target is a module, loaded on first use (cryptsetup loads it the same way).
    const targets = (await h.exec('modprobe dm_crypt && dmsetup targets')).stdout;
    expect(targets).toMatch(/^crypt\s/m);
  }, 120_000);

  it('hot-plugs a disk (QMP) and puts LVM on it', async () => {
    const h = host();
    const disk = await h.addDisk(1 * GIB);
    expect(disk.device).toBe('/dev/vdc');
    expect((await h.exec('blockdev --getsize64 /dev/vdc')).stdout.trim()).toBe(String(GIB));
    await h.exec('pvcreate -q /dev/vdc && vgcreate -q carlab-vg /dev/vdc && lvcreate -q -y -L 256M -n lv0 carlab-vg', { timeoutMs: 120_000 });
    expect((await h.exec('lvs --noheadings -o lv_name,vg_name,lv_size --units m carlab-vg')).stdout).toMatch(/lv0\s+carlab-vg\s+256\.00m/);
    expect((await h.exec('test -b /dev/carlab-vg/lv0 && echo yes')).stdout.trim()).toBe('yes');
  }, 300_000);

  it('destroy() leaves no QEMU process, tap device or file behind', async () => {
    const h = host();
    const machine = h.machine;
    const pid = h.pid ?? 0;
    const tap = tapName(h.slot);
    expect(await processAlive(pid)).toBe(true);
    await lab!.destroy();
    lab = undefined;
    expect(await labResidue([machine])).toEqual([]);
    expect(await processAlive(pid)).toBe(false);
    expect((await listProcesses()).filter((p) => p.argv.includes('-name') && p.argv.some((a) => a.startsWith(`${machine},`)))).toEqual([]);
    expect((await run('ip', ['-o', 'link', 'show'])).stdout).not.toContain(`${tap}:`);
  }, 120_000);
});
