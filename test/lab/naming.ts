/**
 * The lab's names and places: the bridge and its addresses, the state and run directories, the
 * machine-wide lock, and how a slot N names its machine `carlabN`, address, veth and QEMU
 * process (and back). See lab.ts for the resources these name.
 */
import { join } from 'node:path';

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

export const GLOBAL_LOCK = join(LAB_RUN_DIR, 'global.lock');
export const GLOBAL_LOCK_TIMEOUT_MS = 5 * 60_000;
export const CONTAINER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The machine's DMI product UUID. nspawn shows the machine's /sys to every host, so on a machine
 * that has one every host would report the same hardware id (and register as one server): each
 * host gets a UUID of its own, bound over this file. Without it (a container), hosts have no
 * DMI and the discovery script uses their own /etc/machine-id.
 */
export const DMI_PRODUCT_UUID = '/sys/class/dmi/id/product_uuid';

export function machineName(slot: number): string {
  return `carlab${slot}`;
}
export function slotAddress(slot: number): string {
  return `10.77.0.${10 + slot}`;
}
export function vethName(slot: number): string {
  return `vcarlab${slot}`;
}
/** The slot of a netns / link / directory / cgroup name `carlabN` or `vcarlabN` (not the bridge `carlab0`). */
export function slotOfMachine(name: string): number | undefined {
  const m = /^[vt]?carlab([1-9]\d*)$/.exec(name);
  const slot = m?.[1] === undefined ? undefined : Number(m[1]);
  return slot !== undefined && slot <= MAX_SLOTS ? slot : undefined;
}

/** The machine name a QEMU process of the lab was started for (`-name carlabN`), if it is one. */
export function qemuMachine(argv: readonly string[]): string | undefined {
  if (!/qemu-system-/.test(argv[0] ?? '')) return undefined;
  const i = argv.indexOf('-name');
  return i >= 0 ? (argv[i + 1] ?? '').split(',')[0] : undefined;
}
export function isQemuOf(argv: readonly string[], machine: string): boolean {
  return qemuMachine(argv) === machine;
}
