import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Bytes of a key (AES-256). */
export const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** What every sealed value starts with: the format, then the key id. */
const PREFIX = 'cpk1:';

/** A key that is missing, wrong or unreadable, or a sealed value that does not open: the message is one line for an operator. */
export class SecretsError extends Error {}

/** The id of a key: 16 hex digits of an HMAC under it (names the key, reveals nothing of it). */
export function keyIdOf(key: Buffer): string {
  return createHmac('sha256', key).update('carapace secrets key id').digest('hex').slice(0, 16);
}

/** The check value of a key, stored in the database to recognise the key (an HMAC under it). */
export function checkValueOf(key: Buffer): string {
  return createHmac('sha256', key).update('carapace secrets key check').digest('base64');
}

/** Whether `key` is the key of a stored check value (compared in constant time). */
export function keyMatches(key: Buffer, checkValue: string): boolean {
  const expected = Buffer.from(checkValueOf(key), 'utf8');
  const stored = Buffer.from(checkValue, 'utf8');
  return expected.length === stored.length && timingSafeEqual(expected, stored);
}

/** A new random key. */
export function newKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

/** The key id a sealed value names, or null when the value is not sealed (clear text). */
export function sealedKeyId(value: string): string | null {
  if (!value.startsWith(PREFIX)) return null;
  const end = value.indexOf(':', PREFIX.length);
  return end < 0 ? null : value.slice(PREFIX.length, end);
}

/**
 * Encrypts and decrypts the secrets the database holds with AES-256-GCM under one key kept
 * outside the database. A sealed value is `cpk1:<key id>:<base64 of IV, tag, ciphertext>`;
 * the context (table and row, e.g. `cluster_files:<cluster>/<name>`) is authenticated with it,
 * so that a sealed value moved to another row does not open there.
 */
export class SecretBox {
  readonly keyId: string;
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== KEY_BYTES) throw new SecretsError(`a secrets key is ${KEY_BYTES} bytes, not ${key.length}`);
    this.key = Buffer.from(key);
    this.keyId = keyIdOf(key);
  }

  /** The check value of this box's key (see `checkValueOf`). */
  checkValue(): string {
    return checkValueOf(this.key);
  }

  seal(plain: string | Buffer, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(typeof plain === 'string' ? Buffer.from(plain, 'utf8') : plain), cipher.final()]);
    return `${PREFIX}${this.keyId}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** The clear bytes of a value this key sealed in this context; throws SecretsError otherwise. */
  openBytes(sealed: string, context: string): Buffer {
    const keyId = sealedKeyId(sealed);
    if (keyId === null) throw new SecretsError(`${context}: the stored value is not encrypted`);
    if (keyId !== this.keyId) throw new SecretsError(`${context}: encrypted with the key ${keyId}, not with this key (${this.keyId})`);
    const raw = Buffer.from(sealed.slice(PREFIX.length + keyId.length + 1), 'base64');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretsError(`${context}: the stored value is truncated`);
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      throw new SecretsError(`${context}: the stored value does not open with this key (altered, or moved from another row)`);
    }
  }

  open(sealed: string, context: string): string {
    return this.openBytes(sealed, context).toString('utf8');
  }
}
