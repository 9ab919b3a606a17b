import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ServerFactsSchema, type ServerFacts } from '@carapace/models';
import { describeUnusableDisks, diskUnusableReason, usableOsdDisks } from '@carapace/playbooks';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import {
  FACTS_SCRIPT,
  FactsParseError,
  factsFromSections,
  parseFactsOutput,
  parseLsblk,
  parseNetwork,
  parseOsRelease,
  parseDevNodes,
  splitFactsOutput,
  type FactsSection,
} from '../src/ssh/index.js';

const FIXTURES = join(import.meta.dirname, 'fixtures', 'facts');
const fixture = (name: string): string => readFileSync(join(FIXTURES, name), 'utf8');
const GATHERED_AT = 1_760_000_000;

/** The real capture, with some sections replaced. */
function capturedWith(replace: Record<string, FactsSection | undefined>): Map<string, FactsSection> {
  const sections = splitFactsOutput(fixture('vm-debian12.out'));
  for (const [name, section] of Object.entries(replace)) {
    if (section === undefined) sections.delete(name);
    else sections.set(name, section);
  }
  return sections;
}

function disk(facts: ServerFacts, name: string) {
  const found = facts.disks.find((d) => d.name === name);
  if (!found) throw new Error(`no disk ${name}`);
  return found;
}

describe('splitFactsOutput', () => {
  it('splits the captured output into its sections with their exit statuses', () => {
    const sections = splitFactsOutput(fixture('vm-debian12.out'));
    expect([...sections.keys()]).toEqual(['hostname', 'fqdn', 'kernel', 'os-release', 'cpuinfo', 'nproc', 'meminfo', 'lsblk', 'ip-addr', 'ip-route4', 'ip-route6']);
    expect([...splitFactsOutput(fixture('lab-nspawn-two-disks.out')).keys()]).toEqual([
      'hostname',
      'fqdn',
      'kernel',
      'os-release',
      'cpuinfo',
      'nproc',
      'meminfo',
      'lsblk',
      'dev-nodes',
      'ip-addr',
      'ip-route4',
      'ip-route6',
    ]);
    expect(sections.get('hostname')).toEqual({ output: 'vm\n', status: 0 });
  });

  it('keeps output without a trailing newline intact and marks unfinished sections', () => {
    const out = '@@carapace-facts begin a@@\n[\n@@carapace-facts end a 2@@\n@@carapace-facts begin b@@\nhalf';
    const sections = splitFactsOutput(out);
    expect(sections.get('a')).toEqual({ output: '[', status: 2 });
    expect(sections.get('b')).toEqual({ output: 'half', status: null });
  });
});

describe('parseFactsOutput on the captured output of this VM', () => {
  const facts = parseFactsOutput(fixture('vm-debian12.out'), GATHERED_AT);

  it('is valid ServerFacts with the values the VM had', () => {
    expect(Value.Check(ServerFactsSchema, facts)).toBe(true);
    expect(facts).toMatchObject({
      hostname: 'vm',
      fqdn: 'vm',
      os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.18.44-fc-v595' },
      cpu: { count: 2, model: 'AMD EPYC' },
      memory: { total_bytes: 24684096 * 1024 },
      default_ipv4: '192.0.2.2',
      gathered_at: GATHERED_AT,
    });
  });

  it('marks the default-route interface and keeps loopback', () => {
    expect(facts.interfaces.filter((i) => i.default_route).map((i) => i.name)).toEqual(['eth0']);
    expect(facts.interfaces.find((i) => i.name === 'lo')?.addresses).toContainEqual({ family: 'inet', address: '127.0.0.1', prefix: 8 });
    expect(facts.interfaces.find((i) => i.name === 'eth0')).toMatchObject({ mac: '02:fc:00:00:00:01', mtu: 1400 });
  });

  it('leaves zram out and sees the whole-disk root as the system disk', () => {
    expect(facts.disks.map((d) => d.name)).toEqual(['vda']);
    expect(disk(facts, 'vda')).toMatchObject({ path: '/dev/vda', size_bytes: 274877906944, type: 'disk', mountpoint: '/', partitions: [], holders: [] });
    expect(describeUnusableDisks(facts)).toBe('vda: system disk');
    expect(usableOsdDisks(facts)).toEqual([]);
  });
});

describe('the facts script run locally', () => {
  it('produces output that parses into facts about this machine', () => {
    const stdout = execFileSync('/bin/sh', ['-s'], { input: FACTS_SCRIPT, encoding: 'utf8' });
    const facts = parseFactsOutput(stdout, Date.now() / 1000);
    expect(Value.Check(ServerFactsSchema, facts)).toBe(true);
    expect(facts.hostname).toBe(hostname());
    expect(facts.memory.total_bytes).toBeGreaterThan(0);
    expect(facts.cpu.count).toBeGreaterThan(0);
    expect(facts.interfaces.some((i) => i.addresses.some((a) => a.address === '127.0.0.1'))).toBe(true);
  });
});

describe('parseLsblk on a storage server', () => {
  const facts = factsFromSections(capturedWith({ lsblk: { output: fixture('lsblk-multi-disk.json'), status: 0 } }), GATHERED_AT);

  it('keeps every device but RAM disks, with loop devices typed loop', () => {
    expect(Value.Check(ServerFactsSchema, facts)).toBe(true);
    expect(facts.disks.map((d) => [d.name, d.type])).toEqual([
      ['sda', 'disk'],
      ['sdb', 'disk'],
      ['sdc', 'disk'],
      ['sdd', 'disk'],
      ['sde', 'disk'],
      ['sdf', 'disk'],
      ['sr0', 'rom'],
      ['loop0', 'loop'],
      ['nvme0n1', 'disk'],
    ]);
  });

  it('describes the system disk with its partitions and the LVM volumes they hold', () => {
    expect(disk(facts, 'sda')).toEqual({
      name: 'sda',
      path: '/dev/sda',
      size_bytes: 480103981056,
      rotational: false,
      type: 'disk',
      model: 'SAMSUNG MZ7LH480HAHQ-00005',
      serial: 'S45PNA0M812345',
      read_only: false,
      removable: false,
      fstype: null,
      mountpoint: null,
      holders: [],
      partitions: [
        { name: 'sda1', path: '/dev/sda1', size_bytes: 536870912, fstype: 'vfat', mountpoint: '/boot/efi', holders: [] },
        { name: 'sda2', path: '/dev/sda2', size_bytes: 1073741824, fstype: 'ext4', mountpoint: '/boot', holders: [] },
        { name: 'sda3', path: '/dev/sda3', size_bytes: 478491672576, fstype: 'LVM2_member', mountpoint: null, holders: ['vg0-root', 'vg0-swap'] },
      ],
    });
  });

  it('tells rotational HDDs from SSDs', () => {
    expect(disk(facts, 'sdb')).toMatchObject({ rotational: true, model: 'ST8000NM000A-2KE101', size_bytes: 8001563222016, partitions: [], holders: [] });
    expect(disk(facts, 'nvme0n1')).toMatchObject({ rotational: false, partitions: [], holders: [] });
  });

  it('records holders of whole disks and of partitions', () => {
    expect(disk(facts, 'sdc')).toMatchObject({ fstype: 'LVM2_member', holders: ['backup-data'] });
    expect(disk(facts, 'sdd').partitions).toEqual([
      { name: 'sdd1', path: '/dev/sdd1', size_bytes: 2000397868544, fstype: 'linux_raid_member', mountpoint: null, holders: ['md0'] },
    ]);
  });

  it('lets the playbooks pick exactly the plain disks', () => {
    expect(usableOsdDisks(facts).map((d) => d.name)).toEqual(['sdb', 'sde', 'nvme0n1']);
    expect(Object.fromEntries(facts.disks.map((d) => [d.name, diskUnusableReason(d)]))).toEqual({
      sda: 'system disk',
      sdb: null,
      sdc: 'has a LVM2_member signature',
      sdd: 'partition sdd1 in use by md0',
      sde: null,
      sdf: 'removable',
      sr0: 'not a whole disk (type rom)',
      loop0: 'not a whole disk (type loop)',
      nvme0n1: null,
    });
  });
});

/** The `dev-nodes` section of the facts script run as root on the Debian 12 VM of `vm-debian12.out`. */
const VM_DEV_NODES = [
  ...[0, 1, 2, 3, 4, 5, 6, 7].flatMap((n) => [`@node 7:${n} /dev/loop${n}`, '@probe ok']),
  '@node fe:0 /dev/vda',
  '@probe failed',
  '@node fd:0 /dev/zram0',
  '@probe ok',
  '',
].join('\n');

describe('parseDevNodes', () => {
  it('reads nodes in decimal major:minor with what blkid found, and tells a failed probe', () => {
    const nodes = parseDevNodes(['@node fe:10 /dev/vdb', 'PTTYPE=gpt', 'PTUUID=1234', '@probe ok', '@node 7:0 /dev/vdc', 'blkid: error: /dev/vdc: Permission denied', '@probe failed', ''].join('\n'));
    expect(nodes).toEqual([
      { majMin: '254:16', path: '/dev/vdb', name: 'vdb', signatures: new Map([['PTTYPE', 'gpt'], ['PTUUID', '1234']]) },
      { majMin: '7:0', path: '/dev/vdc', name: 'vdc', signatures: null },
    ]);
  });

  it('reads a node that udev describes as probed with nothing to add to lsblk', () => {
    expect(parseDevNodes('@node 8:10 /dev/sdb\n@probe udev\n')).toEqual([{ majMin: '8:16', path: '/dev/sdb', name: 'sdb', signatures: new Map() }]);
  });

  it('reads an empty /dev as no nodes, and refuses a node without its probe result', () => {
    expect(parseDevNodes('\n')).toEqual([]);
    expect(() => parseDevNodes('@node 8:0 /dev/sda\n')).toThrow(new FactsParseError('dev-nodes: /dev/sda has no probe result'));
  });
});

describe('disks on an ordinary host: the /dev nodes change nothing', () => {
  it('gives the VM the same facts with and without its /dev nodes', () => {
    const before = parseFactsOutput(fixture('vm-debian12.out'), GATHERED_AT);
    const after = factsFromSections(capturedWith({ 'dev-nodes': { output: VM_DEV_NODES, status: 0 } }), GATHERED_AT);
    expect(after).toEqual(before);
  });

  it('keeps every device of a storage server that has its nodes, the snap loop device still not usable', () => {
    const nodes = ['8:0 sda', '8:10 sdb', '8:20 sdc', '8:30 sdd', '8:40 sde', '8:50 sdf', 'b:0 sr0', '7:0 loop0', 'fc:0 zram0', '103:0 nvme0n1']
      .flatMap((line) => {
        const [majMin, name] = line.split(' ');
        return [`@node ${majMin} /dev/${name}`, '@probe ok'];
      })
      .join('\n');
    const lsblk = { output: fixture('lsblk-multi-disk.json'), status: 0 };
    const withNodes = factsFromSections(capturedWith({ lsblk, 'dev-nodes': { output: nodes, status: 0 } }), GATHERED_AT);
    expect(withNodes.disks).toEqual(factsFromSections(capturedWith({ lsblk }), GATHERED_AT).disks);
    expect(diskUnusableReason(disk(withNodes, 'loop0'))).toBe('not a whole disk (type loop)');
  });

  it('keeps the disks as lsblk has them when the node listing failed', () => {
    const before = parseFactsOutput(fixture('vm-debian12.out'), GATHERED_AT);
    expect(factsFromSections(capturedWith({ 'dev-nodes': { output: '', status: 1 } }), GATHERED_AT)).toEqual(before);
  });
});

describe('disks of a container host (a lab host given two loop devices as /dev/vdb and /dev/vdc)', () => {
  // The real output on a lab host while another host had a disk too: lsblk lists the machine's
  // loop0, loop1, loop2, zram0 and vda (mounted in the container at /run/host/...); the host's
  // /dev has vdb (7:0, empty) and vdc (7:1, formatted ext4 before the capture).
  const captured = () => splitFactsOutput(fixture('lab-nspawn-two-disks.out'));
  const facts = factsFromSections(captured(), GATHERED_AT);

  it('lists only the devices with a node in the host’s /dev, under the host’s names', () => {
    expect(Value.Check(ServerFactsSchema, facts)).toBe(true);
    expect(facts.disks.map((d) => [d.name, d.path, d.kernel_name, d.size_bytes])).toEqual([
      ['vdb', '/dev/vdb', 'loop0', 6 * 1024 ** 3],
      ['vdc', '/dev/vdc', 'loop1', 1024 ** 3],
    ]);
    expect(disk(facts, 'vdb')).toMatchObject({ type: 'loop', fstype: null, mountpoint: null, holders: [], partitions: [] });
  });

  it('takes the signature blkid found on the host’s node, which lsblk could not probe', () => {
    expect(disk(facts, 'vdc').fstype).toBe('ext4');
  });

  it('lets the playbooks use the empty whole disk the host owns', () => {
    expect(usableOsdDisks(facts).map((d) => d.path)).toEqual(['/dev/vdb']);
    expect(describeUnusableDisks(facts)).toBe('vdc: has a ext4 signature');
  });

  it('never trusts a renamed device whose node could not be probed', () => {
    const sections = captured();
    const nodes = sections.get('dev-nodes')?.output ?? '';
    sections.set('dev-nodes', { output: nodes.replace('@probe ok', 'blkid: error: /dev/vdb: Permission denied\n@probe failed'), status: 0 });
    const unprobed = factsFromSections(sections, GATHERED_AT);
    expect(disk(unprobed, 'vdb').fstype).toBe('unknown');
    expect(diskUnusableReason(disk(unprobed, 'vdb'))).toBe('its signatures could not be read');
    expect(usableOsdDisks(unprobed)).toEqual([]);
  });

  it('takes lsblk’s signatures for a renamed device that udev describes', () => {
    const sections = captured();
    const nodes = sections.get('dev-nodes')?.output ?? '';
    sections.set('dev-nodes', { output: nodes.replace('@probe ok', '@probe udev'), status: 0 });
    expect(disk(factsFromSections(sections, GATHERED_AT), 'vdb')).toMatchObject({ kernel_name: 'loop0', fstype: null });
  });

  it('lists no disk for a host whose /dev has no block device', () => {
    const sections = captured();
    sections.set('dev-nodes', { output: '', status: 0 });
    expect(factsFromSections(sections, GATHERED_AT).disks).toEqual([]);
  });
});

describe('parseLsblk on old util-linux', () => {
  it('reads string numbers and flags, derives paths and trims models', () => {
    const disks = parseLsblk(fixture('lsblk-util-linux-2.31.json'));
    expect(disks).toEqual([
      {
        name: 'sda',
        path: '/dev/sda',
        size_bytes: 1000204886016,
        rotational: true,
        type: 'disk',
        model: 'ST1000DM010-2EP102',
        serial: 'Z9AABCDE',
        read_only: false,
        removable: false,
        fstype: null,
        mountpoint: null,
        holders: [],
        partitions: [{ name: 'sda1', path: '/dev/sda1', size_bytes: 1000203837440, fstype: 'ext4', mountpoint: '/', holders: [] }],
      },
      {
        name: 'sdb',
        path: '/dev/sdb',
        size_bytes: 500107862016,
        rotational: false,
        type: 'disk',
        model: 'Samsung SSD 860',
        serial: 'S3Z9NB0K123456X',
        read_only: false,
        removable: false,
        fstype: null,
        mountpoint: null,
        holders: [],
        partitions: [],
      },
    ]);
  });

  it('prefers the system mount point among several', () => {
    const [vda] = parseLsblk(JSON.stringify({ blockdevices: [{ name: 'vda', type: 'disk', size: 1, mountpoint: '/run/netns', mountpoints: ['/run/netns', '/'] }] }));
    expect(vda?.mountpoint).toBe('/');
  });

  it('rejects a device that is not a device, naming where', () => {
    expect(() => parseLsblk('{"blockdevices":[{"name":"sda","type":"disk","children":[{"type":"part"}]}]}')).toThrow(/lsblk device \/blockdevices\/0\/children\/0/);
    expect(() => parseLsblk('not json')).toThrow(FactsParseError);
  });
});

describe('parseNetwork', () => {
  it('marks the lowest-metric IPv4 default route and takes its primary address', () => {
    const net = parseNetwork(fixture('ip-addr-bond-vlan.json'), fixture('ip-route4-bond-vlan.json'), '[]');
    expect(net.default_ipv4).toBe('192.168.100.15');
    expect(net.interfaces.filter((i) => i.default_route).map((i) => i.name)).toEqual(['bond0.100']);
    expect(net.interfaces.find((i) => i.name === 'wg0')).toEqual({
      name: 'wg0',
      mac: null,
      mtu: 1420,
      addresses: [{ family: 'inet', address: '10.99.0.2', prefix: 24 }],
      default_route: false,
    });
    expect(net.interfaces.find((i) => i.name === 'bond0.100')?.addresses).toHaveLength(3);
  });

  it('uses the route source address and multipath next hops', () => {
    const routes = JSON.stringify([{ dst: 'default', prefsrc: '10.20.0.99', nexthops: [{ dev: 'bond0' }, { dev: 'wg0' }] }]);
    const net = parseNetwork(fixture('ip-addr-bond-vlan.json'), routes, null);
    expect(net.default_ipv4).toBe('10.20.0.99');
    expect(net.interfaces.filter((i) => i.default_route).map((i) => i.name)).toEqual(['bond0', 'wg0']);
  });

  it('falls back to the IPv6 default route when there is no IPv4 one', () => {
    const net = parseNetwork(fixture('ip-addr-bond-vlan.json'), '[]', JSON.stringify([{ dst: 'default', gateway: 'fe80::1', dev: 'bond0', metric: 1024 }]));
    expect(net.default_ipv4).toBeNull();
    expect(net.interfaces.filter((i) => i.default_route).map((i) => i.name)).toEqual(['bond0']);
  });

  it('skips the empty entries of old iproute2', () => {
    const net = parseNetwork('[{},{"ifname":"lo","addr_info":[{}]}]', '', null);
    expect(net.interfaces).toEqual([{ name: 'lo', mac: null, mtu: null, addresses: [], default_route: false }]);
  });
});

describe('parseOsRelease', () => {
  it('unquotes values as a shell would', () => {
    const os = parseOsRelease('NAME="Debian GNU/Linux"\nID=debian\nPRETTY_NAME=\'Odd \\"one\\"\'\nVERSION="12 (\\"bookworm\\")"\n# comment\n');
    expect(Object.fromEntries(os)).toEqual({ NAME: 'Debian GNU/Linux', ID: 'debian', PRETTY_NAME: 'Odd \\"one\\"', VERSION: '12 ("bookworm")' });
  });
});

describe('factsFromSections edge cases', () => {
  it('falls back to the hostname when hostname -f fails, and to nproc for CPUs', () => {
    const facts = factsFromSections(
      capturedWith({
        fqdn: { output: 'hostname: Name or service not known\n', status: 1 },
        cpuinfo: { output: 'vendor_id : IBM/S390\nprocessor 0: version = FF\n', status: 0 },
        nproc: { output: '4\n', status: 0 },
      }),
      GATHERED_AT,
    );
    expect(facts.fqdn).toBe('vm');
    expect(facts.cpu).toEqual({ count: 4, model: 'unknown' });
  });

  it('names a missing tool', () => {
    expect(() => factsFromSections(capturedWith({ lsblk: { output: '', status: 127 } }), GATHERED_AT)).toThrow('lsblk not found (exit 127)');
    expect(() => factsFromSections(capturedWith({ 'ip-addr': { output: '', status: 1 } }), GATHERED_AT)).toThrow('ip-addr failed (exit 1)');
    expect(() => factsFromSections(capturedWith({ meminfo: undefined }), GATHERED_AT)).toThrow('no meminfo section in the output');
  });

  it('treats a failed route listing as no default route', () => {
    const facts = factsFromSections(capturedWith({ 'ip-route4': { output: '[', status: 2 }, 'ip-route6': { output: '[', status: 2 } }), GATHERED_AT);
    expect(facts.default_ipv4).toBeNull();
    expect(facts.interfaces.some((i) => i.default_route)).toBe(false);
  });

  it('refuses an unreadable meminfo', () => {
    expect(() => factsFromSections(capturedWith({ meminfo: { output: 'MemTotal: lots kB\n', status: 0 } }), GATHERED_AT)).toThrow(FactsParseError);
  });
});
