import { parsesAsCertificate } from '#x509';
import { base64Bytes, latin1, uint32 } from './bytes.js';

/**
 * Key types accepted in an OpenSSH public key line (`ssh-keygen` output and the
 * certificate variants).
 */
const SSH_KEY_TYPES: ReadonlySet<string> = new Set(
  [
    'ssh-ed25519',
    'ssh-rsa',
    'ssh-dss',
    'ecdsa-sha2-nistp256',
    'ecdsa-sha2-nistp384',
    'ecdsa-sha2-nistp521',
    'sk-ssh-ed25519@openssh.com',
    'sk-ecdsa-sha2-nistp256@openssh.com',
  ].flatMap((type) => [type, type.replace(/(@openssh\.com)?$/, '-cert-v01@openssh.com')]),
);

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
// shadow-utils' default rule (without the trailing `$` of machine accounts), max 32 chars.
const USERNAME = /^[a-z_][a-z0-9_-]{0,31}$/;
// Printable ASCII, inner spaces allowed: it travels in an HTTP header.
const TOKEN = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----\r?\n[\s\S]*?-----END CERTIFICATE-----/g;

function fail(option: string, problem: string): never {
  throw new TypeError(`cloud-init user-data: option "${option}" ${problem}`);
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return `${typeof value} ${value}`;
  return typeof value === 'object' ? 'an object' : typeof value;
}

/** The control plane URL, normalised to its origin (`http(s)://host[:port]`). */
export function checkUrl(value: unknown, option: string): string {
  if (typeof value !== 'string') fail(option, `must be a string, got ${describe(value)}`);
  // Scheme, authority, and nothing after it but an optional slash: no path, query, fragment.
  if (!/^https?:\/\/[^/?#\s\\]+\/?$/i.test(value)) {
    fail(option, `must be an http:// or https:// URL with no path, query or fragment, got ${describe(value)}`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(option, `is not a valid URL: ${describe(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(option, `must use http or https, got ${describe(value)}`);
  if (url.username !== '' || url.password !== '') fail(option, 'must not carry credentials');
  if (url.hostname === '') fail(option, `has no host: ${describe(value)}`);
  return url.origin;
}

/** The discovery token: non-empty printable ASCII (never echoed in errors). */
export function checkToken(value: unknown, option: string): string {
  if (typeof value !== 'string') fail(option, `must be a string, got ${typeof value}`);
  if (value === '') fail(option, 'must not be empty');
  if (!TOKEN.test(value)) {
    fail(option, 'must be printable ASCII without leading or trailing white space (it is sent in an HTTP header)');
  }
  return value;
}

function readSshString(blob: Uint8Array, offset: number): { value: Uint8Array; next: number } | undefined {
  if (offset + 4 > blob.length) return undefined;
  const length = uint32(blob, offset);
  const end = offset + 4 + length;
  if (end > blob.length) return undefined;
  return { value: blob.subarray(offset + 4, end), next: end };
}

/**
 * Whether a decoded key blob is well formed for its type: the type name, then the key
 * material. Plain keys are a sequence of SSH strings (RFC 4253 §6.6, RFC 5656 §3.1,
 * RFC 8709 §4) that must use up the blob exactly; certificates are only checked for their
 * type name and some content.
 */
function blobMatches(type: string, bytes: Uint8Array): boolean {
  const fields: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const field = readSshString(bytes, offset);
    if (field === undefined) {
      // Certificates go on with fixed-size integers after the nonce and the key.
      return type.endsWith('-cert-v01@openssh.com') && fields.length >= 2 && fields[0] !== undefined && latin1(fields[0]) === type;
    }
    fields.push(field.value);
    offset = field.next;
  }
  if (fields[0] === undefined || latin1(fields[0]) !== type || fields.length < 2) return false;
  if (type === 'ssh-ed25519') return fields.length === 2 && fields[1]?.length === 32;
  if (type.startsWith('ecdsa-sha2-')) return fields.length === 3 && fields[1] !== undefined && latin1(fields[1]) === type.slice('ecdsa-sha2-'.length);
  return true;
}

/**
 * One OpenSSH public key line, `<type> <base64 blob> [comment]`, trimmed. The blob must
 * decode and name the same key type as the line.
 */
export function checkPublicKey(value: unknown, option: string): string {
  if (typeof value !== 'string') fail(option, `must be a string, got ${describe(value)}`);
  const key = value.trim();
  if (/[\r\n]/.test(key)) fail(option, 'must be a single OpenSSH public key line');
  const [type = '', blob = '', ...rest] = key.split(/[ \t]+/);
  if (!SSH_KEY_TYPES.has(type)) {
    fail(option, `must be an OpenSSH public key ("ssh-ed25519 AAAA... comment"), got ${describe(value)}`);
  }
  if (!BASE64.test(blob) || blob.length % 4 !== 0) fail(option, `has an invalid base64 key blob: ${describe(value)}`);
  if (!blobMatches(type, base64Bytes(blob))) {
    fail(option, `has a key blob that is not a valid ${type} key: ${describe(value)}`);
  }
  const control = (char: string): boolean => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f;
  if (rest.some((part) => [...part].some(control))) fail(option, 'has control characters in its comment');
  return key;
}

/** A POSIX user name as `useradd` accepts it: `[a-z_][a-z0-9_-]*`, at most 32 characters. */
export function checkUsername(value: unknown, option: string): string {
  if (typeof value !== 'string') fail(option, `must be a string, got ${describe(value)}`);
  if (!USERNAME.test(value)) {
    fail(option, `must be a POSIX user name (lower case letter or "_", then letters, digits, "_" or "-"; at most 32), got ${describe(value)}`);
  }
  return value;
}

/** A positive integer number of seconds. */
export function checkSeconds(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    fail(option, `must be a positive integer (seconds), got ${describe(value)}`);
  }
  return value;
}

/** A boolean flag. */
export function checkBoolean(value: unknown, option: string): boolean {
  if (typeof value !== 'boolean') fail(option, `must be a boolean, got ${describe(value)}`);
  return value;
}

/**
 * A PEM bundle of one or more X.509 certificates (the CA, or a self-signed server
 * certificate to pin), with nothing but white space around them and no private key.
 * Returned with `\n` line ends and a single trailing newline.
 */
export function checkCaBundle(value: unknown, option: string): string {
  if (typeof value !== 'string') fail(option, `must be a string of PEM certificates, got ${describe(value)}`);
  if (/PRIVATE KEY/.test(value)) fail(option, 'contains a private key: give only the CA certificate(s)');
  const blocks = value.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) fail(option, 'must contain at least one "-----BEGIN CERTIFICATE-----" block');
  if (value.replace(PEM_CERTIFICATE, '').trim() !== '') fail(option, 'must contain only PEM certificates');
  for (const [index, block] of blocks.entries()) {
    if (!parsesAsCertificate(block)) fail(option, `certificate #${index + 1} cannot be parsed`);
  }
  return `${blocks.map((block) => block.replace(/\r\n/g, '\n')).join('\n')}\n`;
}

/** Rejects keys of `options` that are not in `known` (catches camelCase/snake_case mix-ups). */
export function checkKeys(options: unknown, known: readonly string[], fn: string): Record<string, unknown> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${fn}: expected an options object, got ${describe(options)}`);
  }
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    throw new TypeError(`${fn}: unknown option(s) ${unknown.map((key) => `"${key}"`).join(', ')}; expected ${known.join(', ')}`);
  }
  return options as Record<string, unknown>;
}
