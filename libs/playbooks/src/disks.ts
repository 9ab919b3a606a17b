/**
 * Which disks of a server may become Ceph OSDs, judging by the gathered facts.
 *
 * @packageDocumentation
 */
import type { Disk, ServerFacts } from '@carapace/models';

/**
 * The smallest disk that becomes an OSD: 5 GiB. BlueStore needs a few GiB for its metadata
 * and its database; a smaller device would hold no useful data (and is more likely a
 * config drive or a scratch device than a data disk).
 */
export const MIN_OSD_DISK_BYTES = 5 * 1024 ** 3;

/** Whether a mount point belongs to the operating system: `/`, `/boot` and below (`/boot/efi`). */
export function isSystemMountpoint(mountpoint: string): boolean {
  return mountpoint === '/' || mountpoint === '/boot' || mountpoint.startsWith('/boot/');
}

function present(value: string | null | undefined): value is string {
  return value !== null && value !== undefined && value !== '';
}

/** Whether the disk holds the operating system: `/` or `/boot` mounted on it or on one of its partitions. */
export function isSystemDisk(disk: Disk): boolean {
  const mountpoints = [disk.mountpoint, ...disk.partitions.map((p) => p.mountpoint)];
  return mountpoints.some((m) => present(m) && isSystemMountpoint(m));
}

/**
 * The `fstype` of a disk given to a server under a name of its own whose node the facts could
 * not probe (`blkid -p` refused): it may hold data, so it is never used.
 */
export const UNREADABLE_SIGNATURE = 'unknown';

/**
 * Whether the server was given a loop device of its machine as a disk of its own: a
 * container's `/dev/vdb` that the kernel backs with `loop3` (the facts' `kernel_name` differs
 * from the server's `name`). The server's own loop devices (`/dev/loop0` of a snap) are not.
 */
export function isBoundLoopDevice(disk: Disk): boolean {
  return disk.type === 'loop' && disk.kernel_name !== undefined && disk.kernel_name !== disk.name;
}

/**
 * Why a disk cannot become an OSD, or null when it can. A usable disk is:
 * - a whole disk (lsblk type `disk`: not `rom`, `loop`, `part`, `lvm`, ...), or a loop
 *   device given to the server under a name of its own (see {@link isBoundLoopDevice}) with
 *   no partitions (the server has no nodes to check them through),
 * - writable and not removable (no USB sticks, no card readers),
 * - not the system disk (see {@link isSystemDisk}),
 * - unused: no mount point, filesystem signature or holders (LVM, dm-crypt, md RAID) on the
 *   disk itself, and none on any of its partitions (empty partitions are allowed: they hold
 *   nothing that could be lost),
 * - at least {@link MIN_OSD_DISK_BYTES}.
 */
export function diskUnusableReason(disk: Disk): string | null {
  const bound = isBoundLoopDevice(disk);
  if (disk.type !== 'disk' && !bound) return `not a whole disk (type ${disk.type})`;
  if (bound && disk.partitions.length > 0) return `partitioned (${disk.partitions.map((p) => p.name).join(', ')} on ${disk.kernel_name ?? disk.name} of the machine)`;
  if (disk.read_only) return 'read-only';
  if (disk.removable) return 'removable';
  if (isSystemDisk(disk)) return 'system disk';
  if (present(disk.mountpoint)) return `mounted at ${disk.mountpoint}`;
  if (disk.fstype === UNREADABLE_SIGNATURE) return 'its signatures could not be read';
  if (present(disk.fstype)) return `has a ${disk.fstype} signature`;
  if (disk.holders.length > 0) return `in use by ${disk.holders.join(', ')}`;
  for (const partition of disk.partitions) {
    if (present(partition.mountpoint)) return `partition ${partition.name} mounted at ${partition.mountpoint}`;
    if (partition.holders.length > 0) return `partition ${partition.name} in use by ${partition.holders.join(', ')}`;
    if (present(partition.fstype)) return `partition ${partition.name} has a ${partition.fstype} signature`;
  }
  if (disk.size_bytes < MIN_OSD_DISK_BYTES) return `smaller than ${MIN_OSD_DISK_BYTES / 1024 ** 3} GiB`;
  return null;
}

/** The disks of a server that may become OSDs ({@link diskUnusableReason} is null), in the order of the facts. */
export function usableOsdDisks(facts: ServerFacts): Disk[] {
  return facts.disks.filter((d) => diskUnusableReason(d) === null);
}

/** A short account of why each disk of a server is not usable: `vda: system disk; sr0: not a whole disk (type rom)`. */
export function describeUnusableDisks(facts: ServerFacts): string {
  const reasons = facts.disks.flatMap((d) => {
    const reason = diskUnusableReason(d);
    return reason === null ? [] : [`${d.name}: ${reason}`];
  });
  return reasons.length > 0 ? reasons.join('; ') : 'no disks';
}
