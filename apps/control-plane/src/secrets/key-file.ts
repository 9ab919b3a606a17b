import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config } from '../config.js';
import { SECRETS_KEY_FILE } from '../config.js';
import { KEY_BYTES, SecretsError } from './secret-box.js';

/** Where a key comes from, for messages: the file, or the environment variable. */
export interface LoadedKey {
  readonly key: Buffer;
  readonly source: string;
}

/** The key file of a configuration (`secrets.keyFile`, default `<dataDir>/secrets.key`). */
export function keyFilePath(config: Pick<Config, 'dataDir' | 'secrets'>): string {
  return config.secrets.keyFile ?? join(config.dataDir, SECRETS_KEY_FILE);
}

/** Where the key is looked for, as a message says it. */
export function keySource(config: Pick<Config, 'dataDir' | 'secrets'>): string {
  return config.secrets.key !== null ? 'CARAPACE_SECRETS_KEY' : keyFilePath(config);
}

/** A key from its text: 32 bytes in base64 (the key file's one line). */
export function parseKey(text: string, source: string): Buffer {
  const line = text.trim();
  const key = /^[A-Za-z0-9+/]{43}=$/.test(line) ? Buffer.from(line, 'base64') : null;
  if (!key || key.length !== KEY_BYTES) throw new SecretsError(`${source} does not hold a secrets key (${KEY_BYTES} bytes in base64, on one line)`);
  return key;
}

/**
 * Reads a key file: it must be readable by its owner only (mode 0600 or stricter), like an
 * SSH private key. Null when there is no such file.
 */
export function readKeyFile(file: string): Buffer | null {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new SecretsError(`cannot read the secrets key ${file}: ${(err as Error).message}`);
  }
  if ((mode & 0o077) !== 0) {
    throw new SecretsError(`the secrets key ${file} is open to other users (mode ${(mode & 0o777).toString(8)}): chmod 600 ${file}`);
  }
  return parseKey(readFileSync(file, 'utf8'), file);
}

/** The configured key (`secrets.key`, else the key file), or null when there is none yet. */
export function readKey(config: Pick<Config, 'dataDir' | 'secrets'>): LoadedKey | null {
  if (config.secrets.key !== null) return { key: parseKey(config.secrets.key, 'CARAPACE_SECRETS_KEY'), source: 'CARAPACE_SECRETS_KEY' };
  const file = keyFilePath(config);
  const key = readKeyFile(file);
  return key ? { key, source: file } : null;
}

/** Writes a new key file (mode 0600, synced); refuses to replace one. */
export function writeKeyFile(file: string, key: Buffer): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  if (existsSync(file)) throw new SecretsError(`${file} exists already: it is not replaced`);
  const fd = openSync(file, 'wx', 0o600);
  try {
    writeSync(fd, `${key.toString('base64')}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  syncDirectory(dirname(file));
}

/** Makes a directory's entries (a new or renamed file) durable. */
export function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
