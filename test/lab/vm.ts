/**
 * Virtual-machine lab hosts: Debian guests with a kernel of their own (device-mapper,
 * dm-crypt, LVM), booted by QEMU on the lab bridge. The host class itself is `VmHost` in
 * vm-host.ts (one interface with the containers); this module has the image, the accelerator
 * probe, the seed disk and a QMP client. See README.md, "VM hosts".
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CEPH_IMAGE } from './ceph.js';
import type { ImageOptions } from './image.js';
import { exists, run, tail, which } from './sys.js';
import { SEED_LABEL } from './vm-image.js';

/** Packages the VM image adds to the Ceph image: a kernel, its initramfs, LVM and dm-crypt. */
export const VM_PACKAGES: readonly string[] = ['linux-image-amd64', 'initramfs-tools', 'lvm2', 'cryptsetup', 'kmod'];

/** `ensureImage` options of the VM image: the Ceph image plus {@link VM_PACKAGES}, bootable by QEMU. */
export const VM_IMAGE: ImageOptions = { name: 'vm', from: CEPH_IMAGE, extraPackages: VM_PACKAGES, vm: true };

/** The tools VM hosts need on the machine, and the Debian packages that have them. */
const VM_TOOLS: Record<string, string> = {
  'qemu-system-x86_64': 'qemu-system-x86',
  'qemu-img': 'qemu-utils',
  'mkfs.vfat': 'dosfstools',
  mcopy: 'mtools',
  mmd: 'mtools',
  'mkfs.ext4': 'e2fsprogs',
  ip: 'iproute2',
  ssh: 'openssh-client',
  'ssh-keygen': 'openssh-client',
};

/** What is missing on this machine to run VM hosts (empty when nothing is). */
export async function checkVmRequirements(): Promise<string[]> {
  const missing: string[] = [];
  if (process.platform !== 'linux') missing.push('Linux');
  if (process.getuid?.() !== 0) missing.push('root (VM hosts need tap devices on the lab bridge)');
  for (const [tool, pkg] of Object.entries(VM_TOOLS)) if (!(await which(tool))) missing.push(`${tool} (apt-get install -y ${pkg})`);
  if (!(await exists('/dev/net/tun'))) missing.push('/dev/net/tun (tap devices)');
  return missing;
}

/** The tap device of VM slot N on the lab bridge. */
export function tapName(slot: number): string {
  return `tcarlab${slot}`;
}

/** The NIC's MAC address of VM slot N (locally administered, QEMU's prefix; the guest's network config matches it). */
export function vmMac(slot: number): string {
  return `52:54:00:77:${((slot >> 8) & 0xff).toString(16).padStart(2, '0')}:${(slot & 0xff).toString(16).padStart(2, '0')}`;
}

// ---------------------------------------------------------------------------------------------
// Accelerator

export type VmAccel = 'kvm' | 'tcg';

export interface AccelChoice {
  accel: VmAccel;
  /** Why, in one line (what the probe saw). */
  reason: string;
}

const ACCEL_PROBE_TIMEOUT_MS = 20_000;
let accelMemo: Promise<AccelChoice> | undefined;

/**
 * KVM when a guest really boots under it, TCG otherwise. The probe boots the VM image's kernel
 * under KVM with no root file system (`-no-reboot`, `panic=-1`): a working KVM reaches the
 * kernel's "VFS" / panic lines within a few seconds; on this kind of machine guests under KVM
 * hang after the firmware, and the probe gives up after {@link ACCEL_PROBE_TIMEOUT_MS}. The
 * answer is kept in /run/carapace-lab (for this machine's boot) so each test process does not
 * probe again. `CARAPACE_LAB_ACCEL=kvm|tcg` decides without probing.
 */
export function chooseAccel(kernel: string, runDir: string, log: (line: string) => void): Promise<AccelChoice> {
  accelMemo ??= (async () => {
    const forced = process.env.CARAPACE_LAB_ACCEL;
    if (forced === 'kvm' || forced === 'tcg') return { accel: forced, reason: 'CARAPACE_LAB_ACCEL' };
    const cacheFile = join(runDir, 'vm-accel.json');
    const machineKernel = (await readFile('/proc/sys/kernel/osrelease', 'utf8')).trim();
    const qemu = (await run('qemu-system-x86_64', ['--version'], { check: false })).stdout.split('\n')[0] ?? '';
    try {
      const cached = JSON.parse(await readFile(cacheFile, 'utf8')) as AccelChoice & { machineKernel: string; qemu: string; kernel: string };
      if (cached.machineKernel === machineKernel && cached.qemu === qemu && cached.kernel === kernel) return { accel: cached.accel, reason: `${cached.reason} (probed earlier)` };
    } catch {
      // not probed yet
    }
    const choice = await probeKvm(kernel);
    await mkdir(runDir, { recursive: true });
    await writeFile(cacheFile, `${JSON.stringify({ ...choice, machineKernel, qemu, kernel })}\n`);
    log(`VM accelerator: ${choice.accel} (${choice.reason})`);
    return choice;
  })();
  accelMemo.catch(() => {
    accelMemo = undefined;
  });
  return accelMemo;
}

async function probeKvm(kernel: string): Promise<AccelChoice> {
  if (!(await exists('/dev/kvm'))) return { accel: 'tcg', reason: 'no /dev/kvm' };
  const dir = await mkdtemp(join(tmpdir(), 'carlab-kvm-probe-'));
  const consoleFile = join(dir, 'console.log');
  const started = Date.now();
  try {
    const r = await run(
      'qemu-system-x86_64',
      [
        '-accel', 'kvm', '-cpu', 'host', '-m', '256', '-smp', '1', '-nodefaults', '-display', 'none', '-no-reboot',
        '-chardev', `file,id=con,path=${consoleFile}`, '-serial', 'chardev:con',
        '-kernel', kernel, '-append', 'console=ttyS0 panic=-1 root=/dev/carlab-kvm-probe-none',
      ],
      { check: false, timeoutMs: ACCEL_PROBE_TIMEOUT_MS, detached: true },
    );
    const out = await readFile(consoleFile, 'utf8').catch(() => '');
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (/VFS: Unable to mount root|Kernel panic/.test(out)) return { accel: 'kvm', reason: `a guest kernel booted under KVM in ${seconds}s` };
    const why = r.exitCode === null ? `no kernel output within ${ACCEL_PROBE_TIMEOUT_MS / 1000}s` : `qemu exited ${String(r.exitCode)}: ${tail(r.stderr, 2).replace(/\n/g, ' ')}`;
    return { accel: 'tcg', reason: `KVM probe failed (${why})` };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Seed disk

/**
 * Makes `path` a small vfat disk labelled CIDATA holding `files` (relative paths, one directory
 * level at most): cloud-init's NoCloud seed and the lab's identity files. No mount (mtools).
 */
export async function makeSeedDisk(path: string, files: Record<string, string>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'carlab-seed-'));
  try {
    await rm(path, { force: true });
    await run('mkfs.vfat', ['-n', SEED_LABEL, '-C', path, '4096']);
    const dirs = new Set<string>();
    for (const name of Object.keys(files)) {
      const i = name.indexOf('/');
      if (i > 0) dirs.add(name.slice(0, i));
    }
    for (const d of dirs) await run('mmd', ['-i', path, `::/${d}`]);
    for (const [name, content] of Object.entries(files)) {
      const local = join(dir, name.replace(/\//g, '__'));
      await writeFile(local, content);
      await run('mcopy', ['-o', '-i', path, local, `::/${name}`]);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// QMP

/** Runs one QMP command on the QEMU monitor socket `socketPath` and returns its `return` value. */
export function qmp(socketPath: string, execute: string, args?: Record<string, unknown>, timeoutMs = 10_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(socketPath);
    let buf = '';
    let stage: 'greeting' | 'caps' | 'command' = 'greeting';
    const timer = setTimeout(() => finish(new Error(`QMP ${execute}: no answer within ${timeoutMs} ms`)), timeoutMs);
    const finish = (err: Error | undefined, value?: unknown): void => {
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    socket.setEncoding('utf8');
    socket.on('error', (e) => finish(new Error(`QMP ${execute}: ${e.message}`)));
    socket.on('data', (d: string) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const msg = JSON.parse(line) as { QMP?: unknown; return?: unknown; error?: { class: string; desc: string }; event?: string };
        if (msg.event !== undefined) continue;
        if (stage === 'greeting' && msg.QMP !== undefined) {
          stage = 'caps';
          socket.write(`${JSON.stringify({ execute: 'qmp_capabilities' })}\n`);
        } else if (msg.error) {
          finish(new Error(`QMP ${stage === 'caps' ? 'qmp_capabilities' : execute}: ${msg.error.class}: ${msg.error.desc}`));
        } else if (stage === 'caps') {
          stage = 'command';
          socket.write(`${JSON.stringify({ execute, ...(args ? { arguments: args } : {}) })}\n`);
        } else if (stage === 'command') {
          finish(undefined, msg.return);
        }
      }
    });
  });
}
