/**
 * A lab host that is a QEMU virtual machine: `VmHost`, a `LabHost` with a kernel of its own
 * (qcow2 overlay, seed disk, tap device, QMP, exec over SSH). The image, the accelerator probe,
 * the seed disk and the QMP client are in vm.ts.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { LabHost } from './container-host.js';
import { debug } from './debug.js';
import type { ExecOptions, ExecResult, HostSetup, LabDisk, VmSetup } from './host-types.js';
import { NO_DNS_RESOLV_CONF } from './image.js';
import { CONTAINER_PATH, LAB_BRIDGE, LAB_GATEWAY, LAB_PREFIX_LENGTH } from './naming.js';
import { cleanupSlot, readOwner } from './slots.js';
import type { SlotOwner } from './slots.js';
import { probeTcp, sshOptions } from './ssh.js';
import { processAlive, processStartTime, removeTree, run, shellQuote, signalProcess, sleep, tail, waitForExit } from './sys.js';
import { SEED_IDENTITY_DIR } from './vm-image.js';
import { makeSeedDisk, qmp, tapName, vmMac } from './vm.js';
import type { AccelChoice } from './vm.js';

/**
 * The lab's disks bypass the machine's page cache: QEMU's drives are opened with O_DIRECT
 * (cache=none; the guest keeps its own cache) and the containers' loop disks with direct I/O.
 * On the machine's ext4 (data=ordered, up to a fifth of 24 GiB dirty before writers are
 * throttled), a flush of one host's disk otherwise waits for the dirty data of every other
 * file in the journal commit. Suspected (issue 27) of the client operations of the Ceph files
 * that waited past their 10 s in whole runs only, beside a VM host formatting LUKS or
 * installing packages: quiet runs of the same files never saw one.
 */
const DIRECT_DRIVE = 'cache=none';

const VM_PATH_ENV = `/usr/bin/env -i PATH=${CONTAINER_PATH} HOME=/root LANG=C.UTF-8 TERM=dumb /bin/sh -c`;

/**
 * A lab host that is a QEMU virtual machine with its own Debian kernel (device-mapper,
 * dm-crypt, LVM): root disk a qcow2 overlay of the VM image's raw disk, a vfat seed disk
 * (label CIDATA: cloud-init's NoCloud files and the lab's identity files), extra disks as
 * sparse raw files on virtio, a tap device on the lab bridge. `exec` runs over SSH as root
 * with the lab's management key; `reboot()` is a real reboot of the guest.
 */
export class VmHost extends LabHost {
  private qemu: ChildProcess | undefined;
  private qemuStart: string | undefined;
  private readonly qmpSocket: string;
  private readonly seedDisk: string;
  private readonly productUuid = randomUUID();

  /** @internal */
  constructor(setup: HostSetup) {
    super(setup);
    this.qmpSocket = join(this.dir, 'qmp.sock');
    this.seedDisk = join(this.dir, 'seed.img');
  }

  private get vm(): VmSetup {
    if (!this.setup.vm) throw new Error(`${this.machine}: no VM settings`);
    return this.setup.vm;
  }

  /** The QEMU process's pid while the VM runs. */
  override get pid(): number | undefined {
    return this.qemu?.pid;
  }
  override get initPid(): number | undefined {
    return undefined;
  }
  override get running(): boolean {
    return this.qemu !== undefined;
  }
  /** The accelerator the VM runs under (`kvm` or `tcg`). */
  get accel(): AccelChoice {
    return this.vm.accel;
  }

  protected override processRecord(): Partial<SlotOwner> {
    return { vmPid: this.qemu?.pid, vmStart: this.qemuStart };
  }

  /** @internal Creates the VM's overlay, seed disk and tap device. */
  override async provision(_mode: 'auto' | 'overlay' | 'copy', allHosts: readonly { name: string; ip: string }[], sshPublicKey: string | undefined): Promise<void> {
    const vm = this.setup.image.vm;
    if (!vm) throw new Error(`${this.machine}: image ${this.setup.image.name} is not a VM image`);
    await removeTree(this.dir);
    await mkdir(this.dir, { recursive: true });
    this.rootfsMode = 'vm';
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', vm.disk, '-F', 'raw', this.root]);
    const files: Record<string, string> = {};
    const id = (f: string): string => `${SEED_IDENTITY_DIR}/${f}`;
    files[id('hostname')] = `${this.name}\n`;
    files[id('hosts')] = [
      '127.0.0.1\tlocalhost',
      '::1\t\tlocalhost ip6-localhost ip6-loopback',
      '',
      '# carapace lab',
      `${LAB_GATEWAY}\tcarlab-gateway`,
      ...allHosts.map((h) => `${h.ip}\t${h.name}`),
      '',
    ].join('\n');
    files[id('resolv')] = this.setup.nameserver === undefined ? NO_DNS_RESOLV_CONF : `# carapace lab\nnameserver ${this.setup.nameserver}\n`;
    files[id('lab.net')] = [
      '[Match]',
      `MACAddress=${vmMac(this.slot)}`,
      '',
      '[Network]',
      `Address=${this.ip}/${LAB_PREFIX_LENGTH}`,
      `Gateway=${LAB_GATEWAY}`,
      'LinkLocalAddressing=no',
      'IPv6AcceptRA=no',
      '',
    ].join('\n');
    files[id('mgmt.pub')] = `${this.vm.managementKey.publicKey}\n`;
    const seed = this.setup.seed;
    if (seed) {
      files['user-data'] = seed.userData;
      files['meta-data'] = this.metaData(seed);
      if (seed.vendorData !== undefined) files['vendor-data'] = seed.vendorData;
      if (seed.networkConfig !== undefined) files['network-config'] = seed.networkConfig;
    } else if (sshPublicKey !== undefined) {
      files[id('root.pub')] = `${sshPublicKey.trim()}\n`;
    }
    await makeSeedDisk(this.seedDisk, files);
    await writeFile(join(this.dir, 'product_uuid'), `${this.productUuid}\n`);
    const tap = tapName(this.slot);
    await run('ip', ['link', 'del', tap], { check: false });
    await run('ip', ['tuntap', 'add', 'dev', tap, 'mode', 'tap']);
    await run('ip', ['link', 'set', tap, 'master', LAB_BRIDGE]);
    await run('ip', ['link', 'set', tap, 'up']);
    await this.recordOwner();
  }

  private qemuArgs(): string[] {
    const image = this.setup.image.vm;
    if (!image) throw new Error(`${this.machine}: not a VM image`);
    const { accel, memoryMiB, cpus } = this.vm;
    const append = [
      'root=/dev/vda',
      'rw',
      'console=ttyS0',
      'net.ifnames=0',
      'fsck.mode=skip',
      'mitigations=off',
      // Less for an emulated serial port to carry, and no KVM modules in a guest (TCG's CPU offers SVM).
      'quiet',
      'systemd.show_status=error',
      'modprobe.blacklist=kvm,kvm_amd,kvm_intel',
      ...(this.setup.seed ? [] : ['cloud-init=disabled']),
    ];
    return [
      '-name', `${this.machine},process=qemu-${this.machine}`,
      '-accel', accel.accel,
      '-cpu', accel.accel === 'kvm' ? 'host' : 'max',
      '-m', String(memoryMiB),
      '-smp', String(cpus),
      '-uuid', this.productUuid,
      '-nodefaults', '-display', 'none',
      '-chardev', `file,id=con,path=${this.consoleLog},append=on`, '-serial', 'chardev:con',
      '-qmp', `unix:${this.qmpSocket},server=on,wait=off`,
      '-kernel', image.kernel, '-initrd', image.initrd, '-append', append.join(' '),
      '-object', 'rng-random,id=rng0,filename=/dev/urandom', '-device', 'virtio-rng-pci,rng=rng0',
      '-drive', `file=${this.root},format=qcow2,if=none,id=root,discard=unmap,${DIRECT_DRIVE}`, '-device', 'virtio-blk-pci,drive=root,serial=carlab-root',
      ...this.disks.flatMap((d) => {
        const id = d.device.slice('/dev/'.length);
        return ['-drive', `file=${d.file},format=raw,if=none,id=${id},discard=unmap,${DIRECT_DRIVE}`, '-device', `virtio-blk-pci,drive=${id},id=dev-${id},serial=carlab-${id}`];
      }),
      '-drive', `file=${this.seedDisk},format=raw,if=ide`,
      '-netdev', `tap,id=net0,ifname=${tapName(this.slot)},script=no,downscript=no`,
      '-device', `virtio-net-pci,netdev=net0,mac=${vmMac(this.slot)},romfile=`,
    ];
  }

  /** Boots the VM (keeping its disks) and waits until sshd answers. */
  override async start(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.qemu) throw new Error(`${this.machine} is already running`);
    const timeoutMs = opts.timeoutMs ?? this.setup.bootTimeoutMs;
    await rm(this.qmpSocket, { force: true });
    const log = await open(join(this.dir, 'qemu.log'), 'a');
    await writeFile(this.consoleLog, `\n--- carapace-lab: booting ${this.machine} (${this.name}, VM, ${this.vm.accel.accel}) at ${new Date().toISOString()} ---\n`, {
      flag: 'a',
    });
    let child: ChildProcess;
    try {
      child = spawn('qemu-system-x86_64', this.qemuArgs(), { detached: true, stdio: ['ignore', log.fd, log.fd] });
    } finally {
      await log.close();
    }
    child.unref();
    const pid = child.pid;
    if (pid === undefined) throw new Error(`cannot start qemu-system-x86_64 for ${this.machine}`);
    const state: { exited?: { code: number | null; signal: NodeJS.Signals | null } } = {};
    child.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      state.exited = { code, signal };
      if (this.qemu === child) {
        this.qemu = undefined;
        this.qemuStart = undefined;
        void this.recordOwner().catch(() => undefined);
      }
    });
    this.qemu = child;
    this.qemuStart = await processStartTime(pid);
    await this.recordOwner();
    const started = Date.now();
    debug(`${this.machine}: qemu ${pid} started (${this.vm.accel.accel})`);
    for (;;) {
      const e = state.exited;
      let why: string | undefined;
      if (e) why = `qemu exited (code ${String(e.code)}, signal ${String(e.signal)}): ${tail(await readFile(join(this.dir, 'qemu.log'), 'utf8').catch(() => ''), 5)}`;
      else if (Date.now() - started > timeoutMs) why = `sshd did not answer on ${this.ip}:22 within ${timeoutMs} ms (${this.vm.accel.accel})`;
      if (why !== undefined) {
        const consoleTail = await this.consoleTail(40);
        if (!e) await this.stop({ graceMs: 0 }).catch(() => undefined);
        throw new Error(`${this.machine} (${this.ip}, VM) did not boot: ${why}\n--- console (${this.consoleLog}):\n${consoleTail}`);
      }
      if (await probeTcp(this.ip, 22, 'SSH-', 2_000)) {
        this.setup.log(`${this.machine}: VM up (sshd answers) ${((Date.now() - started) / 1000).toFixed(1)}s after qemu started (${this.vm.accel.accel})`);
        return;
      }
      await sleep(500);
    }
  }

  /** Powers the VM off (`systemctl poweroff`, then the QMP power button; SIGKILL after `graceMs`, default 60 s). */
  override async stop(opts: { graceMs?: number } = {}): Promise<void> {
    const child = this.qemu;
    const pid = child?.pid;
    if (!child || pid === undefined) return;
    const start = this.qemuStart;
    const graceMs = opts.graceMs ?? 60_000;
    if (graceMs > 0) {
      await this.exec('systemctl poweroff', { check: false, timeoutMs: 15_000 }).catch(() => undefined);
      if (!(await waitForExit(pid, start, graceMs / 2))) {
        await qmp(this.qmpSocket, 'system_powerdown').catch(() => undefined);
        await waitForExit(pid, start, graceMs / 2);
      }
    }
    if (await processAlive(pid, start)) {
      signalProcess(pid, 'SIGKILL');
      await waitForExit(pid, start, 10_000);
    }
    if (this.qemu === child) {
      this.qemu = undefined;
      this.qemuStart = undefined;
    }
    await this.recordOwner();
  }

  /** Reboots the guest for real (`systemctl reboot`: the kernel restarts, QEMU stays) and waits until it is back with another boot id. */
  override async reboot(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (!this.qemu) throw new Error(`${this.machine} is not running`);
    const before = (await this.exec('cat /proc/sys/kernel/random/boot_id')).stdout.trim();
    await this.exec('systemctl reboot', { check: false, timeoutMs: 30_000 }).catch(() => undefined);
    const timeoutMs = opts.timeoutMs ?? this.setup.bootTimeoutMs;
    const started = Date.now();
    for (;;) {
      if (!this.qemu) throw new Error(`${this.machine}: qemu exited during the reboot`);
      if (Date.now() - started > timeoutMs)
        throw new Error(`${this.machine} did not come back from a reboot within ${timeoutMs} ms\n--- console:\n${await this.consoleTail(30)}`);
      if (await probeTcp(this.ip, 22, 'SSH-', 2_000)) {
        const r = await this.exec('cat /proc/sys/kernel/random/boot_id', { check: false, timeoutMs: 20_000 }).catch(() => undefined);
        const now = r?.exitCode === 0 ? r.stdout.trim() : '';
        if (now !== '' && now !== before) {
          this.setup.log(`${this.machine}: rebooted in ${((Date.now() - started) / 1000).toFixed(1)}s`);
          return;
        }
      }
      await sleep(1_000);
    }
  }

  /** Runs `command` with /bin/sh in the guest as root, over SSH with the lab's management key. */
  override async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    if (!this.qemu) throw new Error(`${this.machine} is not running`);
    const r = await run('ssh', [...sshOptions(this.vm.managementKey.privateKeyPath), `root@${this.ip}`, `${VM_PATH_ENV} ${shellQuote(command)}`], {
      check: false,
      timeoutMs: opts.timeoutMs ?? 120_000,
      input: opts.input,
    });
    const result = { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode ?? 128 };
    if ((opts.check ?? true) && result.exitCode !== 0)
      throw new Error(`on ${this.machine} (VM): \`${command}\` exited with ${result.exitCode}\n${tail(r.stderr, 20)}\n${tail(r.stdout, 10)}`);
    return result;
  }

  /**
   * Adds a sparse raw disk of `sizeBytes` as the next /dev/vdX: hot-plugged through QMP into a
   * running VM (a virtio-blk PCI device), and given to QEMU on every later boot.
   */
  override async addDisk(sizeBytes: number): Promise<LabDisk> {
    const letter = String.fromCharCode('b'.charCodeAt(0) + this.disks.length);
    const name = `vd${letter}`;
    await mkdir(join(this.dir, 'disks'), { recursive: true });
    const file = join(this.dir, 'disks', `${name}.img`);
    await run('truncate', ['-s', String(sizeBytes), file]);
    const disk: LabDisk = { device: `/dev/${name}`, loop: '', file, sizeBytes };
    this.disks.push(disk);
    await this.recordOwner();
    if (this.qemu) {
      await qmp(this.qmpSocket, 'blockdev-add', {
        'node-name': name,
        driver: 'raw',
        discard: 'unmap',
        cache: { direct: true },
        file: { driver: 'file', filename: file, cache: { direct: true } },
      });
      await qmp(this.qmpSocket, 'device_add', { driver: 'virtio-blk-pci', drive: name, id: `dev-${name}`, serial: `carlab-${name}` });
      // The guest names it by probe order: check it is where this host says.
      const link = `/dev/disk/by-id/virtio-carlab-${name}`;
      const r = await this.exec(`for i in $(seq 60); do [ -e ${link} ] && break; udevadm settle; sleep 0.5; done; readlink -f ${link}`, { timeoutMs: 60_000 });
      const device = r.stdout.trim();
      if (device !== disk.device) throw new Error(`${this.machine}: the hot-plugged disk ${name} is ${device || 'missing'} in the guest`);
    }
    return disk;
  }

  /** @internal */
  override async teardown(graceMs: number): Promise<void> {
    await this.stop({ graceMs: Math.min(graceMs, 20_000) });
    await cleanupSlot(this.slot, await readOwner(this.slot), graceMs);
  }
}
