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
 *
 * This module is the lab itself (createLab, the Lab, persistent labs, inspection) and the
 * public entry: it re-exports what tests use from the modules of the other parts, each one idea:
 * naming.ts (names, addresses, paths), host-types.ts (types), requirements.ts, ssh.ts,
 * network.ts (bridge, netns, veth), slots.ts (ownership records, cleanup, sweep),
 * container-host.ts (LabHost), vm-host.ts (VmHost), debug.ts.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LabHost } from './container-host.js';
import { debug } from './debug.js';
import type { CloudInitSeed, CreateLabOptions, HostKind, HostSetup, HostSpec, KeyPair, VmOptions } from './host-types.js';
import { defaultLog, ensureImage } from './image.js';
import type { LabImage } from './image.js';
import { GLOBAL_LOCK, GLOBAL_LOCK_TIMEOUT_MS, LAB_RUN_DIR, LAB_STATE_DIR, MAX_SLOTS, isQemuOf, machineName, slotAddress, slotOfMachine, vethName } from './naming.js';
import { ensureBridgeLocked, listLinks, listNetns } from './network.js';
import { assertRequirements } from './requirements.js';
import { cgroupDirs, cleanupSlot, hostDir, listSlots, readOwner, slotDir, sweepLocked, writeOwner } from './slots.js';
import { generateKeyPair, sshExec } from './ssh.js';
import type { SshOptions } from './ssh.js';
import { acquireFileLock, cgroupPids, exists, listMounts, listProcesses, processAlive, processStartTime, shellQuote, signalProcess, unmountUnder, withFileLock } from './sys.js';
import type { RunResult } from './sys.js';
import { VmHost } from './vm-host.js';
import { VM_IMAGE, checkVmRequirements, chooseAccel, tapName } from './vm.js';
import type { AccelChoice } from './vm.js';

export { ensureImage, BASE_PACKAGES, LAB_CACHE_DIR } from './image.js';
export type { ImageOptions, ImageSpec, LabImage } from './image.js';
export { CommandError } from './sys.js';
export { DMI_PRODUCT_UUID, LAB_BRIDGE, LAB_GATEWAY, LAB_PREFIX_LENGTH, LAB_RUN_DIR, LAB_STATE_DIR, MAX_SLOTS, machineName, slotAddress } from './naming.js';
export type { CloudInitSeed, CreateLabOptions, ExecOptions, ExecResult, HostKind, HostSpec, KeyPair, LabDisk, VmOptions } from './host-types.js';
export { checkRequirements } from './requirements.js';
export { generateKeyPair, sshExec, sshOptions } from './ssh.js';
export type { SshOptions } from './ssh.js';
export { ensureBridge } from './network.js';
export { sweepStale } from './slots.js';
export type { SweepOptions } from './slots.js';
export { LabHost, addDisk } from './container-host.js';
export { VmHost } from './vm-host.js';

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


/** @internal exported for tests */
export const _internal = { unmountUnder };
