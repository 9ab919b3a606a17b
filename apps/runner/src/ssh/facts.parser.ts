import { ServerFactsSchema, type Disk, type NetworkInterface, type Partition, type ServerFacts } from '@carapace/models';
import { isSystemMountpoint, UNREADABLE_SIGNATURE } from '@carapace/playbooks';
import type { TSchema, Static } from 'typebox';
import { Value } from 'typebox/value';
import {
  IpAddrOutputSchema,
  IpRouteOutputSchema,
  LsblkDeviceSchema,
  LsblkOutputSchema,
  type IpLink,
  type IpRoute,
  type LsblkDevice,
} from './facts.schema.js';
import { FactsParseError } from './facts.errors.js';
import { hostNodeOf, parseDevNodes, type DevNode } from './facts.devices.js';

export { FactsParseError };

/** One section of the facts script's output: what the command printed, and its exit status. */
export interface FactsSection {
  readonly output: string;
  /** Null when the section never ended (the script was cut short). */
  readonly status: number | null;
}

const BEGIN = /^@@carapace-facts begin ([a-z0-9-]+)@@$/;
const END = /^@@carapace-facts end ([a-z0-9-]+) (\d+)@@$/;

/** Splits the facts script's stdout into its sections, by name. */
export function splitFactsOutput(stdout: string): Map<string, FactsSection> {
  const sections = new Map<string, FactsSection>();
  let current: { name: string; lines: string[] } | null = null;
  for (const line of stdout.split('\n')) {
    const begin = BEGIN.exec(line);
    if (begin) {
      if (current) sections.set(current.name, { output: current.lines.join('\n'), status: null });
      current = { name: begin[1] ?? '', lines: [] };
      continue;
    }
    const end = END.exec(line);
    if (end && current && end[1] === current.name) {
      sections.set(current.name, { output: current.lines.join('\n'), status: Number(end[2]) });
      current = null;
      continue;
    }
    current?.lines.push(line);
  }
  if (current) sections.set(current.name, { output: current.lines.join('\n'), status: null });
  return sections;
}

type Sections = ReadonlyMap<string, FactsSection>;

function failure(name: string, section: FactsSection): FactsParseError {
  if (section.status === null) return new FactsParseError(`${name} did not finish`);
  if (section.status === 127) return new FactsParseError(`${name} not found (exit 127)`);
  return new FactsParseError(`${name} failed (exit ${section.status})`);
}

function required(sections: Sections, name: string): string {
  const section = sections.get(name);
  if (!section) throw new FactsParseError(`no ${name} section in the output`);
  if (section.status !== 0) throw failure(name, section);
  return section.output;
}

function optional(sections: Sections, name: string): string | null {
  const section = sections.get(name);
  return section?.status === 0 ? section.output : null;
}

function check<T extends TSchema>(what: string, schema: T, value: unknown): Static<T> {
  if (Value.Check(schema, value)) return value;
  const first = [...Value.Errors(schema, value)][0];
  throw new FactsParseError(`unexpected ${what}${first ? `: ${first.instancePath || '/'} ${first.message}` : ''}`);
}

function json<T extends TSchema>(what: string, text: string, schema: T): Static<T> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new FactsParseError(`${what} is not JSON: ${(err as Error).message}`);
  }
  return check(`${what} output`, schema, value);
}

function firstLineOf(text: string): string {
  return text.split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '';
}

/** Parses os-release's `KEY=value` lines, with shell quoting. */
export function parseOsRelease(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const raw of text.split('\n')) {
    const m = /^([A-Za-z0-9_]+)=(.*)$/.exec(raw.trim());
    if (!m?.[1] || m[2] === undefined) continue;
    let value = m[2];
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1).replace(/\\(["\\$`])/g, '$1');
    else if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) value = value.slice(1, -1);
    values.set(m[1], value);
  }
  return values;
}

function parseCpu(cpuinfo: string, nproc: string | null): ServerFacts['cpu'] {
  let count = 0;
  let model: string | null = null;
  const modelKeys = ['model name', 'Processor', 'cpu model', 'cpu', 'uarch'];
  const models = new Map<string, string>();
  for (const line of cpuinfo.split('\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (key === 'processor' && /^\d+$/.test(value)) count += 1;
    if (modelKeys.includes(key) && value !== '' && !models.has(key)) models.set(key, value);
  }
  for (const key of modelKeys) {
    model ??= models.get(key) ?? null;
  }
  if (count === 0 && nproc !== null && /^\d+$/.test(nproc.trim())) count = Number(nproc.trim());
  if (count === 0) throw new FactsParseError('cannot tell the number of CPUs');
  return { count, model: model ?? 'unknown' };
}

function parseMemory(meminfo: string): ServerFacts['memory'] {
  const m = /^MemTotal:\s+(\d+)\s*kB$/m.exec(meminfo);
  if (!m?.[1]) throw new FactsParseError('no MemTotal in /proc/meminfo');
  return { total_bytes: Number(m[1]) * 1024 };
}

function flag(value: LsblkDevice['rota']): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  return value === '1' || value === 'true';
}

function bytes(value: LsblkDevice['size']): number {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : 0;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  return 0;
}

function text(value: string | null | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
}

/**
 * The mount point to report for a device: lsblk 2.37+ lists all of them (a root filesystem
 * also mounted elsewhere, bind mounts); the system one wins so the disk is seen as such.
 */
function mountpointOf(device: LsblkDevice): string | null {
  const all = [...(device.mountpoints ?? []), device.mountpoint].flatMap((m) => {
    const t = text(m);
    return t === null ? [] : [t];
  });
  return all.find((m) => m === '/') ?? all.find((m) => isSystemMountpoint(m)) ?? all[0] ?? null;
}

function children(device: LsblkDevice, where: string): LsblkDevice[] {
  return (device.children ?? []).map((child, i) => check(`lsblk device ${where}/children/${i}`, LsblkDeviceSchema, child));
}

/** RAM-backed block devices (brd's `ram0`, `zram0` swap): never storage, left out. */
const RAM_DISK = /^z?ram\d+$/;

function toPartition(device: LsblkDevice, where: string): Partition {
  return {
    name: device.name,
    path: text(device.path) ?? `/dev/${device.name}`,
    size_bytes: bytes(device.size),
    fstype: text(device.fstype),
    mountpoint: mountpointOf(device),
    holders: children(device, where).map((c) => c.name),
  };
}

function toDisk(device: LsblkDevice, where: string): Disk {
  const kids = children(device, where);
  // lsblk shows what sits on a device as its children: partitions, and holders (LVM, dm-crypt, md).
  return {
    name: device.name,
    path: text(device.path) ?? `/dev/${device.name}`,
    size_bytes: bytes(device.size),
    rotational: flag(device.rota),
    type: device.type,
    model: text(device.model),
    serial: text(device.serial),
    read_only: flag(device.ro),
    removable: flag(device.rm),
    fstype: text(device.fstype),
    mountpoint: mountpointOf(device),
    holders: kids.filter((c) => c.type !== 'part').map((c) => c.name),
    partitions: kids.flatMap((c, i) => (c.type === 'part' ? [toPartition(c, `${where}/children/${i}`)] : [])),
  };
}

/**
 * The facts of a top-level device as the host sees it: under the name of its node in the
 * host's `/dev` (`kernel_name` keeps the kernel's when they differ), with the signature
 * `blkid -p` found on that node when lsblk knew none (without udev, in a container, lsblk
 * cannot probe a node it looks for under the kernel's name). A renamed device whose node
 * could not be probed gets the signature `unknown`: nothing may be written to it on trust.
 */
function onHost(disk: Disk, kname: string, node: DevNode): Disk {
  const signature = node.signatures === null ? null : text(node.signatures.get('TYPE'));
  // The host's node has the kernel's name: an ordinary host, lsblk's names stand.
  if (node.name === kname) return { ...disk, fstype: disk.fstype ?? signature };
  return { ...disk, name: node.name, path: node.path, fstype: disk.fstype ?? (node.signatures === null ? UNREADABLE_SIGNATURE : signature), kernel_name: kname };
}

/**
 * The block devices of `lsblk -J -b -O` as facts: every top-level device (disks, loop
 * devices with type `loop`, optical drives with type `rom`), RAM disks left out.
 *
 * With `nodes` (the host's block device nodes, see `parseDevNodes`), only the devices that
 * have a node in the host's `/dev` (matched by major:minor) are kept, under that node's name
 * (see {@link onHost}): a container shares the kernel's sysfs, where lsblk finds the whole
 * machine's devices. Without them (an older capture), every device is kept, as lsblk names it.
 */
export function parseLsblk(output: string, nodes: readonly DevNode[] | null = null): Disk[] {
  const top = json('lsblk', output, LsblkOutputSchema);
  return top.blockdevices.flatMap((raw, i) => {
    const device = check(`lsblk device /blockdevices/${i}`, LsblkDeviceSchema, raw);
    const kname = text(device.kname) ?? device.name;
    if (RAM_DISK.test(kname)) return [];
    const disk = toDisk(device, `/blockdevices/${i}`);
    const majMin = text(device['maj:min']);
    if (nodes === null || majMin === null) return [disk];
    const node = hostNodeOf(nodes, majMin, kname);
    return node ? [onHost(disk, kname, node)] : [];
  });
}

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2})+$/i;

function parseRoutes(output: string | null, what: string): IpRoute[] {
  if (output === null || output.trim() === '') return [];
  return json(what, output, IpRouteOutputSchema).filter((r) => r.dst === undefined || r.dst === 'default' || r.dst === '0.0.0.0/0' || r.dst === '::/0');
}

/** The interfaces the preferred default route (lowest metric) leaves through, and its source. */
function bestDefault(routes: IpRoute[]): { devs: string[]; prefsrc: string | null } | null {
  if (routes.length === 0) return null;
  const metric = Math.min(...routes.map((r) => r.metric ?? 0));
  const best = routes.filter((r) => (r.metric ?? 0) === metric);
  const devs = best.flatMap((r) => [...(r.dev ? [r.dev] : []), ...(r.nexthops ?? []).flatMap((h) => (h.dev ? [h.dev] : []))]);
  return { devs: [...new Set(devs)], prefsrc: best.find((r) => r.prefsrc)?.prefsrc ?? null };
}

function toInterface(link: IpLink & { ifname: string }, defaultDevs: readonly string[]): NetworkInterface {
  const addresses = (link.addr_info ?? []).flatMap((a): NetworkInterface['addresses'] => {
    const family = a.family === 'inet' || a.family === 'inet6' ? a.family : null;
    return family && a.local && a.prefixlen !== undefined ? [{ family, address: a.local, prefix: a.prefixlen }] : [];
  });
  return {
    name: link.ifname,
    mac: link.address !== undefined && MAC.test(link.address) ? link.address.toLowerCase() : null,
    mtu: link.mtu ?? null,
    addresses,
    default_route: defaultDevs.includes(link.ifname),
  };
}

/**
 * The interfaces of `ip -j addr show`, the default route marked: the IPv4 default route's
 * interfaces, or the IPv6 one's when the host has no IPv4 default route. `default_ipv4` is
 * the IPv4 default route's source address, else the first IPv4 address of its interface.
 */
export function parseNetwork(ipAddr: string, route4: string | null, route6: string | null): Pick<ServerFacts, 'interfaces' | 'default_ipv4'> {
  const links = json('ip addr', ipAddr, IpAddrOutputSchema).filter((l): l is IpLink & { ifname: string } => l.ifname !== undefined);
  const v4 = bestDefault(parseRoutes(route4, 'ip -4 route'));
  const v6 = v4 ? null : bestDefault(parseRoutes(route6, 'ip -6 route'));
  const interfaces = links.map((l) => toInterface(l, (v4 ?? v6)?.devs ?? []));
  let defaultIpv4: string | null = null;
  if (v4) {
    const candidates = interfaces
      .filter((i) => v4.devs.includes(i.name))
      .flatMap((i) => i.addresses)
      .filter((a) => a.family === 'inet');
    defaultIpv4 = v4.prefsrc ?? candidates[0]?.address ?? null;
  }
  return { interfaces, default_ipv4: defaultIpv4 };
}

/** Builds and validates the facts from the script's sections. Throws {@link FactsParseError}. */
export function factsFromSections(sections: Sections, gatheredAt: number): ServerFacts {
  const hostname = firstLineOf(required(sections, 'hostname'));
  if (hostname === '') throw new FactsParseError('empty hostname');
  const os = parseOsRelease(required(sections, 'os-release'));
  // Absent from captures made before it existed, and failing only where sh has no glob or stat: lsblk alone then.
  const devNodes = optional(sections, 'dev-nodes');
  const facts: ServerFacts = {
    hostname,
    fqdn: firstLineOf(optional(sections, 'fqdn') ?? '') || hostname,
    os: {
      id: os.get('ID') || 'linux',
      version_id: os.get('VERSION_ID') ?? '',
      pretty_name: os.get('PRETTY_NAME') || os.get('NAME') || 'Linux',
      kernel: firstLineOf(required(sections, 'kernel')),
    },
    cpu: parseCpu(required(sections, 'cpuinfo'), optional(sections, 'nproc')),
    memory: parseMemory(required(sections, 'meminfo')),
    ...parseNetwork(required(sections, 'ip-addr'), optional(sections, 'ip-route4'), optional(sections, 'ip-route6')),
    disks: parseLsblk(required(sections, 'lsblk'), devNodes === null ? null : parseDevNodes(devNodes)),
    gathered_at: Math.floor(gatheredAt),
  };
  return check('facts', ServerFactsSchema, facts);
}

/**
 * Parses the stdout of the facts script (see `FACTS_SCRIPT`) into facts validated against
 * `ServerFactsSchema`. Throws {@link FactsParseError} naming the section at fault.
 */
export function parseFactsOutput(stdout: string, gatheredAt: number): ServerFacts {
  return factsFromSections(splitFactsOutput(stdout), gatheredAt);
}
