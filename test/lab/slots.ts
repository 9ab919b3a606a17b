/**
 * Slots: a host's slot directory and ownership record (`/run/carapace-lab/slots/N/owner.json`),
 * its host directory and cgroups; stopping a slot's container, removing everything of a slot,
 * and sweeping the slots (and carlab* leftovers) of dead owners.
 */
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { HostKind, LabDisk } from './host-types.js';
import { defaultLog } from './image.js';
import { GLOBAL_LOCK, GLOBAL_LOCK_TIMEOUT_MS, LAB_BRIDGE, LAB_RUN_DIR, LAB_STATE_DIR, isQemuOf, machineName, qemuMachine, slotOfMachine, vethName } from './naming.js';
import { listLinks, listNetns } from './network.js';
import {
  cgroupRoots,
  killCgroups,
  listProcesses,
  processAlive,
  removeCgroupTree,
  removeTree,
  run,
  signalProcess,
  waitForExit,
  withFileLock,
  writeFileAtomic,
} from './sys.js';
import { tapName } from './vm.js';

const SLOTS_DIR = join(LAB_RUN_DIR, 'slots');
const HOSTS_DIR = join(LAB_STATE_DIR, 'hosts');

/** Ownership record of a slot. */
export interface SlotOwner {
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

export function slotDir(slot: number): string {
  return join(SLOTS_DIR, String(slot));
}
export function hostDir(slot: number): string {
  return join(HOSTS_DIR, machineName(slot));
}
export async function cgroupDirs(slot: number): Promise<string[]> {
  return (await cgroupRoots()).map((r) => join(r, 'carapace-lab', machineName(slot)));
}

export async function readOwner(slot: number): Promise<SlotOwner | undefined> {
  try {
    return JSON.parse(await readFile(join(slotDir(slot), 'owner.json'), 'utf8')) as SlotOwner;
  } catch {
    return undefined;
  }
}

export async function writeOwner(slot: number, owner: SlotOwner): Promise<void> {
  await writeFileAtomic(join(slotDir(slot), 'owner.json'), `${JSON.stringify(owner, null, 2)}\n`);
}

export async function listSlots(): Promise<number[]> {
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
export async function stopContainer(slot: number, pid: number | undefined, pidStart: string | undefined, graceMs: number): Promise<void> {
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
export async function cleanupSlot(slot: number, owner: SlotOwner | undefined, graceMs: number): Promise<void> {
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

export async function sweepLocked(opts: SweepOptions): Promise<string[]> {
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
