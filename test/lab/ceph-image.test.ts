import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CEPH_IMAGE,
  CEPH_PACKAGES,
  deviceMapperAvailable,
  deviceMapperStatus,
  ensureCephImage,
  hostDeviceMapperStatus,
  oneMonBootstrapScript,
  parseDeviceMapperProbe,
} from './ceph.js';
import { checkRequirements, createLab, labResidue } from './lab.js';
import type { Lab, LabHost, LabImage } from './lab.js';
import { run, sleep } from './sys.js';

/** The first run builds the base image (debootstrap) and the ceph layer on top. */
const SETUP_TIMEOUT_MS = 40 * 60_000;
const GiB = 1024 ** 3;
const DISK_BYTES = 6 * GiB;

function log(line: string): void {
  process.stderr.write(`[ceph-image.test] ${line}\n`);
}

describe('device-mapper detection', () => {
  it('reads the probe: no device-mapper means raw OSDs, with the reason', () => {
    const none = parseDeviceMapperProbe('misc=0\ndevices=0\ncontrol=0\ndmsetup=\n');
    expect(none).toMatchObject({ available: false, osdMode: 'raw', inProcMisc: false, controlNode: false });
    expect(none.reason).toMatch(/kernel has no device-mapper/);
    const noNode = parseDeviceMapperProbe('misc=1\ndevices=1\ncontrol=0\n');
    expect(noNode).toMatchObject({ available: false, osdMode: 'raw' });
    expect(noNode.reason).toMatch(/\/dev\/mapper\/control is missing/);
    const full = parseDeviceMapperProbe('misc=1\ndevices=1\ncontrol=1\ndmsetup=4.48.0\n');
    expect(full).toMatchObject({ available: true, osdMode: 'lvm', dmsetupDriver: '4.48.0' });
    // the kernel and node are there but dmsetup cannot talk to the driver
    expect(parseDeviceMapperProbe('misc=1\ndevices=0\ncontrol=1\ndmsetup=\n')).toMatchObject({ available: false });
  });

  it('says which OSD path applies on this machine, consistently with /proc', async () => {
    const status = await deviceMapperStatus();
    log(`device-mapper on this machine: ${status.reason} -> ceph-volume ${status.osdMode}${status.available ? ' (dm-crypt possible)' : ' (no dm-crypt)'}`);
    const misc = await readFile('/proc/misc', 'utf8');
    expect(status.inProcMisc).toBe(/\bdevice-mapper\b/.test(misc));
    expect(deviceMapperAvailable()).toBe(status.available);
    expect(status.osdMode).toBe(status.available ? 'lvm' : 'raw');
  });
});

describe('lab: the Ceph-ready image and a host with two disks', () => {
  let lab: Lab | undefined;
  let image: LabImage;
  /** Owner and mode of the machine's loop devices behind the disks, at boot. */
  const loopStats = new Map<string, string>();
  const statOf = async (path: string) => (await run('stat', ['-c', '%u:%g %a', path])).stdout.trim();

  const host = (): LabHost => {
    const h = lab?.hosts[0];
    if (!h) throw new Error('the lab was not created (see beforeAll)');
    return h;
  };

  beforeAll(async () => {
    expect(await checkRequirements(), 'the lab needs these on this machine').toEqual([]);
    let t = Date.now();
    image = await ensureCephImage();
    log(`ceph image ${image.name}-${image.key} ready in ${((Date.now() - t) / 1000).toFixed(1)} s (built in ${image.buildSeconds} s)`);
    t = Date.now();
    lab = await createLab({ hosts: [{ hostname: 'ceph1', disks: [DISK_BYTES, DISK_BYTES] }], name: 'ceph-image-test', image: CEPH_IMAGE });
    log(`host booted in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    for (const d of lab.hosts[0]?.disks ?? []) loopStats.set(d.loop, await statOf(d.loop));
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await lab?.destroy();
  }, 120_000);

  it('has Ceph 16 installed, no ceph.conf, and no Ceph daemon running or enabled', async () => {
    const h = host();
    expect(image.spec.extraPackages).toEqual([...CEPH_PACKAGES].sort());
    expect((await h.exec('ceph --version')).stdout).toMatch(/^ceph version 16\.\d+\.\d+/);
    for (const bin of ['ceph-mon', 'ceph-mgr', 'ceph-osd', 'ceph-volume', 'monmaptool', 'ceph-authtool', 'cryptsetup', 'lvm'])
      expect((await h.exec(`command -v ${bin}`, { check: false })).exitCode, `${bin} is installed`).toBe(0);
    expect((await h.exec('test -e /etc/ceph/ceph.conf', { check: false })).exitCode).not.toBe(0);
    const state = (await h.exec('systemctl is-system-running --wait', { check: false, timeoutMs: 120_000 })).stdout.trim();
    const failed = (await h.exec('systemctl --failed --no-legend --plain', { check: false })).stdout.trim();
    expect(state, `failed units:\n${failed}`).toBe('running');
    const comms = (await h.exec('cat /proc/[0-9]*/comm 2>/dev/null || true')).stdout.split('\n');
    expect(comms.filter((c) => c.startsWith('ceph') || c === 'smartd')).toEqual([]);
    for (const unit of ['ceph-crash.service', 'smartmontools.service', 'nvmf-autoconnect.service'])
      expect((await h.exec(`systemctl is-enabled ${unit}`, { check: false })).stdout.trim(), unit).toBe('disabled');
  }, 180_000);

  it('sees /dev/vdb and /dev/vdc as block devices of the size given', async () => {
    const h = host();
    for (const dev of ['/dev/vdb', '/dev/vdc']) {
      expect((await h.exec(`test -b ${dev}`, { check: false })).exitCode, `${dev} is a block device`).toBe(0);
      expect(Number((await h.exec(`blockdev --getsize64 ${dev}`)).stdout.trim())).toBe(DISK_BYTES);
    }
    const dm = await hostDeviceMapperStatus(h);
    const machine = await deviceMapperStatus();
    log(`device-mapper inside the host: ${dm.reason} -> ceph-volume ${dm.osdMode}`);
    // the host shares the machine's kernel
    expect(dm.inProcMisc).toBe(machine.inProcMisc);
  }, 60_000);

  it('bootstraps a one-monitor cluster by hand and brings an OSD on /dev/vdb up and in (ceph-volume raw)', async () => {
    const h = host();
    let t = Date.now();
    const fsid = (await h.exec(oneMonBootstrapScript({ name: h.name, ip: h.ip }), { timeoutMs: 180_000 })).stdout.trim();
    expect(fsid).toMatch(/^[0-9a-f-]{36}$/);
    const quorum = JSON.parse((await h.exec('timeout 60 ceph quorum_status -f json')).stdout) as { quorum_names: string[]; monmap: { fsid: string } };
    expect(quorum.quorum_names).toEqual([h.name]);
    expect(quorum.monmap.fsid).toBe(fsid);
    log(`monitor in quorum in ${((Date.now() - t) / 1000).toFixed(1)} s`);

    t = Date.now();
    const prepare = await h.exec('ceph-volume raw prepare --bluestore --data /dev/vdb 2>&1', { check: false, timeoutMs: 300_000 });
    expect(prepare.exitCode, prepare.stdout).toBe(0);
    const osdId = /osd\.(\d+)/.exec(prepare.stdout)?.[1] ?? '0';
    await h.exec(`systemctl start ceph-osd@${osdId}`);
    let stat = { num_osds: 0, num_up_osds: 0, num_in_osds: 0 };
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      stat = JSON.parse((await h.exec('timeout 30 ceph osd stat -f json')).stdout) as typeof stat;
      if (stat.num_up_osds === 1 && stat.num_in_osds === 1) break;
      await sleep(2_000);
    }
    const status = (await h.exec('timeout 30 ceph -s', { check: false })).stdout;
    expect(stat, `ceph -s:\n${status}`).toMatchObject({ num_osds: 1, num_up_osds: 1, num_in_osds: 1 });
    log(`OSD ${osdId} up and in ${((Date.now() - t) / 1000).toFixed(1)} s after prepare started\n${status}`);
  }, 600_000);

  it('after a reboot: a --no-tmpfs OSD comes back by itself; a tmpfs one needs its directory primed again', async () => {
    const h = host();
    const prepare = await h.exec('ceph-volume raw prepare --bluestore --no-tmpfs --data /dev/vdc 2>&1', { check: false, timeoutMs: 300_000 });
    expect(prepare.exitCode, prepare.stdout).toBe(0);
    const osdId = /osd\.(\d+)/.exec(prepare.stdout)?.[1] ?? '1';
    await h.exec(`systemctl enable --now ceph-osd@${osdId} && systemctl enable ceph-osd@0`);
    // `ceph tell` needs the daemon itself: the monitor of a one-host cluster keeps a dead OSD "up"
    const answers = async (id: string, ms: number) => {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        if ((await h.exec(`timeout 10 ceph tell osd.${id} version`, { check: false, timeoutMs: 20_000 })).exitCode === 0) return true;
        await sleep(2_000);
      }
      return false;
    };
    expect(await answers(osdId, 120_000)).toBe(true);
    const t = Date.now();
    await h.reboot();
    expect(await answers(osdId, 120_000), `osd.${osdId} (--no-tmpfs) did not come back after the reboot`).toBe(true);
    log(`osd.${osdId} (--no-tmpfs) answering ${((Date.now() - t) / 1000).toFixed(1)} s after the reboot started`);
    // the tmpfs OSD directory is empty now, and ceph-volume raw activate cannot find the device in a lab host
    expect((await h.exec('ls -A /var/lib/ceph/osd/ceph-0')).stdout.trim()).toBe('');
    expect((await h.exec('systemctl is-active ceph-osd@0', { check: false })).stdout.trim()).not.toBe('active');
    const activate = await h.exec('ceph-volume raw activate --device /dev/vdb --no-systemd 2>&1', { check: false });
    log(`ceph-volume raw activate in a lab host: exit ${activate.exitCode}: ${activate.stdout.trim()}`);
    await h.exec(
      'set -e; d=/var/lib/ceph/osd/ceph-0; mount -t tmpfs tmpfs $d; ceph-bluestore-tool prime-osd-dir --path $d --no-mon-config --dev /dev/vdb; ' +
        'ln -s /dev/vdb $d/block; chown -R ceph:ceph $d; chown -h ceph:ceph $d/block; systemctl reset-failed ceph-osd@0; systemctl restart ceph-osd@0',
    );
    expect(await answers('0', 120_000), 'osd.0 did not answer after priming its directory').toBe(true);
  }, 600_000);

  it('destroy() releases the loop devices and their files; the machine\'s loop device nodes are untouched', async () => {
    const h = host();
    const disks = [...h.disks];
    expect(disks).toHaveLength(2);
    // ceph-volume chowned the host's /dev/vdb; the machine's loop device keeps its owner and mode
    expect((await h.exec('stat -c %U /dev/vdb')).stdout.trim()).toBe('ceph');
    for (const d of disks) expect(await statOf(d.loop), d.loop).toBe(loopStats.get(d.loop));
    // and bypasses the machine's page cache (vm-host.ts, DIRECT_DRIVE)
    for (const d of disks) expect((await run('cat', [`/sys/block/${d.loop.slice('/dev/'.length)}/loop/dio`])).stdout.trim(), `${d.loop} direct I/O`).toBe('1');
    await lab!.destroy();
    lab = undefined;
    expect(await labResidue([h.machine])).toEqual([]);
    const loops = (await run('losetup', ['-l', '-n', '-O', 'NAME,BACK-FILE'])).stdout;
    for (const d of disks) expect(loops).not.toContain(d.file);
    for (const d of disks) expect((await run('test', ['-e', d.file], { check: false })).exitCode).not.toBe(0);
  }, 120_000);
});
