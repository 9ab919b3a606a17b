// The OSD disk rules for devices a server was given under a name of its own: a container's
// /dev/vdb that the kernel backs with a loop device (the lab's hosts, any nspawn/LXC host).
import { describe, expect, it } from 'vitest';
import {
  clusterDeployPlugin,
  describeUnusableDisks,
  diskUnusableReason,
  isBoundLoopDevice,
  PlaybookInputError,
  resolveHints,
  UNREADABLE_SIGNATURE,
  usableOsdDisks,
} from '../src/index.js';
import { disk, EMPTY_CLUSTER, facts, GiB, ID1, ID2, partition, server } from '@carapace/test-support/playbook-facts';

/** A loop device of the machine given to a container as `/dev/<name>`. */
function bound(name: string, kernelName: string, sizeBytes = 20 * GiB, extra: Parameters<typeof disk>[2] = {}) {
  return disk(name, sizeBytes, { type: 'loop', kernel_name: kernelName, rotational: true, ...extra });
}

describe('loop devices bound into a server under a name of its own', () => {
  it('tells a bound loop device from the server’s own loop devices', () => {
    expect(isBoundLoopDevice(bound('vdb', 'loop3'))).toBe(true);
    expect(isBoundLoopDevice(disk('loop0', 20 * GiB, { type: 'loop' }))).toBe(false);
    expect(isBoundLoopDevice(disk('loop0', 20 * GiB, { type: 'loop', kernel_name: 'loop0' }))).toBe(false);
    // Only loop devices: a renamed device of another type is judged by its type.
    expect(isBoundLoopDevice(disk('vdb', 20 * GiB, { type: 'rom', kernel_name: 'sr0' }))).toBe(false);
  });

  it('accepts a whole, unused, unmounted bound device; the server’s own loop devices stay out', () => {
    expect(diskUnusableReason(bound('vdb', 'loop3'))).toBeNull();
    expect(diskUnusableReason(disk('loop0', 20 * GiB, { type: 'loop' }))).toBe('not a whole disk (type loop)');
  });

  it('refuses a bound device that holds anything, or that cannot be checked', () => {
    expect(diskUnusableReason(bound('vdb', 'loop3', 20 * GiB, { fstype: 'ext4' }))).toBe('has a ext4 signature');
    expect(diskUnusableReason(bound('vdb', 'loop3', 20 * GiB, { fstype: UNREADABLE_SIGNATURE }))).toBe('its signatures could not be read');
    expect(diskUnusableReason(bound('vdb', 'loop3', 20 * GiB, { mountpoint: '/srv' }))).toBe('mounted at /srv');
    expect(diskUnusableReason(bound('vdb', 'loop3', 20 * GiB, { holders: ['md0'] }))).toBe('in use by md0');
    expect(diskUnusableReason(bound('vdb', 'loop3', 20 * GiB, { read_only: true }))).toBe('read-only');
    expect(diskUnusableReason(bound('vdb', 'loop3', 4 * GiB))).toBe('smaller than 5 GiB');
    // Its partitions have no node in the server's /dev: their contents cannot be checked.
    expect(diskUnusableReason(bound('vdb', 'loop3', 20 * GiB, { partitions: [partition('loop3p1', GiB)] }))).toBe('partitioned (loop3p1 on loop3 of the machine)');
  });

  it('lists the usable bound devices in the order of the facts', () => {
    const f = facts('lab-1', '10.77.0.11', '10.77.0.11', [bound('vdb', 'loop2'), disk('loop0', 20 * GiB, { type: 'loop' }), bound('vdc', 'loop5', GiB)]);
    expect(usableOsdDisks(f).map((d) => d.path)).toEqual(['/dev/vdb']);
    expect(describeUnusableDisks(f)).toBe('loop0: not a whole disk (type loop); vdc: smaller than 5 GiB');
  });
});

describe('cluster_deploy on servers given bound loop devices', () => {
  const host = (name: string, id: string, ip: string, disks: Parameters<typeof facts>[3]) => server(name, id, ip, facts(name, ip, ip, disks));

  it('builds OSDs on the bound devices, by the server’s paths', () => {
    const a = host('lab-1', ID1, '10.77.0.11', [bound('vdb', 'loop0')]);
    const b = host('lab-2', ID2, '10.77.0.12', [bound('vdb', 'loop1'), bound('vdc', 'loop2', 30 * GiB)]);
    const hints = resolveHints(clusterDeployPlugin.descriptor, []);
    const servers = clusterDeployPlugin.selectServers(EMPTY_CLUSTER, [a, b], []);
    const configuration = clusterDeployPlugin.buildConfiguration(EMPTY_CLUSTER, servers, hints, []);
    const hostvars = (configuration.inventory as { _meta: { hostvars: Record<string, Record<string, unknown>> } })._meta.hostvars;
    expect(hostvars['10.77.0.11']?.carapace_osd_devices).toEqual(['/dev/vdb']);
    expect(hostvars['10.77.0.12']?.carapace_osd_devices).toEqual(['/dev/vdb', '/dev/vdc']);
    expect(hostvars['10.77.0.12']?.carapace_osd_devices_info).toEqual([
      { path: '/dev/vdb', size_bytes: 20 * GiB, rotational: true },
      { path: '/dev/vdc', size_bytes: 30 * GiB, rotational: true },
    ]);
  });

  it('still says NoUsableDisksError when the only loop devices are the server’s own', () => {
    const own = host('lab-1', ID1, '10.77.0.11', [disk('loop0', 20 * GiB, { type: 'loop' })]);
    const hints = resolveHints(clusterDeployPlugin.descriptor, []);
    let error: unknown;
    try {
      clusterDeployPlugin.buildConfiguration(EMPTY_CLUSTER, clusterDeployPlugin.selectServers(EMPTY_CLUSTER, [own], []), hints, []);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PlaybookInputError);
    expect((error as PlaybookInputError).errorName).toBe('NoUsableDisksError');
    expect((error as PlaybookInputError).message).toContain('loop0: not a whole disk (type loop)');
  });
});
