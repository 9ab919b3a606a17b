import { createHash, timingSafeEqual } from 'node:crypto';
import ssh2 from 'ssh2';
import type { ServerHostKeyAlgorithm } from 'ssh2';

/** A host key split into its type and its SSH wire-format blob. */
export interface ParsedHostKey {
  /** The key type, e.g. `ssh-ed25519`. */
  readonly type: string;
  /** The public key blob (what known_hosts holds in base64). */
  readonly blob: Buffer;
}

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The type string at the head of a public key blob, or null when the blob is malformed. */
function blobType(blob: Buffer): string | null {
  if (blob.length < 4) return null;
  const length = blob.readUInt32BE(0);
  if (length === 0 || length > 64 || 4 + length > blob.length) return null;
  const type = blob.subarray(4, 4 + length).toString('latin1');
  return /^[\x21-\x7e]+$/.test(type) ? type : null;
}

/**
 * Formats a public key blob as known_hosts does: `<type> <base64>`, e.g.
 * `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA...`.
 */
export function formatHostKey(blob: Buffer): string {
  return `${blobType(blob) ?? 'unknown'} ${blob.toString('base64')}`;
}

/**
 * Parses a host key in known_hosts form (`<type> <base64>`, an optional trailing comment is
 * ignored). Returns null unless the base64 is canonical, the blob is a well-formed public key
 * and it carries the declared type.
 */
export function parseHostKey(text: string): ParsedHostKey | null {
  const [type, data] = text.trim().split(/\s+/);
  if (type === undefined || data === undefined || !BASE64.test(data)) return null;
  const blob = Buffer.from(data, 'base64');
  if (blob.toString('base64') !== data || blobType(blob) !== type) return null;
  const key = ssh2.utils.parseKey(`${type} ${data}`);
  if (key instanceof Error || Array.isArray(key) || key.type !== type) return null;
  return { type, blob };
}

/** Compares two key blobs in constant time (for equal lengths; the length is not secret). */
export function hostKeyBlobsEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** OpenSSH's fingerprint of a key blob: `SHA256:` and the unpadded base64 of its SHA-256. */
export function hostKeyFingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** A host key shortened for a message: `ssh-ed25519 SHA256:...`. */
export function describeHostKey(key: ParsedHostKey): string {
  return `${key.type} ${hostKeyFingerprint(key.blob)}`;
}

/**
 * The host key algorithms that prove possession of a key of this type, in preference order,
 * or null when ssh2 cannot verify such a key (certificates, security keys).
 */
export function hostKeyAlgorithms(type: string): ServerHostKeyAlgorithm[] | null {
  switch (type) {
    case 'ssh-rsa':
      return ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'];
    case 'ssh-ed25519':
    case 'ecdsa-sha2-nistp256':
    case 'ecdsa-sha2-nistp384':
    case 'ecdsa-sha2-nistp521':
    case 'ssh-dss':
      return [type];
    default:
      return null;
  }
}
