/**
 * The lab: real Debian hosts, booted with systemd-nspawn in network namespaces of this machine,
 * on the bridge `carlab0` (10.77.0.1/24), reachable by SSH. See README.md.
 *
 * Resources, all named after the host's slot N (1…MAX_SLOTS), allocated under a machine-wide
 * lock so concurrent test processes can each have labs:
 * - slot lock  `/run/carapace-lab/slots/N/owner.json` (owning pid; the nspawn pid)
 * - netns `carlabN` (eth0 = 10.77.0.(10+N)/24), veth `vcarlabN` on the bridge
 * - host dir `/var/lib/carapace-lab/hosts/carlabN/` (overlay upper/work, `root/`, console log, disks)
 * - cgroups `carapace-lab/carlabN` in the machine's cgroup hierarchies
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createConnection } from 'node:net';
import { chmod, mkdir, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { NO_DNS_RESOLV_CONF, defaultLog, ensureImage } from './image.js';
import { SEED_IDENTITY_DIR } from './vm-image.js';
import { VM_IMAGE, checkVmRequirements, chooseAccel, makeSeedDisk, qmp, tapName, vmMac } from './vm.js';
import type { AccelChoice } from './vm.js';
import type { ImageOptions, LabImage } from './image.js';
import {
  CGROUP_WRAPPER,
  acquireFileLock,
  cgroupPids,
  cgroupRoots,
  childrenOf,
  exists,
  isPidNamespaceInit,
  killCgroups,
  listMounts,
  listProcesses,
  processAlive,
  processStartTime,
  removeCgroupTree,
  removeTree,
  run,
  shellQuote,
  signalProcess,
  sleep,
  tail,
  unmountUnder,
  waitForExit,
  which,
  withFileLock,
  writeFileAtomic,
} from './sys.js';
import type { RunResult } from './sys.js';

export { ensureImage, BASE_PACKAGES, LAB_CACHE_DIR } from './image.js';
export type { ImageOptions, ImageSpec, LabImage } from './image.js';
export { CommandError } from './sys.js';

/** The lab network. */
export const LAB_BRIDGE = 'carlab0';
export const LAB_GATEWAY = '10.77.0.1';
export const LAB_PREFIX_LENGTH = 24;
/** Host slots 1…MAX_SLOTS get addresses 10.77.0.11…10.77.0.(10+MAX_SLOTS). */
export const MAX_SLOTS = 200;
/** Per-host state (overlays, copies, disks). */
export const LAB_STATE_DIR = process.env.CARAPACE_LAB_STATE ?? '/var/lib/carapace-lab';
/** Locks and slot ownership. */
export const LAB_RUN_DIR = process.env.CARAPACE_LAB_RUN ?? '/run/carapace-lab';

const SLOTS_DIR = join(LAB_RUN_DIR, 'slots');
const HOSTS_DIR = join(LAB_STATE_DIR, 'hosts');
const GLOBAL_LOCK = join(LAB_RUN_DIR, 'global.lock');
const GLOBAL_LOCK_TIMEOUT_MS = 5 * 60_000;
const DEBUG = process.env.CARAPACE_LAB_DEBUG === '1';
const debugStart = Date.now();
function debug(line: string): void {
  if (DEBUG) process.stderr.write(`[carapace-lab +${Date.now() - debugStart}ms] ${line}\n`);
}
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
const CONTAINER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The machine's DMI product UUID. nspawn shows the machine's /sys to every host, so on a machine
 * that has one every host would report the same hardware id (and register as one server): each
 * host gets a UUID of its own, bound over this file. Without it (a container), hosts have no
 * DMI and the discovery script uses their own /etc/machine-id.
 */
export const DMI_PRODUCT_UUID = '/sys/class/dmi/id/product_uuid';

/** The tools the lab runs, and the Debian packages that have them. */
const REQUIRED_TOOLS: Record<string, string> = {
  'systemd-nspawn': 'systemd-container',
  ip: 'iproute2',
  nsenter: 'util-linux',
  flock: 'util-linux',
  losetup: 'mount',
  'ssh-keygen': 'openssh-client',
  ssh: 'openssh-client',
};

export function machineName(slot: number): string {
  return `carlab${slot}`;
}
export function slotAddress(slot: number): string {
  return `10.77.0.${10 + slot}`;
}
function vethName(slot: number): string {
  return `vcarlab${slot}`;
}
/** The slot of a netns / link / directory / cgroup name `carlabN` or `vcarlabN` (not the bridge `carlab0`). */
function slotOfMachine(name: string): number | undefined {
  const m = /^[vt]?carlab([1-9]\d*)$/.exec(name);
  const slot = m?.[1] === undefined ? undefined : Number(m[1]);
  return slot !== undefined && slot <= MAX_SLOTS ? slot : undefined;
}

// ---------------------------------------------------------------------------------------------
// Public types

/** A cloud-init NoCloud seed, written to `/var/lib/cloud/seed/nocloud/` before first boot. */
export interface CloudInitSeed {
  /** `user-data`, e.g. a `#cloud-config` document. */
  userData: string;
  /**
   * `meta-data`, as text or as flat keys. Default: `instance-id` (unique) and `local-hostname`
   * (the host's hostname); given keys override these.
   */
  metaData?: string | Record<string, string>;
  vendorData?: string;
  /** `network-config` (the image disables cloud-init networking unless this is given with a config of its own). */
  networkConfig?: string;
}

/** Per-host settings. */
export interface HostSpec {
  /** Default: the machine name `carlabN`, unique on this machine. */
  hostname?: string;
  /** Boot with cloud-init and this NoCloud seed instead of writing the SSH key for root. */
  seed?: CloudInitSeed;
  /** Sizes in bytes of extra disks, given to the host as /dev/vdb, /dev/vdc, … */
  disks?: readonly number[];
  /** A container (default, or `createLab({ vm: true })` for all hosts) or a virtual machine with its own kernel. */
  kind?: HostKind;
}

/** Lab hosts are systemd-nspawn containers on this machine's kernel, or QEMU virtual machines with a Debian kernel of their own. */
export type HostKind = 'container' | 'vm';

/** Settings of the VM hosts of a lab. */
export interface VmOptions {
  /** Guest memory in MiB (default 1536). */
  memoryMiB?: number;
  /** vCPUs (default 1: the machine's cores are shared with other tests). */
  cpus?: number;
  /** Bound on each VM's boot until sshd answers (default 600 s: sized for TCG). */
  bootTimeoutMs?: number;
  /** The VM image (default {@link VM_IMAGE}: the Ceph image with a kernel, LVM and cryptsetup). */
  image?: ImageOptions;
}

export interface KeyPair {
  privateKeyPath: string;
  publicKeyPath: string;
  /** The public key line. */
  publicKey: string;
}

export interface CreateLabOptions {
  /** Number of hosts, or one spec per host. */
  hosts: number | readonly HostSpec[];
  /** A label for logs and ownership records. */
  name?: string;
  /** Installed as root's authorized key on hosts without a seed. */
  sshPublicKey?: string;
  /** A key pair: its public key is installed like `sshPublicKey`, and `lab.ssh()` uses its private key. */
  sshKey?: KeyPair;
  /** Cloud-init seeds by host index (an array with holes, or a record). */
  seeds?: readonly (CloudInitSeed | undefined)[] | Readonly<Record<number, CloudInitSeed>>;
  /** The image to boot (default: the base image). */
  image?: ImageOptions;
  /** Make every host a virtual machine (`true`, or its settings); per host: `HostSpec.kind`. */
  vm?: boolean | VmOptions;
  /** How each host gets its root file system: an overlay on the image, a copy, or overlay falling back to a copy (default). */
  rootfs?: 'auto' | 'overlay' | 'copy';
  /** Bound on each host's boot until sshd answers (default 120 s). */
  bootTimeoutMs?: number;
  /**
   * DNS server for the hosts' /etc/resolv.conf, e.g. one a test runs on 10.77.0.1. Default:
   * none (lookups of names not in /etc/hosts fail at once).
   */
  nameserver?: string;
  /** Extra systemd-nspawn arguments for every host. */
  nspawnArgs?: readonly string[];
  /**
   * Keep the hosts when this process ends (for the CLI): sweepStale() leaves them alone and
   * only `sweepStale({ persistent: true })` or destroy() removes them.
   */
  persistent?: boolean;
  log?: (line: string) => void;
}

export interface ExecOptions {
  input?: string;
  /** Default 120 s. */
  timeoutMs?: number;
  /** Throw when the command exits non-zero (default true). */
  check?: boolean;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export interface LabDisk {
  /** Device path inside the host. */
  device: string;
  /** Loop device on the machine. */
  loop: string;
  /** Backing file on the machine. */
  file: string;
  sizeBytes: number;
}

/** Ownership record of a slot. */
interface SlotOwner {
  pid: number;
  pidStart: string | undefined;
  lab: string;
  persistent: boolean;
  createdAt: string;
  hostname: string;
  ip: string;
  nspawnPid?: number;
  nspawnStart?: string;
  rootfsMode?: 'overlay' | 'copy' | 'vm';
  disks?: LabDisk[];
  kind?: HostKind;
  /** VM hosts: the QEMU process. */
  vmPid?: number;
  vmStart?: string;
}

// ---------------------------------------------------------------------------------------------
// Requirements, keys, SSH

/** What is missing on this machine to run a lab (empty when nothing is). */
export async function checkRequirements(): Promise<string[]> {
  const missing: string[] = [];
  if (process.platform !== 'linux') missing.push('Linux');
  if (process.getuid?.() !== 0) missing.push('root (the lab creates namespaces, mounts and containers)');
  for (const [tool, pkg] of Object.entries(REQUIRED_TOOLS))
    if (!(await which(tool))) missing.push(`${tool} (apt-get install -y ${pkg})`);
  return missing;
}

async function assertRequirements(): Promise<void> {
  const missing = await checkRequirements();
  if (missing.length) throw new Error(`the lab cannot run on this machine; missing: ${missing.join('; ')}`);
}

/** Generates (or reuses) an ed25519 key pair `dir/NAME` with no passphrase. */
export async function generateKeyPair(dir: string, name = 'id_ed25519'): Promise<KeyPair> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const privateKeyPath = join(dir, name);
  const publicKeyPath = `${privateKeyPath}.pub`;
  if (!(await exists(privateKeyPath)) || !(await exists(publicKeyPath))) {
    await rm(privateKeyPath, { force: true });
    await rm(publicKeyPath, { force: true });
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'carapace-lab', '-f', privateKeyPath]);
  }
  await chmod(privateKeyPath, 0o600);
  return { privateKeyPath, publicKeyPath, publicKey: (await readFile(publicKeyPath, 'utf8')).trim() };
}

/** ssh options for lab hosts: key only, no prompts, no host key checks. */
export function sshOptions(privateKeyPath: string): string[] {
  return [
    '-i',
    privateKeyPath,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'LogLevel=ERROR',
    '-o',
    'ConnectTimeout=10',
  ];
}

export interface SshOptions {
  user?: string;
  privateKeyPath: string;
  timeoutMs?: number;
  check?: boolean;
  input?: string;
}

/** Runs `command` on `host` over real SSH. */
export async function sshExec(host: { ip: string }, command: string, opts: SshOptions): Promise<RunResult> {
  return run('ssh', [...sshOptions(opts.privateKeyPath), `${opts.user ?? 'root'}@${host.ip}`, command], {
    timeoutMs: opts.timeoutMs ?? 60_000,
    check: opts.check ?? true,
    input: opts.input,
  });
}

/** Whether something accepts TCP connections on ip:port and (for SSH) sends `banner` first. */
async function probeTcp(ip: string, port: number, banner: string | undefined, timeoutMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: ip, port });
    let got = '';
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      if (banner === undefined) done(true);
    });
    socket.on('data', (d: string) => {
      got += d;
      if (banner !== undefined && got.includes(banner)) done(true);
    });
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}

// ---------------------------------------------------------------------------------------------
// Network

/**
 * Creates the lab bridge `carlab0` with 10.77.0.1/24 if needed (idempotent), under the lab's
 * machine-wide lock: two test files starting at once (the suite's two lanes) once raced here,
 * and the second `ip addr add` failed with "Address already assigned".
 */
export async function ensureBridge(): Promise<void> {
  await withFileLock(GLOBAL_LOCK, GLOBAL_LOCK_TIMEOUT_MS, 'lab bridge', ensureBridgeLocked);
}

/** {@link ensureBridge} for a caller that holds the lab's lock already. */
async function ensureBridgeLocked(): Promise<void> {
  const show = await run('ip', ['-j', 'addr', 'show', 'dev', LAB_BRIDGE], { check: false });
  if (show.exitCode !== 0) {
    const add = await run('ip', ['link', 'add', LAB_BRIDGE, 'type', 'bridge'], { check: false });
    if (add.exitCode !== 0 && !add.stderr.includes('File exists')) throw new Error(`cannot create bridge ${LAB_BRIDGE}: ${add.stderr}`);
  }
  const info = JSON.parse((await run('ip', ['-j', 'addr', 'show', 'dev', LAB_BRIDGE])).stdout) as {
    addr_info?: { local?: string; prefixlen?: number }[];
  }[];
  const has = info[0]?.addr_info?.some((a) => a.local === LAB_GATEWAY && a.prefixlen === LAB_PREFIX_LENGTH) ?? false;
  if (!has) {
    const r = await run('ip', ['addr', 'add', `${LAB_GATEWAY}/${LAB_PREFIX_LENGTH}`, 'dev', LAB_BRIDGE], { check: false });
    if (r.exitCode !== 0 && !/exists|already assigned/.test(r.stderr)) throw new Error(`cannot address bridge ${LAB_BRIDGE}: ${r.stderr}`);
  }
  await run('ip', ['link', 'set', LAB_BRIDGE, 'up']);
}

async function listNetns(): Promise<string[]> {
  try {
    return await readdir('/run/netns');
  } catch {
    return [];
  }
}

async function listLinks(): Promise<string[]> {
  const r = await run('ip', ['-j', 'link', 'show'], { check: false });
  if (r.exitCode !== 0) return [];
  return (JSON.parse(r.stdout) as { ifname: string }[]).map((l) => l.ifname);
}

async function setupNetwork(slot: number): Promise<void> {
  const ns = machineName(slot);
  const veth = vethName(slot);
  if ((await listNetns()).includes(ns)) await run('ip', ['netns', 'del', ns], { check: false });
  await run('ip', ['link', 'del', veth], { check: false });
  await run('ip', ['netns', 'add', ns]);
  await run('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
  await run('ip', ['link', 'set', veth, 'master', LAB_BRIDGE]);
  await run('ip', ['link', 'set', veth, 'up']);
  await run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  await run('ip', ['-n', ns, 'addr', 'add', `${slotAddress(slot)}/${LAB_PREFIX_LENGTH}`, 'dev', 'eth0']);
  await run('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
  await run('ip', ['-n', ns, 'route', 'add', 'default', 'via', LAB_GATEWAY]);
}

// ---------------------------------------------------------------------------------------------
// Slots

function slotDir(slot: number): string {
  return join(SLOTS_DIR, String(slot));
}
function hostDir(slot: number): string {
  return join(HOSTS_DIR, machineName(slot));
}
async function cgroupDirs(slot: number): Promise<string[]> {
  return (await cgroupRoots()).map((r) => join(r, 'carapace-lab', machineName(slot)));
}

async function readOwner(slot: number): Promise<SlotOwner | undefined> {
  try {
    return JSON.parse(await readFile(join(slotDir(slot), 'owner.json'), 'utf8')) as SlotOwner;
  } catch {
    return undefined;
  }
}

async function writeOwner(slot: number, owner: SlotOwner): Promise<void> {
  await writeFileAtomic(join(slotDir(slot), 'owner.json'), `${JSON.stringify(owner, null, 2)}\n`);
}

async function listSlots(): Promise<number[]> {
  try {
    return (await readdir(SLOTS_DIR)).filter((e) => /^\d+$/.test(e)).map(Number);
  } catch {
    return [];
  }
}

/** Whether the slot's owner still holds it. */
async function slotLive(owner: SlotOwner | undefined, opts: SweepOptions): Promise<boolean> {
  if (!owner) return false;
  if (opts.all) return false;
  if (owner.persistent) return !opts.persistent;
  return processAlive(owner.pid, owner.pidStart);
}

/** Stops a container by its nspawn pid: SIGTERM (a clean shutdown), then SIGKILL to everything in its cgroups. */
async function stopContainer(slot: number, pid: number | undefined, pidStart: string | undefined, graceMs: number): Promise<void> {
  const dirs = await cgroupDirs(slot);
  if (pid !== undefined && (await processAlive(pid, pidStart))) {
    signalProcess(pid, 'SIGTERM');
    if (!(await waitForExit(pid, pidStart, graceMs))) signalProcess(pid, 'SIGKILL');
  }
  await killCgroups(dirs);
  if (pid !== undefined) await waitForExit(pid, pidStart, 10_000);
  for (const d of dirs) await removeCgroupTree(d);
  await rm(`/run/systemd/nspawn/propagate/${machineName(slot)}`, { recursive: true, force: true });
}

/** Removes everything of slot `slot`: container processes, netns, veth, loop devices, mounts, files, lock. */
async function cleanupSlot(slot: number, owner: SlotOwner | undefined, graceMs: number): Promise<void> {
  const name = machineName(slot);
  // nspawn processes for this machine that we have no record of (e.g. a crash before the record was written)
  const strays = (await listProcesses())
    .filter((p) => (p.argv[0] ?? '').endsWith('systemd-nspawn') && p.argv.includes('-M') && p.argv[p.argv.indexOf('-M') + 1] === name)
    .map((p) => p.pid);
  for (const p of strays) if (p !== owner?.nspawnPid) signalProcess(p, 'SIGKILL');
  await stopContainer(slot, owner?.nspawnPid, owner?.nspawnStart, graceMs);
  if (owner?.vmPid !== undefined && (await processAlive(owner.vmPid, owner.vmStart))) {
    signalProcess(owner.vmPid, 'SIGTERM');
    if (!(await waitForExit(owner.vmPid, owner.vmStart, Math.min(graceMs, 5_000)))) signalProcess(owner.vmPid, 'SIGKILL');
    await waitForExit(owner.vmPid, owner.vmStart, 10_000);
  }
  for (const p of await listProcesses()) {
    if (!isQemuOf(p.argv, name)) continue;
    signalProcess(p.pid, 'SIGKILL');
    await waitForExit(p.pid, undefined, 10_000);
  }
  if ((await listLinks()).includes(tapName(slot))) await run('ip', ['link', 'del', tapName(slot)], { check: false });
  if ((await listNetns()).includes(name)) {
    const pids = await run('ip', ['netns', 'pids', name], { check: false });
    for (const p of pids.stdout.split('\n')) if (p.trim()) signalProcess(Number(p), 'SIGKILL');
    await run('ip', ['netns', 'del', name], { check: false });
  }
  if ((await listLinks()).includes(vethName(slot))) await run('ip', ['link', 'del', vethName(slot)], { check: false });
  const dir = hostDir(slot);
  const loops = await run('losetup', ['-J', '-l'], { check: false });
  if (loops.exitCode === 0 && loops.stdout.trim()) {
    const devices = (JSON.parse(loops.stdout) as { loopdevices?: { name: string; 'back-file'?: string }[] }).loopdevices ?? [];
    for (const d of devices)
      if ((d['back-file'] ?? '').startsWith(`${dir}/`)) await run('losetup', ['-d', d.name], { check: false });
  }
  await removeTree(dir);
  await rm(slotDir(slot), { recursive: true, force: true });
}

export interface SweepOptions {
  /** Also remove labs of the CLI (`persistent`), e.g. for `cli down`. */
  persistent?: boolean;
  /** Remove every lab resource, even of live owners (dangerous: kills other processes' labs). */
  all?: boolean;
  /** Remove the bridge if no lab is left. */
  removeBridge?: boolean;
  log?: (line: string) => void;
}

/**
 * Removes what earlier runs left behind: slots whose owning process is dead (with their
 * containers, netns, veths, overlays, loop devices, cgroups), and carlab* netns, links, host
 * dirs, cgroups and nspawn processes that belong to no live slot. Returns the machine names cleaned.
 */
export async function sweepStale(opts: SweepOptions = {}): Promise<string[]> {
  return withFileLock(GLOBAL_LOCK, GLOBAL_LOCK_TIMEOUT_MS, 'lab allocation', () => sweepLocked(opts));
}

async function sweepLocked(opts: SweepOptions): Promise<string[]> {
  const log = opts.log ?? defaultLog;
  const candidates = new Set<number>(await listSlots());
  for (const n of await listNetns()) {
    const s = slotOfMachine(n);
    if (s !== undefined) candidates.add(s);
  }
  for (const l of await listLinks()) {
    const s = slotOfMachine(l);
    if (s !== undefined) candidates.add(s);
  }
  try {
    for (const h of await readdir(HOSTS_DIR)) {
      const s = slotOfMachine(h);
      if (s !== undefined) candidates.add(s);
    }
  } catch {
    // no host dirs
  }
  for (const root of await cgroupRoots()) {
    try {
      for (const c of await readdir(join(root, 'carapace-lab'))) {
        const s = slotOfMachine(c);
        if (s !== undefined) candidates.add(s);
      }
    } catch {
      // none
    }
  }
  for (const p of await listProcesses()) {
    const q = qemuMachine(p.argv);
    const sq = q === undefined ? undefined : slotOfMachine(q);
    if (sq !== undefined) candidates.add(sq);
    if (!(p.argv[0] ?? '').endsWith('systemd-nspawn')) continue;
    const i = p.argv.indexOf('-M');
    const s = i >= 0 ? slotOfMachine(p.argv[i + 1] ?? '') : undefined;
    if (s !== undefined) candidates.add(s);
  }
  const cleaned: string[] = [];
  for (const slot of [...candidates].sort((a, b) => a - b)) {
    const owner = await readOwner(slot);
    if (await slotLive(owner, opts)) continue;
    log(`sweeping ${machineName(slot)}${owner ? ` (lab ${owner.lab}, pid ${owner.pid})` : ''}`);
    await cleanupSlot(slot, owner, 5_000);
    cleaned.push(machineName(slot));
  }
  if (opts.removeBridge && (await listSlots()).length === 0 && (await listLinks()).includes(LAB_BRIDGE))
    await run('ip', ['link', 'del', LAB_BRIDGE], { check: false });
  return cleaned;
}

// ---------------------------------------------------------------------------------------------
// Hosts

interface HostSetup {
  kind: HostKind;
  slot: number;
  hostname: string;
  seed: CloudInitSeed | undefined;
  labName: string;
  persistent: boolean;
  image: LabImage;
  nspawnArgs: readonly string[];
  bootTimeoutMs: number;
  nameserver: string | undefined;
  log: (line: string) => void;
  /** VM hosts only. */
  vm?: VmSetup;
}

interface VmSetup {
  accel: AccelChoice;
  memoryMiB: number;
  cpus: number;
  /** The lab's management key: `exec` logs in as root with it. */
  managementKey: KeyPair;
}

/** One booted (or stopped) lab host. */
export class LabHost {
  /** Slot number N. */
  readonly slot: number;
  /** Machine name `carlabN` (netns, nspawn machine). */
  readonly machine: string;
  /** Hostname (also its /etc/hosts name in the lab). */
  readonly name: string;
  readonly ip: string;
  /** Host directory on the machine. */
  readonly dir: string;
  /** The host's root file system on the machine. */
  readonly root: string;
  readonly consoleLog: string;
  readonly disks: LabDisk[] = [];
  private nspawn: ChildProcess | undefined;
  private nspawnStart: string | undefined;
  private leader: number | undefined;
  private stopping = false;
  private exitWaiters: (() => void)[] = [];
  private restartWaiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  protected rootfsMode: 'overlay' | 'copy' | 'vm' = 'overlay';
  /** A container on this machine's kernel, or a virtual machine (see {@link VmHost}). */
  readonly kind: HostKind;

  /** @internal */
  constructor(protected readonly setup: HostSetup) {
    this.kind = setup.kind;
    this.slot = setup.slot;
    this.machine = machineName(setup.slot);
    this.name = setup.hostname;
    this.ip = slotAddress(setup.slot);
    this.dir = hostDir(setup.slot);
    // A VM's root file system is a qcow2 overlay of the image's disk, not a directory.
    this.root = setup.kind === 'vm' ? join(this.dir, 'root.qcow2') : join(this.dir, 'root');
    this.consoleLog = join(this.dir, 'console.log');
  }

  /** The nspawn process's pid while the host runs. */
  get pid(): number | undefined {
    return this.nspawn?.pid;
  }
  /** The container's init (PID 1 inside) as seen from the machine. */
  get initPid(): number | undefined {
    return this.leader;
  }
  get running(): boolean {
    return this.nspawn !== undefined;
  }
  get mode(): 'overlay' | 'copy' | 'vm' {
    return this.rootfsMode;
  }

  /** @internal Creates the host's root file system, files and network. */
  async provision(mode: 'auto' | 'overlay' | 'copy', allHosts: readonly { name: string; ip: string }[], sshPublicKey: string | undefined): Promise<void> {
    await removeTree(this.dir);
    await mkdir(this.dir, { recursive: true });
    const lower = this.setup.image.rootfs;
    let overlayError: string | undefined;
    if (mode !== 'copy') {
      for (const d of ['upper', 'work', 'root']) await mkdir(join(this.dir, d));
      const r = await run(
        'mount',
        ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${join(this.dir, 'upper')},workdir=${join(this.dir, 'work')}`, this.root],
        { check: false },
      );
      if (r.exitCode === 0) this.rootfsMode = 'overlay';
      else if (mode === 'overlay') throw new Error(`overlay mount for ${this.machine} failed: ${r.stderr.trim()}`);
      else {
        overlayError = r.stderr.trim();
        await removeTree(this.dir);
        await mkdir(this.dir, { recursive: true });
      }
    }
    if (mode === 'copy' || overlayError !== undefined) {
      if (overlayError !== undefined) this.setup.log(`overlayfs unavailable (${overlayError}); copying the image for ${this.machine}`);
      await run('cp', ['-a', '--reflink=auto', lower, this.root]);
      this.rootfsMode = 'copy';
    }
    debug(`${this.machine}: root file system (${this.rootfsMode}) ready`);
    await this.writeIdentity(allHosts, sshPublicKey);
    debug(`${this.machine}: identity written`);
    await setupNetwork(this.slot);
    debug(`${this.machine}: network ready`);
    await this.recordOwner();
  }

  protected async writeIdentity(allHosts: readonly { name: string; ip: string }[], sshPublicKey: string | undefined): Promise<void> {
    const etc = join(this.root, 'etc');
    await writeFile(join(etc, 'hostname'), `${this.name}\n`);
    await writeFile(
      join(etc, 'hosts'),
      [
        '127.0.0.1\tlocalhost',
        '::1\t\tlocalhost ip6-localhost ip6-loopback',
        'ff02::1\t\tip6-allnodes',
        'ff02::2\t\tip6-allrouters',
        '',
        '# carapace lab',
        `${LAB_GATEWAY}\tcarlab-gateway`,
        ...allHosts.map((h) => `${h.ip}\t${h.name}`),
        '',
      ].join('\n'),
    );
    await writeFile(join(etc, 'machine-id'), `${randomBytes(16).toString('hex')}\n`);
    await writeFile(join(this.dir, 'product_uuid'), `${randomUUID()}\n`);
    await rm(join(etc, 'resolv.conf'), { force: true });
    await writeFile(
      join(etc, 'resolv.conf'),
      this.setup.nameserver === undefined ? NO_DNS_RESOLV_CONF : `# carapace lab\nnameserver ${this.setup.nameserver}\n`,
    );
    // SSH host keys of its own (the image has none; sshd is configured for these two types).
    await Promise.all(
      ['ed25519', 'ecdsa'].map((t) =>
        run('ssh-keygen', ['-q', '-t', t, '-N', '', '-C', `root@${this.name}`, '-f', join(etc, `ssh/ssh_host_${t}_key`)]),
      ),
    );
    const seed = this.setup.seed;
    if (seed) {
      const nocloud = join(this.root, 'var/lib/cloud/seed/nocloud');
      await mkdir(nocloud, { recursive: true });
      await writeFile(join(nocloud, 'user-data'), seed.userData);
      await writeFile(join(nocloud, 'meta-data'), this.metaData(seed));
      if (seed.vendorData !== undefined) await writeFile(join(nocloud, 'vendor-data'), seed.vendorData);
      if (seed.networkConfig !== undefined) await writeFile(join(nocloud, 'network-config'), seed.networkConfig);
      // A first boot for cloud-init.
      for (const d of ['instance', 'instances', 'data', 'sem'])
        await rm(join(this.root, 'var/lib/cloud', d), { recursive: true, force: true });
      await rm(join(etc, 'cloud/cloud-init.disabled'), { force: true });
    } else {
      // No seed: cloud-init stays out of the boot entirely.
      await writeFile(join(etc, 'cloud/cloud-init.disabled'), 'carapace lab: no NoCloud seed\n');
      if (sshPublicKey !== undefined) {
        const ssh = join(this.root, 'root/.ssh');
        await mkdir(ssh, { recursive: true, mode: 0o700 });
        await chmod(ssh, 0o700);
        await writeFile(join(ssh, 'authorized_keys'), `${sshPublicKey.trim()}\n`, { mode: 0o600 });
      }
    }
  }

  protected metaData(seed: CloudInitSeed): string {
    if (typeof seed.metaData === 'string') return seed.metaData;
    const md: Record<string, string> = {
      'instance-id': `${this.machine}-${randomBytes(4).toString('hex')}`,
      'local-hostname': this.name,
      ...seed.metaData,
    };
    return Object.entries(md)
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}\n`)
      .join('');
  }

  /** @internal The process fields of the slot's owner record. */
  protected processRecord(): Partial<SlotOwner> {
    return { nspawnPid: this.nspawn?.pid, nspawnStart: this.nspawnStart };
  }

  protected async recordOwner(): Promise<void> {
    const previous = await readOwner(this.slot);
    await writeOwner(this.slot, {
      pid: process.pid,
      pidStart: await processStartTime(process.pid),
      lab: this.setup.labName,
      persistent: this.setup.persistent,
      createdAt: previous?.createdAt ?? new Date().toISOString(),
      hostname: this.name,
      ip: this.ip,
      ...this.processRecord(),
      rootfsMode: this.rootfsMode,
      disks: this.disks,
      kind: this.kind,
    });
  }

  /** Boots the host (keeping its root file system) and waits until sshd answers. */
  async start(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.nspawn) throw new Error(`${this.machine} is already running`);
    const timeoutMs = opts.timeoutMs ?? this.setup.bootTimeoutMs;
    const dirs = await cgroupDirs(this.slot);
    for (const d of dirs) {
      await removeCgroupTree(d);
      await mkdir(d, { recursive: true });
    }
    await rm(`/run/systemd/nspawn/propagate/${this.machine}`, { recursive: true, force: true });
    const console = await open(this.consoleLog, 'a');
    await console.write(`\n--- carapace-lab: booting ${this.machine} (${this.name}) at ${new Date().toISOString()} ---\n`);
    const args = [
      '-D',
      this.root,
      '--boot',
      `--network-namespace-path=/run/netns/${this.machine}`,
      '--register=no',
      '--keep-unit',
      '-M',
      this.machine,
      '--console=read-only',
      '--link-journal=no',
      '--resolv-conf=off',
      ...this.disks.map((d) => `--bind=${diskNode(d)}:${d.device}`),
      ...((await exists(DMI_PRODUCT_UUID)) ? [`--bind-ro=${join(this.dir, 'product_uuid')}:${DMI_PRODUCT_UUID}`] : []),
      ...this.setup.nspawnArgs,
    ];
    let child: ChildProcess;
    try {
      child = spawn('/bin/sh', ['-c', CGROUP_WRAPPER, 'carlab-boot', 'systemd-nspawn', ...args], {
        detached: true,
        stdio: ['ignore', console.fd, console.fd],
        env: { ...process.env, CARLAB_CGROUP_PROCS: dirs.map((d) => join(d, 'cgroup.procs')).join(' ') },
      });
    } finally {
      await console.close();
    }
    child.unref();
    const pid = child.pid;
    if (pid === undefined) throw new Error(`cannot start systemd-nspawn for ${this.machine}`);
    const state: { exited?: { code: number | null; signal: NodeJS.Signals | null } } = {};
    child.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      state.exited = { code, signal };
      this.onExit(child, code);
    });
    this.nspawn = child;
    this.nspawnStart = await processStartTime(pid);
    this.leader = undefined;
    await this.recordOwner();
    debug(`${this.machine}: nspawn ${pid} started`);

    const deadline = Date.now() + timeoutMs;
    let leader: number | undefined;
    const failure = (): string | undefined => {
      const e = state.exited;
      if (e) return `systemd-nspawn exited (code ${String(e.code)}, signal ${String(e.signal)})`;
      if (Date.now() <= deadline) return undefined;
      return leader === undefined ? `no container init after ${timeoutMs} ms` : `sshd did not answer on ${this.ip}:22 within ${timeoutMs} ms`;
    };
    const fail = async (why: string): Promise<never> => {
      const consoleTail = await this.consoleTail(40);
      if (!state.exited) await this.stop({ graceMs: 2_000 }).catch(() => undefined);
      throw new Error(`${this.machine} (${this.ip}) did not boot: ${why}\n--- console (${this.consoleLog}):\n${consoleTail}`);
    };
    while (leader === undefined) {
      const why = failure();
      if (why !== undefined) return fail(why);
      for (const c of await childrenOf(pid)) if (await isPidNamespaceInit(c)) leader = c;
      if (leader === undefined) await sleep(50);
    }
    this.leader = leader;
    debug(`${this.machine}: container init ${leader}`);
    for (;;) {
      const why = failure();
      if (why !== undefined) return fail(why);
      if (await probeTcp(this.ip, 22, 'SSH-', 2_000)) {
        debug(`${this.machine}: sshd answers`);
        return;
      }
      await sleep(100);
    }
  }

  private onExit(child: ChildProcess, code: number | null): void {
    if (this.nspawn !== child) return;
    this.nspawn = undefined;
    this.nspawnStart = undefined;
    this.leader = undefined;
    for (const w of this.exitWaiters.splice(0)) w();
    // Exit code 133: the container rebooted (systemctl reboot, Ansible's reboot module): boot it again.
    if (code === 133 && !this.stopping) {
      const waiters = this.restartWaiters.splice(0);
      this.setup.log(`${this.machine} rebooted; booting it again`);
      this.start().then(
        () => waiters.forEach((w) => w.resolve()),
        (err: unknown) => {
          this.setup.log(`${this.machine} failed to come back after a reboot: ${String(err)}`);
          waiters.forEach((w) => w.reject(err));
        },
      );
    } else {
      for (const w of this.restartWaiters.splice(0)) w.reject(new Error(`${this.machine} stopped (exit ${String(code)})`));
      void this.recordOwner().catch(() => undefined);
    }
  }

  /** Shuts the host down (SIGTERM to nspawn: a clean poweroff; SIGKILL after `graceMs`, default 20 s). */
  async stop(opts: { graceMs?: number } = {}): Promise<void> {
    const child = this.nspawn;
    this.stopping = true;
    try {
      const exited = new Promise<void>((resolve) => this.exitWaiters.push(resolve));
      await stopContainer(this.slot, child?.pid, this.nspawnStart, opts.graceMs ?? 20_000);
      if (child && this.nspawn === child) await Promise.race([exited, sleep(5_000)]);
      this.nspawn = undefined;
      this.leader = undefined;
      this.nspawnStart = undefined;
      await this.recordOwner();
    } finally {
      this.stopping = false;
    }
  }

  /** Reboots the host from inside (`systemctl reboot`) and waits until it is back with sshd answering. */
  async reboot(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (!this.nspawn) throw new Error(`${this.machine} is not running`);
    const back = new Promise<void>((resolve, reject) => this.restartWaiters.push({ resolve, reject }));
    await this.exec('systemctl reboot', { check: false, timeoutMs: 30_000 }).catch(() => undefined);
    const timeoutMs = opts.timeoutMs ?? this.setup.bootTimeoutMs + 60_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        back,
        new Promise<never>((_r, reject) => {
          timer = setTimeout(() => reject(new Error(`${this.machine} did not come back from a reboot within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs `command` with /bin/sh inside the host (all its namespaces, a clean environment, as root). */
  async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    const leader = this.leader;
    if (!this.nspawn || leader === undefined) throw new Error(`${this.machine} is not running`);
    const r = await run(
      'nsenter',
      ['--target', String(leader), '--all', '--', '/usr/bin/env', '-i', `PATH=${CONTAINER_PATH}`, 'HOME=/root', 'LANG=C.UTF-8', 'TERM=dumb', '/bin/sh', '-c', command],
      { check: false, timeoutMs: opts.timeoutMs ?? 120_000, input: opts.input },
    );
    const result = { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode ?? 128 };
    if ((opts.check ?? true) && result.exitCode !== 0)
      throw new Error(`on ${this.machine}: \`${command}\` exited with ${result.exitCode}\n${tail(r.stderr, 20)}\n${tail(r.stdout, 10)}`);
    return result;
  }

  /**
   * Attaches a new sparse disk of `sizeBytes` (a loop device on the machine) as the next
   * /dev/vdX: at once in a running host (a device node), and on every later boot (nspawn --bind).
   */
  async addDisk(sizeBytes: number): Promise<LabDisk> {
    const letter = String.fromCharCode('b'.charCodeAt(0) + this.disks.length);
    const device = `/dev/vd${letter}`;
    await mkdir(join(this.dir, 'disks'), { recursive: true });
    const file = join(this.dir, 'disks', `vd${letter}.img`);
    await run('truncate', ['-s', String(sizeBytes), file]);
    const loop = (await run('losetup', ['--find', '--show', '--direct-io=on', file])).stdout.trim();
    const disk: LabDisk = { device, loop, file, sizeBytes };
    this.disks.push(disk);
    await this.recordOwner();
    const st = (await run('stat', ['-c', '%t %T', loop])).stdout.trim().split(' ');
    const [major, minor] = st.map((h) => String(parseInt(h, 16)));
    // A node of the host's own (what boots bind), not the machine's /dev/loopN: Ceph chowns its
    // devices, which would otherwise change the machine's node for good.
    await run('mknod', ['-m', '660', diskNode(disk), 'b', major ?? '', minor ?? '']);
    if (this.running) await this.exec(`mknod -m 660 ${device} b ${major ?? ''} ${minor ?? ''} && chgrp disk ${device}`);
    return disk;
  }

  /** The text of `path` inside the host (undefined when it does not exist): read from the root directory, or over SSH on a VM. */
  async readHostFile(path: string): Promise<string | undefined> {
    if (this.kind === 'vm') {
      const r = await this.exec(`cat ${shellQuote(path)}`, { check: false, timeoutMs: 30_000 });
      return r.exitCode === 0 ? r.stdout : undefined;
    }
    try {
      return await readFile(join(this.root, path), 'utf8');
    } catch {
      return undefined;
    }
  }

  /** The last lines of the host's console (boot messages), without colour codes. */
  async consoleTail(lines = 50): Promise<string> {
    try {
      // eslint-disable-next-line no-control-regex
      return tail((await readFile(this.consoleLog, 'utf8')).replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, ''), lines);
    } catch {
      return '(no console output)';
    }
  }

  /** @internal Stops the host and removes everything it used. */
  async teardown(graceMs: number): Promise<void> {
    await this.stop({ graceMs });
    await cleanupSlot(this.slot, await readOwner(this.slot), graceMs);
  }
}

// ---------------------------------------------------------------------------------------------
// VM hosts

/** The machine name a QEMU process of the lab was started for (`-name carlabN`), if it is one. */
function qemuMachine(argv: readonly string[]): string | undefined {
  if (!/qemu-system-/.test(argv[0] ?? '')) return undefined;
  const i = argv.indexOf('-name');
  return i >= 0 ? (argv[i + 1] ?? '').split(',')[0] : undefined;
}
function isQemuOf(argv: readonly string[], machine: string): boolean {
  return qemuMachine(argv) === machine;
}

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

// ---------------------------------------------------------------------------------------------
// Labs

export interface InventoryOptions {
  /** Default root. */
  user?: string;
  /** Default: the lab's key. */
  privateKeyPath?: string;
  /** Inventory group of all hosts (default `lab`). */
  group?: string;
}

export interface Lab {
  readonly name: string;
  readonly hosts: readonly LabHost[];
  readonly image: LabImage;
  readonly sshKey: KeyPair | undefined;
  /** Runs `command` on host `index` over SSH with the lab's key (`sshKey` is required). */
  ssh(index: number, command: string, opts?: Partial<SshOptions>): Promise<RunResult>;
  /** Writes an INI Ansible inventory of the hosts and returns its path. */
  writeInventory(path: string, opts?: InventoryOptions): Promise<string>;
  /** Stops every host and removes everything the lab created. Idempotent. */
  destroy(opts?: { graceMs?: number }): Promise<void>;
}

const liveLabs = new Set<LabImpl>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Best effort if a lab is never destroyed: ask its containers to power off. sweepStale() removes the rest.
  process.on('exit', () => {
    for (const lab of liveLabs) if (!lab.persistent) for (const h of lab.hosts) if (h.pid !== undefined) signalProcess(h.pid, 'SIGTERM');
  });
}

class LabImpl implements Lab {
  private destroyed: Promise<void> | undefined;
  constructor(
    readonly name: string,
    readonly hosts: readonly LabHost[],
    readonly image: LabImage,
    readonly sshKey: KeyPair | undefined,
    readonly persistent: boolean,
  ) {}

  ssh(index: number, command: string, opts: Partial<SshOptions> = {}): Promise<RunResult> {
    const host = this.hosts[index];
    if (!host) throw new Error(`lab ${this.name} has no host ${index}`);
    const privateKeyPath = opts.privateKeyPath ?? this.sshKey?.privateKeyPath;
    if (privateKeyPath === undefined) throw new Error('lab.ssh() needs createLab({ sshKey }) or a privateKeyPath');
    return sshExec(host, command, { ...opts, privateKeyPath });
  }

  async writeInventory(path: string, opts: InventoryOptions = {}): Promise<string> {
    const key = opts.privateKeyPath ?? this.sshKey?.privateKeyPath;
    const group = opts.group ?? 'lab';
    const lines = [
      `[${group}]`,
      ...this.hosts.map((h) => `${h.name} ansible_host=${h.ip}`),
      '',
      `[${group}:vars]`,
      `ansible_user=${opts.user ?? 'root'}`,
      ...(key === undefined ? [] : [`ansible_ssh_private_key_file=${key}`]),
      `ansible_ssh_common_args=${shellQuote('-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes')}`,
      'ansible_python_interpreter=/usr/bin/python3',
      '',
    ];
    await writeFile(path, lines.join('\n'));
    return path;
  }

  destroy(opts: { graceMs?: number } = {}): Promise<void> {
    this.destroyed ??= (async () => {
      const results = await Promise.allSettled(this.hosts.map((h) => h.teardown(opts.graceMs ?? 20_000)));
      liveLabs.delete(this);
      const errors = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as unknown);
      if (errors.length) throw new AggregateError(errors, `destroying lab ${this.name}: ${errors.map(String).join('; ')}`);
    })();
    return this.destroyed;
  }
}

function seedFor(opts: CreateLabOptions, index: number): CloudInitSeed | undefined {
  const seeds = opts.seeds;
  if (seeds === undefined) return undefined;
  if (Array.isArray(seeds)) return (seeds as readonly (CloudInitSeed | undefined)[])[index];
  return (seeds as Readonly<Record<number, CloudInitSeed>>)[index];
}

/**
 * Boots a lab of hosts: sweeps stale leftovers, makes sure of the bridge and the image,
 * allocates slots, then provisions and boots every host in parallel and waits for sshd on each.
 * On failure everything created is removed again.
 */
export async function createLab(opts: CreateLabOptions): Promise<Lab> {
  await assertRequirements();
  const log = opts.log ?? defaultLog;
  const specs: HostSpec[] = typeof opts.hosts === 'number' ? Array.from({ length: opts.hosts }, () => ({})) : [...opts.hosts];
  if (specs.length < 1) throw new Error('createLab: at least one host');
  const labName = opts.name ?? 'lab';
  const vmOpts: VmOptions | undefined = opts.vm === true ? {} : opts.vm === false ? undefined : opts.vm;
  const kinds: HostKind[] = specs.map((s) => s.kind ?? (opts.vm ? 'vm' : 'container'));
  const vmCount = kinds.filter((k) => k === 'vm').length;
  let vmImage: LabImage | undefined;
  let accel: AccelChoice | undefined;
  if (vmCount > 0) {
    const missing = await checkVmRequirements();
    if (missing.length) throw new Error(`VM hosts cannot run on this machine; missing: ${missing.join('; ')}`);
    vmImage = await ensureImage({ log, ...(vmOpts?.image ?? VM_IMAGE) });
    if (!vmImage.vm) throw new Error(`createLab: image ${vmImage.name} is not a VM image (ImageOptions.vm)`);
    accel = await chooseAccel(vmImage.vm.kernel, LAB_RUN_DIR, log);
    log(`lab ${labName}: ${vmCount} VM host(s) under ${accel.accel} (${accel.reason})`);
  }
  const image = vmCount === specs.length && vmImage ? vmImage : await ensureImage({ log, ...opts.image });
  const persistent = opts.persistent ?? false;

  const lock = await acquireFileLock(GLOBAL_LOCK, GLOBAL_LOCK_TIMEOUT_MS, 'lab allocation');
  const slots: number[] = [];
  let managementKey: KeyPair | undefined;
  try {
    // One management key for every VM host of this machine (made under the lock: concurrent labs share it).
    if (vmCount > 0) managementKey = await generateKeyPair(join(LAB_STATE_DIR, 'vm'), 'mgmt_ed25519');
    await sweepLocked({ log });
    await ensureBridgeLocked();
    const taken = new Set(await listSlots());
    const netns = new Set(await listNetns());
    const links = new Set(await listLinks());
    for (let s = 1; s <= MAX_SLOTS && slots.length < specs.length; s++) {
      if (taken.has(s) || netns.has(machineName(s)) || links.has(vethName(s)) || links.has(tapName(s))) continue;
      await mkdir(slotDir(s), { recursive: true });
      await writeOwner(s, {
        pid: process.pid,
        pidStart: await processStartTime(process.pid),
        lab: labName,
        persistent,
        createdAt: new Date().toISOString(),
        hostname: '',
        ip: slotAddress(s),
      });
      slots.push(s);
    }
    if (slots.length < specs.length) {
      for (const s of slots) await rm(slotDir(s), { recursive: true, force: true });
      throw new Error(`createLab: only ${slots.length} of ${specs.length} lab slots free (max ${MAX_SLOTS} hosts on this machine)`);
    }
  } finally {
    await lock.release();
  }

  const hosts = specs.map((spec, i) => {
    const setup: HostSetup = {
      kind: kinds[i] ?? 'container',
      slot: slots[i] ?? 0,
      hostname: spec.hostname ?? machineName(slots[i] ?? 0),
      seed: spec.seed ?? seedFor(opts, i),
      labName,
      persistent,
      image,
      nspawnArgs: opts.nspawnArgs ?? [],
      bootTimeoutMs: opts.bootTimeoutMs ?? 120_000,
      nameserver: opts.nameserver,
      log,
    };
    if (setup.kind !== 'vm' || !vmImage || !accel || !managementKey) return new LabHost(setup);
    return new VmHost({
      ...setup,
      image: vmImage,
      bootTimeoutMs: vmOpts?.bootTimeoutMs ?? 600_000,
      vm: { accel, memoryMiB: vmOpts?.memoryMiB ?? 1536, cpus: vmOpts?.cpus ?? 1, managementKey },
    });
  });
  const names = new Set(hosts.map((h) => h.name));
  const lab = new LabImpl(labName, hosts, image, opts.sshKey, persistent);
  liveLabs.add(lab);
  installExitHook();
  try {
    if (names.size !== hosts.length) throw new Error(`createLab: hostnames are not distinct: ${hosts.map((h) => h.name).join(' ')}`);
    const key = opts.sshKey?.publicKey ?? opts.sshPublicKey;
    const all = hosts.map((h) => ({ name: h.name, ip: h.ip }));
    const started = Date.now();
    debug(`lab ${labName}: slots ${slots.join(' ')} allocated`);
    await Promise.all(
      hosts.map(async (h, i) => {
        await h.provision(opts.rootfs ?? 'auto', all, key);
        for (const size of specs[i]?.disks ?? []) await h.addDisk(size);
        await h.start();
      }),
    );
    log(`lab ${labName}: ${hosts.map((h) => `${h.name}=${h.ip}`).join(' ')} up in ${((Date.now() - started) / 1000).toFixed(1)}s (${hosts[0]?.mode ?? ''})`);
    return lab;
  } catch (err) {
    await lab.destroy({ graceMs: 2_000 }).catch((e: unknown) => log(`cleanup after a failed createLab: ${String(e)}`));
    throw err;
  }
}

/**
 * Stops and removes labs recorded as `persistent` (made by the CLI), whichever process made
 * them. Returns the machine names removed.
 */
export async function destroyPersistentLabs(opts: { graceMs?: number; removeBridge?: boolean; log?: (line: string) => void } = {}): Promise<string[]> {
  return withFileLock(GLOBAL_LOCK, GLOBAL_LOCK_TIMEOUT_MS, 'lab allocation', async () => {
    const removed: string[] = [];
    for (const slot of await listSlots()) {
      const owner = await readOwner(slot);
      if (!owner?.persistent) continue;
      (opts.log ?? defaultLog)(`stopping ${machineName(slot)} (${owner.hostname} ${owner.ip})`);
      await cleanupSlot(slot, owner, opts.graceMs ?? 20_000);
      removed.push(machineName(slot));
    }
    removed.push(...(await sweepLocked({ log: opts.log, removeBridge: opts.removeBridge })));
    return removed;
  });
}

/** Slots currently recorded on this machine (for the CLI's `status`). */
export async function listLabSlots(): Promise<
  { machine: string; hostname: string; ip: string; lab: string; pid: number; persistent: boolean; running: boolean; kind: HostKind }[]
> {
  const out = [];
  for (const slot of (await listSlots()).sort((a, b) => a - b)) {
    const o = await readOwner(slot);
    if (!o) continue;
    out.push({
      machine: machineName(slot),
      hostname: o.hostname,
      ip: o.ip,
      lab: o.lab,
      pid: o.pid,
      persistent: o.persistent,
      running:
        (o.nspawnPid !== undefined && (await processAlive(o.nspawnPid, o.nspawnStart))) || (o.vmPid !== undefined && (await processAlive(o.vmPid, o.vmStart))),
      kind: o.kind ?? 'container',
    });
  }
  return out;
}

/** What of the lab is on the machine now: for tests asserting that nothing was left behind. */
export async function labResidue(machines: readonly string[]): Promise<string[]> {
  const residue: string[] = [];
  const netns = await listNetns();
  const links = await listLinks();
  const mounts = await listMounts();
  const procs = await listProcesses();
  for (const m of machines) {
    const slot = slotOfMachine(m);
    if (slot === undefined) continue;
    if (netns.includes(m)) residue.push(`netns ${m}`);
    if (links.includes(vethName(slot))) residue.push(`link ${vethName(slot)}`);
    if (links.includes(tapName(slot))) residue.push(`link ${tapName(slot)}`);
    for (const mt of mounts)
      if (mt.mountPoint.startsWith(`${hostDir(slot)}/`) || mt.mountPoint === hostDir(slot) || mt.mountPoint === `/run/netns/${m}`)
        residue.push(`mount ${mt.mountPoint}`);
    for (const p of procs) {
      const i = p.argv.indexOf('-M');
      if ((p.argv[0] ?? '').endsWith('systemd-nspawn') && i >= 0 && p.argv[i + 1] === m) residue.push(`process ${p.pid} ${p.argv.join(' ')}`);
      if (isQemuOf(p.argv, m)) residue.push(`process ${p.pid} ${p.argv.join(' ')}`);
    }
    for (const d of await cgroupDirs(slot)) {
      if (await exists(d)) residue.push(`cgroup ${d} (${(await cgroupPids(d)).length} processes)`);
    }
    if (await exists(hostDir(slot))) residue.push(`dir ${hostDir(slot)}`);
    if (await exists(slotDir(slot))) residue.push(`slot lock ${slotDir(slot)}`);
  }
  return residue;
}

/** The host's own device node of `disk` (in the host's directory), bound as /dev/vdX at boot. */
function diskNode(disk: LabDisk): string {
  return disk.file.replace(/\.img$/, '.dev');
}

/** Convenience: `host.addDisk(sizeBytes)`. */
export function addDisk(host: LabHost, sizeBytes: number): Promise<LabDisk> {
  return host.addDisk(sizeBytes);
}

/** @internal exported for tests */
export const _internal = { unmountUnder };
