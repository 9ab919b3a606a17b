/**
 * The runner's SSH identity: an ed25519 key pair written in OpenSSH's own formats, the
 * private key as `openssh-key-v1` (unencrypted, as `ssh-keygen -N ''` writes it) and the public
 * key as an `authorized_keys` line.
 *
 * The key material comes from Node's crypto; only its encoding is done here. ssh2's
 * `generateKeyPairSync('ed25519')` drops the leading zero bytes of the public key (mscdex/ssh2
 * #1390, #1513), so one key in 256 it writes has a 31-byte key blob that sshd, ssh-keygen and
 * ssh2 itself refuse: a runner that got one could log in nowhere. Keys written by those
 * versions are repaired in place by {@link repairEd25519PrivateKey}: the seed is intact, so the
 * identity stays the same and only its encoding changes.
 *
 * @packageDocumentation
 */
import { createPrivateKey, createPublicKey, randomBytes, type KeyObject } from 'node:crypto';

const KEY_TYPE = 'ssh-ed25519';
const MAGIC = Buffer.from('openssh-key-v1\0', 'latin1');
const PEM_BEGIN = '-----BEGIN OPENSSH PRIVATE KEY-----';
const PEM_END = '-----END OPENSSH PRIVATE KEY-----';
/** PKCS#8 DER of an ed25519 private key, up to its 32-byte seed (RFC 8410 §7). */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const ED25519_KEY_BYTES = 32;

/** An ed25519 key pair in OpenSSH's formats. */
export interface OpenSshKeyPair {
  /** The `openssh-key-v1` PEM text, ending with a newline. */
  readonly privateKey: string;
  /** `ssh-ed25519 <base64> [comment]`, without a newline. */
  readonly publicKey: string;
}

function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function uint32(value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32BE(value);
  return bytes;
}

/** The public key blob: `string "ssh-ed25519"`, `string key` (RFC 8709 §4). */
function publicBlob(publicKey: Buffer): Buffer {
  return Buffer.concat([sshString(KEY_TYPE), sshString(publicKey)]);
}

function rawKeys(privateKey: KeyObject): { seed: Buffer; publicKey: Buffer } {
  const jwk = privateKey.export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || jwk.d === undefined || jwk.x === undefined) throw new TypeError('not an ed25519 private key');
  return { seed: Buffer.from(jwk.d, 'base64url'), publicKey: Buffer.from(jwk.x, 'base64url') };
}

/** Encodes a Node ed25519 private key as an OpenSSH key pair (OpenSSH's PROTOCOL.key). */
export function encodeEd25519KeyPair(privateKey: KeyObject, comment = ''): OpenSshKeyPair {
  const { seed, publicKey } = rawKeys(privateKey);
  if (seed.length !== ED25519_KEY_BYTES || publicKey.length !== ED25519_KEY_BYTES) throw new TypeError('an ed25519 key has 32-byte halves');
  const check = randomBytes(4);
  const section = Buffer.concat([
    check,
    check,
    sshString(KEY_TYPE),
    sshString(publicKey),
    sshString(Buffer.concat([seed, publicKey])),
    sshString(comment),
  ]);
  // Padded with 1, 2, 3, ... to the cipher's block size, 8 for "none".
  const padding = Buffer.from(Array.from({ length: (8 - (section.length % 8)) % 8 }, (_, i) => i + 1));
  const body = Buffer.concat([
    MAGIC,
    sshString('none'),
    sshString('none'),
    sshString(''),
    uint32(1),
    sshString(publicBlob(publicKey)),
    sshString(Buffer.concat([section, padding])),
  ]);
  const lines = body.toString('base64').match(/.{1,70}/g) ?? [];
  const line = `${KEY_TYPE} ${publicBlob(publicKey).toString('base64')}`;
  return { privateKey: `${PEM_BEGIN}\n${lines.join('\n')}\n${PEM_END}\n`, publicKey: comment ? `${line} ${comment}` : line };
}

/**
 * A new ed25519 key pair in OpenSSH's formats, from 32 random bytes (the seed, as RFC 8032
 * makes a key). Not `generateKeyPairSync`: in Node 20 a process that makes many keys that way
 * can deadlock in the garbage collector (seen in this project's test of 20,000 keys: the main
 * thread waiting forever on a mutex in a key-generation job's destructor).
 */
export function generateEd25519KeyPair(comment = ''): OpenSshKeyPair {
  return encodeEd25519KeyPair(ed25519PrivateKeyFromSeed(randomBytes(ED25519_KEY_BYTES)), comment);
}

/** The Node private key of a 32-byte ed25519 seed. */
export function ed25519PrivateKeyFromSeed(seed: Buffer): KeyObject {
  if (seed.length !== ED25519_KEY_BYTES) throw new TypeError('an ed25519 seed has 32 bytes');
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

class Reader {
  private offset = 0;
  constructor(private readonly bytes: Buffer) {}
  uint32(): number {
    if (this.offset + 4 > this.bytes.length) throw new TypeError('truncated');
    const value = this.bytes.readUInt32BE(this.offset);
    this.offset += 4;
    return value;
  }
  string(): Buffer {
    const length = this.uint32();
    if (this.offset + length > this.bytes.length) throw new TypeError('truncated');
    const value = this.bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    return value;
  }
}

/** What an unencrypted OpenSSH ed25519 private key file holds, read leniently. */
interface StoredEd25519Key {
  readonly seed: Buffer;
  /** The public key as stored: 32 bytes, or fewer where a defective writer dropped leading zeros. */
  readonly storedPublicKey: Buffer;
  readonly comment: string;
}

/**
 * Reads an unencrypted OpenSSH ed25519 private key, accepting a public key shorter than 32
 * bytes (the ssh2 defect). Undefined for anything else: another key type, an encrypted key,
 * another format.
 */
export function readEd25519PrivateKey(text: string): StoredEd25519Key | undefined {
  const match = /-----BEGIN OPENSSH PRIVATE KEY-----([\s\S]*?)-----END OPENSSH PRIVATE KEY-----/.exec(text);
  if (!match) return undefined;
  try {
    const body = Buffer.from((match[1] ?? '').replace(/\s+/g, ''), 'base64');
    if (!body.subarray(0, MAGIC.length).equals(MAGIC)) return undefined;
    const reader = new Reader(body.subarray(MAGIC.length));
    if (reader.string().toString() !== 'none' || reader.string().toString() !== 'none') return undefined;
    reader.string();
    if (reader.uint32() !== 1) return undefined;
    reader.string();
    const section = new Reader(reader.string());
    if (section.uint32() !== section.uint32()) return undefined;
    if (section.string().toString() !== KEY_TYPE) return undefined;
    const storedPublicKey = section.string();
    const secret = section.string();
    const comment = section.string().toString('utf8');
    if (storedPublicKey.length > ED25519_KEY_BYTES || secret.length < ED25519_KEY_BYTES) return undefined;
    return { seed: Buffer.from(secret.subarray(0, ED25519_KEY_BYTES)), storedPublicKey: Buffer.from(storedPublicKey), comment };
  } catch {
    return undefined;
  }
}

/**
 * Why an `ssh-ed25519` public key line is not usable (`undefined` when it is, or when it is
 * of another key type, which this does not judge).
 */
export function ed25519PublicKeyProblem(line: string): string | undefined {
  const [type, blob] = line.trim().split(/\s+/);
  if (type !== KEY_TYPE) return undefined;
  try {
    const reader = new Reader(Buffer.from(blob ?? '', 'base64'));
    if (reader.string().toString() !== KEY_TYPE) return 'its key blob names another key type';
    const key = reader.string();
    if (key.length !== ED25519_KEY_BYTES) return `its key is ${key.length} bytes long, not ${ED25519_KEY_BYTES}`;
  } catch {
    return 'its key blob is truncated';
  }
  return undefined;
}

/**
 * The key pair of an OpenSSH ed25519 private key written by a defective generator, re-encoded:
 * the same seed, the public key derived from it again (32 bytes). Undefined when the text is
 * not such a key or needs no repair.
 */
export function repairEd25519PrivateKey(text: string): OpenSshKeyPair | undefined {
  const stored = readEd25519PrivateKey(text);
  if (stored === undefined) return undefined;
  const privateKey = ed25519PrivateKeyFromSeed(stored.seed);
  const derived = Buffer.from(createPublicKey(privateKey).export({ format: 'jwk' }).x ?? '', 'base64url');
  let zeros = 0;
  while (zeros < derived.length && derived[zeros] === 0) zeros += 1;
  // Only the defect's mark: the true key less its leading zero bytes. Anything else is left alone.
  if (zeros === 0 || !stored.storedPublicKey.equals(derived.subarray(zeros))) return undefined;
  return encodeEd25519KeyPair(privateKey, stored.comment);
}
