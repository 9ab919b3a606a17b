import type { Disk, NetworkInterface, Partition, ServerFacts } from '@carapace/models';
import { disk as fixtureDisk } from '@carapace/test-support/playbook-facts';

export function pick<T>(list: readonly T[], r: () => number): T {
  return list[Math.floor(r() * list.length)] as T;
}

const GIB = 1024 ** 3;
const TB = 1000 ** 4;
const HDD_MODELS = ['ST12000NM001G-2MV103', 'HGST HUH721212ALE604', 'WDC WUH721816ALE6L4', 'TOSHIBA MG08ACA16TE'];
const SSD_MODELS = ['SAMSUNG MZ7LH960HAJR-00005', 'INTEL SSDSC2KB960G8', 'Micron_5300_MTFDDAK960TDS'];
const NVME_MODELS = ['SAMSUNG MZQL21T9HCJR-00A07', 'INTEL SSDPE2KX020T8', 'Micron_7450_MTFDKCC1T9TFR'];
const CPU_MODELS = [
  'Intel(R) Xeon(R) Gold 6230R CPU @ 2.10GHz',
  'Intel(R) Xeon(R) Silver 4314 CPU @ 2.40GHz',
  'AMD EPYC 7302P 16-Core Processor',
  'AMD EPYC 7443P 24-Core Processor',
];
const OSES = [
  { id: 'ubuntu', version_id: '22.04', pretty_name: 'Ubuntu 22.04.4 LTS', kernel: '5.15.0-107-generic' },
  { id: 'ubuntu', version_id: '24.04', pretty_name: 'Ubuntu 24.04 LTS', kernel: '6.8.0-35-generic' },
  { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0-21-amd64' },
  { id: 'rocky', version_id: '9.4', pretty_name: 'Rocky Linux 9.4 (Blue Onyx)', kernel: '5.14.0-427.16.1.el9_4.x86_64' },
];

function hex(r: () => number, length: number): string {
  let s = '';
  for (let i = 0; i < length; i++) s += Math.floor(r() * 16).toString(16);
  return s;
}

function serial(r: () => number, prefix: string): string {
  return `${prefix}${hex(r, 12).toUpperCase()}`;
}

function mac(r: () => number): string {
  return Array.from({ length: 6 }, (_, i) => (i === 0 ? '3c' : hex(r, 2))).join(':');
}

/** The host-specific part of an IPv4 address in 10.x.y.z for host `index`. */
function hostOctets(index: number): string {
  return `${Math.floor(index / 250) % 250}.${(index % 250) + 2}`;
}

/** The public (default route) address of host `index`. */
export function publicIp(index: number): string {
  return `10.20.${hostOctets(index)}`;
}

function partition(disk: string, n: number, size: number, fstype: string | null, mountpoint: string | null, holders: string[] = []): Partition {
  const name = disk.startsWith('nvme') ? `${disk}p${n}` : `${disk}${n}`;
  return { name, path: `/dev/${name}`, size_bytes: size, fstype, mountpoint, holders };
}

/** A disk of the playbook tests' fixture, given its fields. */
function disk({ name, size_bytes, ...extra }: Partial<Disk> & Pick<Disk, 'name' | 'size_bytes' | 'rotational'>): Disk {
  return fixtureDisk(name, size_bytes, extra);
}

/**
 * Facts as a runner gathers them from a Ceph storage node (ServerFacts): a few interfaces
 * with IPv4 and IPv6 addresses (and a bond), an SSD system disk with mounted partitions and
 * LVM, NVMe devices for the OSD databases, 18 to 24 data disks (some already OSDs with LVM
 * holders, some blank), snap loop devices and a DVD drive: about 10 KB of JSON.
 */
export function serverFacts(index: number, r: () => number, gatheredAt: number): ServerFacts {
  const hostname = `ceph-${pick(['osd', 'stor', 'node'], r)}-${String(index).padStart(5, '0')}`;
  const rack = Math.floor(index / 40);
  const fqdn = `${hostname}.rack${rack}.dc${(rack % 3) + 1}.storage.example.net`;
  const ip = publicIp(index);
  const interfaces: NetworkInterface[] = [
    {
      name: 'lo',
      mac: null,
      mtu: 65536,
      addresses: [
        { family: 'inet', address: '127.0.0.1', prefix: 8 },
        { family: 'inet6', address: '::1', prefix: 128 },
      ],
      default_route: false,
    },
  ];
  for (const [name, address, mtu, isDefault] of [
    ['eno1', `10.10.${hostOctets(index)}`, 1500, false],
    ['bond0', ip, 9000, true],
    ['bond1', `10.30.${hostOctets(index)}`, 9000, false],
  ] as const) {
    interfaces.push({
      name,
      mac: mac(r),
      mtu,
      addresses: [
        { family: 'inet', address, prefix: name === 'eno1' ? 24 : 16 },
        { family: 'inet6', address: `fe80::${hex(r, 4)}:${hex(r, 4)}:${hex(r, 4)}:${hex(r, 4)}`, prefix: 64 },
      ],
      default_route: isDefault,
    });
  }
  for (const name of ['ens1f0', 'ens1f1', 'ens2f0', 'ens2f1']) interfaces.push({ name, mac: mac(r), mtu: 9000, addresses: [], default_route: false });

  const disks: Disk[] = [];
  const system = 'sda';
  disks.push(
    disk({
      name: system,
      size_bytes: 480 * GIB,
      rotational: false,
      model: pick(SSD_MODELS, r),
      serial: serial(r, 'S4'),
      partitions: [
        partition(system, 1, 512 * 1024 ** 2, 'vfat', '/boot/efi'),
        partition(system, 2, 2 * GIB, 'ext4', '/boot'),
        partition(system, 3, 477 * GIB, 'LVM2_member', null, ['ubuntu--vg-root', 'ubuntu--vg-var', 'ubuntu--vg-swap']),
      ],
    }),
  );
  const nvmes = 1 + Math.floor(r() * 2);
  for (let n = 0; n < nvmes; n++) {
    const name = `nvme${n}n1`;
    const used = r() < 0.6;
    disks.push(
      disk({
        name,
        size_bytes: Math.round(1.92 * TB),
        rotational: false,
        model: pick(NVME_MODELS, r),
        serial: serial(r, 'PHLN'),
        fstype: used ? 'LVM2_member' : null,
        holders: used ? Array.from({ length: 6 }, (_, k) => `ceph--${hex(r, 8)}-osd--db--${k}`) : [],
      }),
    );
  }
  const hdds = 18 + Math.floor(r() * 7);
  for (let n = 0; n < hdds; n++) {
    const name = `sd${String.fromCharCode(98 + n)}`;
    const state = r();
    disks.push(
      disk({
        name,
        size_bytes: pick([12, 16, 18], r) * TB,
        rotational: true,
        model: pick(HDD_MODELS, r),
        serial: serial(r, 'ZL2'),
        fstype: state < 0.5 ? 'LVM2_member' : null,
        holders: state < 0.5 ? [`ceph--${hex(r, 8)}--${hex(r, 4)}-osd--block--${hex(r, 8)}`] : [],
        partitions: state > 0.9 ? [partition(name, 1, 100 * GIB, 'xfs', `/srv/data${n}`)] : [],
      }),
    );
  }
  for (let n = 0; n < 4; n++) {
    disks.push(disk({ name: `loop${n}`, size_bytes: 64 * 1024 ** 2, rotational: false, type: 'loop', read_only: true, fstype: 'squashfs', mountpoint: `/snap/core20/${2000 + n}` }));
  }
  disks.push(disk({ name: 'sr0', size_bytes: 1024 ** 3, rotational: true, type: 'rom', removable: true, model: 'Virtual DVD-ROM' }));

  return {
    hostname,
    fqdn,
    os: pick(OSES, r),
    cpu: { count: pick([16, 24, 32, 48, 64], r), model: pick(CPU_MODELS, r) },
    memory: { total_bytes: pick([128, 192, 256, 384], r) * GIB },
    interfaces,
    default_ipv4: ip,
    disks,
    gathered_at: gatheredAt,
  };
}
