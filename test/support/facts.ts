import type { ServerFacts } from '@carapace/models';
import type { Harness } from './harness.js';
import { disk, GiB, partition } from './playbook-facts.js';

/** Realistic facts of a Debian 12 host: a system disk, two data disks, two interfaces. */
export function makeFacts(hostname: string, ip: string, options: { dataDisks?: number } = {}): ServerFacts {
  const dataDisks = options.dataDisks ?? 2;
  return {
    hostname,
    fqdn: `${hostname}.lab.example.com`,
    os: { id: 'debian', version_id: '12', pretty_name: 'Debian GNU/Linux 12 (bookworm)', kernel: '6.1.0-18-amd64' },
    cpu: { count: 8, model: 'Intel(R) Xeon(R) Silver 4210R CPU @ 2.40GHz' },
    memory: { total_bytes: 64 * GiB },
    interfaces: [
      { name: 'lo', mac: null, mtu: 65536, addresses: [{ family: 'inet', address: '127.0.0.1', prefix: 8 }], default_route: false },
      {
        name: 'eth0',
        mac: '52:54:00:12:34:56',
        mtu: 1500,
        addresses: [
          { family: 'inet', address: ip, prefix: 24 },
          { family: 'inet6', address: 'fe80::5054:ff:fe12:3456', prefix: 64 },
        ],
        default_route: true,
      },
      { name: 'eth1', mac: '52:54:00:12:34:57', mtu: 9000, addresses: [{ family: 'inet', address: ip.replace(/^\d+\.\d+/, '192.168'), prefix: 24 }], default_route: false },
    ],
    default_ipv4: ip,
    disks: [
      disk('vda', 50 * GiB, {
        partitions: [partition('vda1', 49 * GiB, { fstype: 'ext4', mountpoint: '/' }), partition('vda2', GiB, { fstype: 'swap', mountpoint: '[SWAP]' })],
      }),
      ...Array.from({ length: dataDisks }, (_, i) =>
        disk(`vd${String.fromCharCode(98 + i)}`, (i % 2 ? 960 : 4000) * GiB, {
          rotational: i % 2 === 0,
          model: i % 2 ? 'SAMSUNG MZ7LH960' : 'ST4000NM0035',
          serial: `S${i}${hostname}`,
        }),
      ),
    ],
    gathered_at: 1_795_000_000,
  };
}

let hostCounter = 10;

/**
 * Registers a server with the discovery token and records its facts as a runner would;
 * returns the server model.
 */
export async function addServer(h: Harness, options: { dataDisks?: number } = {}) {
  const n = hostCounter++;
  const id = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  const ip = `10.0.0.${n}`;
  const res = await h.request('POST', '/v1/server/', {
    headers: { authorization: h.config.discoveryTokens[0] ?? '' },
    body: { id, host: ip, username: 'ansible' },
  });
  if (res.status !== 200) throw new Error(`register: ${res.status} ${res.body}`);
  const server = await h.container.services.servers.recordFacts(id, makeFacts(`node${n}`, ip, options), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake');
  return { ...server, model: 'server' as const };
}
