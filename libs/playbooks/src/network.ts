/**
 * IPv4 networks: the network of a server's default route and the smallest network that
 * covers several of them (Ceph's `public_network` / `cluster_network`).
 *
 * @packageDocumentation
 */
import type { ServerFacts } from '@carapace/models';

/** An IPv4 network: its (masked) address in dotted quad form and its prefix length. */
export interface Ipv4Network {
  readonly address: string;
  readonly prefix: number;
}

/** Parses a dotted-quad IPv4 address into an unsigned 32-bit number; null if it is not one (leading zeros refused). */
export function parseIpv4(text: string): number | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return null;
    const n = Number(part);
    if (n > 255) return null;
    value = value * 256 + n;
  }
  return value;
}

/** Formats an unsigned 32-bit number as a dotted-quad IPv4 address. */
export function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

function mask(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** The network of `address/prefix` (host bits cleared). Throws on a malformed address or prefix. */
export function ipv4Network(address: string, prefix: number): Ipv4Network {
  const value = parseIpv4(address);
  if (value === null) throw new Error(`Not an IPv4 address: ${address}`);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > 32) throw new Error(`Not an IPv4 prefix length: ${prefix}`);
  return { address: formatIpv4((value & mask(prefix)) >>> 0), prefix };
}

/** `address/prefix`. */
export function formatCidr(network: Ipv4Network): string {
  return `${network.address}/${network.prefix}`;
}

/**
 * The smallest IPv4 network containing all of `networks`: its prefix is the longest
 * common prefix of their addresses, and no longer than the shortest of their prefixes.
 * E.g. `10.0.0.0/24` and `10.0.1.0/24` → `10.0.0.0/23`; `10.0.0.0/24` and `10.0.3.0/24` →
 * `10.0.0.0/22`; networks with nothing in common give `0.0.0.0/0`. Throws on an empty list.
 */
export function coveringNetwork(networks: readonly Ipv4Network[]): Ipv4Network {
  const [first, ...rest] = networks;
  if (!first) throw new Error('No network to cover');
  let address = parseIpv4(first.address);
  if (address === null) throw new Error(`Not an IPv4 address: ${first.address}`);
  let prefix = first.prefix;
  for (const network of rest) {
    const other = parseIpv4(network.address);
    if (other === null) throw new Error(`Not an IPv4 address: ${network.address}`);
    const differing = (address ^ other) >>> 0;
    prefix = Math.min(prefix, network.prefix, differing === 0 ? 32 : Math.clz32(differing));
    address = (address & mask(prefix)) >>> 0;
  }
  return { address: formatIpv4((address & mask(prefix)) >>> 0), prefix };
}

/**
 * The IPv4 network of a server's default route, from its facts: the address is
 * `default_ipv4`, or else the first IPv4 address of an interface marked `default_route`;
 * the prefix is the one of that address on its interface (32 if no interface lists it).
 * Null when the facts name no IPv4 default address.
 */
export function defaultIpv4Network(facts: ServerFacts): Ipv4Network | null {
  const defaultInterfaces = facts.interfaces.filter((i) => i.default_route);
  const address =
    facts.default_ipv4 ??
    defaultInterfaces.flatMap((i) => i.addresses).find((a) => a.family === 'inet' && parseIpv4(a.address) !== null)?.address ??
    null;
  if (address === null || parseIpv4(address) === null) return null;
  const interfaces = [...defaultInterfaces, ...facts.interfaces.filter((i) => !i.default_route)];
  const found = interfaces.flatMap((i) => i.addresses).find((a) => a.family === 'inet' && a.address === address);
  const prefix = found && Number.isInteger(found.prefix) && found.prefix >= 0 && found.prefix <= 32 ? found.prefix : 32;
  return ipv4Network(address, prefix);
}
