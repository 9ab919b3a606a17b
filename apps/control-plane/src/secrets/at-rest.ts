import { existsSync, linkSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { EncryptionRepository, type StoredKey } from '../db/encryption.repository.js';
import { keyFilePath, keySource, readKey, readKeyFile, syncDirectory, writeKeyFile } from './key-file.js';
import { keyIdOf, keyMatches, newKey, SecretBox, sealedKeyId, SecretsError } from './secret-box.js';

type KeyConfig = Pick<Config, 'dataDir' | 'secrets'>;

/** The key file of a rotation under way: written before the database changes, moved into place after. */
export function pendingKeyFile(config: KeyConfig): string {
  return `${keyFilePath(config)}.new`;
}

/** The one-line reason a key cannot open what `stored` names. */
export function missingKeyMessage(what: string, stored: StoredKey, config: KeyConfig): string {
  return `${what} encrypted with the key ${stored.id}, and there is no key at ${keySource(config)}: put that installation's secrets.key there, or name it with CARAPACE_SECRETS_KEY_FILE (or CARAPACE_SECRETS_KEY)`;
}

export function wrongKeyMessage(what: string, stored: StoredKey, box: SecretBox, config: KeyConfig): string {
  return `${what} encrypted with the key ${stored.id}, not with the key at ${keySource(config)} (key ${box.keyId})`;
}

/**
 * The last step of a rotation: the old key file kept as `<file>.retired-<old key id>` (backups
 * taken before need it; none when there was no old file), then the new key moved into its
 * place. Returns where the old key went.
 */
function promoteKeyFile(file: string, pending: string, oldKeyId: string | null): string | null {
  const retired = oldKeyId === null ? null : `${file}.retired-${oldKeyId}`;
  if (retired) {
    rmSync(retired, { force: true });
    linkSync(file, retired);
  }
  renameSync(pending, file);
  syncDirectory(dirname(file));
  return retired;
}

/**
 * A rotation stopped between its commit and the move of its new key file into place leaves
 * the database under the key of `<keyFile>.new`: the move is finished here. Returns the box
 * of that key when it did so.
 */
function finishInterruptedRotation(config: KeyConfig, stored: StoredKey, log: Pick<Logger, 'warn'> | null): SecretBox | null {
  if (config.secrets.key !== null) return null;
  const pending = pendingKeyFile(config);
  const key = readKeyFile(pending);
  if (!key || !keyMatches(key, stored.checkValue)) return null;
  const file = keyFilePath(config);
  const old = readKeyFile(file);
  promoteKeyFile(file, pending, old ? keyIdOf(old) : null);
  log?.warn({ keyId: stored.id, file }, 'finished an interrupted key rotation: the new key is now the key file');
  return new SecretBox(key);
}

/**
 * The box that opens the secrets of this database, checked against the key it records;
 * throws SecretsError (one line) when the key is missing or another one. Null when the
 * database's secrets are still in clear (nothing recorded).
 */
export async function recordedKeyBox(config: KeyConfig, db: Database, log: Pick<Logger, 'warn'> | null = null): Promise<SecretBox | null> {
  const stored = await new EncryptionRepository(db).current();
  if (!stored) return null;
  return boxFor(config, stored, 'the secrets of this database are', log);
}

/** The configured key's box if it is the key `stored` names; throws SecretsError otherwise. */
export function boxFor(config: KeyConfig, stored: StoredKey, what: string, log: Pick<Logger, 'warn'> | null = null): SecretBox {
  const loaded = readKey(config);
  if (loaded && keyMatches(loaded.key, stored.checkValue)) return new SecretBox(loaded.key);
  const finished = finishInterruptedRotation(config, stored, log);
  if (finished) return finished;
  if (!loaded) throw new SecretsError(missingKeyMessage(what, stored, config));
  throw new SecretsError(wrongKeyMessage(what, stored, new SecretBox(loaded.key), config));
}

/**
 * At start: the box of the secrets key, once the database's secrets are encrypted with it.
 * The first start of this release on a database whose secrets are in clear (a new one, or
 * one from before) encrypts them all in one transaction, with the configured key or with a
 * new key file (0600) made for it; later starts check the key against the database.
 */
export async function openSecrets(config: KeyConfig, db: Database, log: Logger, nowS: number): Promise<SecretBox> {
  const repo = new EncryptionRepository(db);
  const existing = await recordedKeyBox(config, db, log);
  if (existing) return existing;
  let loaded = readKey(config);
  if (!loaded) {
    const file = keyFilePath(config);
    try {
      writeKeyFile(file, newKey());
      log.info({ file }, 'created the key the secrets in the database are encrypted with (keep a copy of it apart from the backups)');
    } catch (err) {
      // Another process sharing the data directory made it meanwhile: that one is the key.
      if (!existsSync(file)) throw err;
    }
    loaded = readKey(config);
    if (!loaded) throw new SecretsError(`${file} was written but cannot be read back`);
  }
  const box = new SecretBox(loaded.key);
  let encrypted = 0;
  const claimed = await db.transaction(async () => {
    if (!(await repo.claim({ id: box.keyId, checkValue: box.checkValue() }, nowS))) return false;
    encrypted = await repo.rewriteAll((value, context) => (sealedKeyId(value) === null ? box.seal(value, context) : value));
    return true;
  });
  if (claimed) {
    log.info({ keyId: box.keyId, encrypted }, 'the secrets in the database are encrypted at rest');
    return box;
  }
  // Another replica encrypted them meanwhile: with this key, or the message says so.
  const winner = await recordedKeyBox(config, db, log);
  if (!winner) throw new SecretsError('the record of the secrets key vanished while it was written');
  return winner;
}

/** What a rotation did. */
export interface RotationReport {
  readonly oldKeyId: string;
  readonly newKeyId: string;
  /** Secret values re-encrypted. */
  readonly values: number;
  /** Where the new key is. */
  readonly newKeyFile: string;
  /** Where the old key was moved (a key file), or null (a key from the environment). */
  readonly retiredKeyFile: string | null;
}

/**
 * Re-encrypts every secret of the database under a new key, in one transaction, and records
 * it: all or nothing. The new key file is written first (`<keyFile>.new`, or `newKeyFile` when
 * the key comes from CARAPACE_SECRETS_KEY); after the commit the old key file is moved to
 * `<keyFile>.retired-<old key id>` and the new one into its place (a start finishes that move
 * if it was interrupted). The control plane must be stopped (every replica).
 */
export async function rotateKey(config: KeyConfig, db: Database, nowS: number, options: { newKeyFile?: string } = {}): Promise<RotationReport> {
  const repo = new EncryptionRepository(db);
  const stored = await repo.current();
  if (!stored) throw new SecretsError('the secrets of this database are not encrypted yet: start this release of the control plane on it once, then rotate');
  const oldBox = boxFor(config, stored, 'the secrets of this database are');
  const fromEnv = config.secrets.key !== null;
  if (fromEnv && !options.newKeyFile) {
    throw new SecretsError('the key comes from CARAPACE_SECRETS_KEY: name the file to write the new key to with --new-key-file FILE');
  }
  const target = options.newKeyFile ?? pendingKeyFile(config);
  if (existsSync(target)) throw new SecretsError(`${target} exists already (a rotation under way?): move it away first`);
  const key = newKey();
  const newBox = new SecretBox(key);
  writeKeyFile(target, key);
  let values = 0;
  try {
    await db.transaction(async () => {
      values = await repo.rewriteAll((value, context) => newBox.seal(oldBox.openBytes(value, context), context));
      await repo.replace({ id: newBox.keyId, checkValue: newBox.checkValue() }, nowS);
    });
  } catch (err) {
    rmSync(target, { force: true });
    throw err;
  }
  if (fromEnv) return { oldKeyId: oldBox.keyId, newKeyId: newBox.keyId, values, newKeyFile: target, retiredKeyFile: null };
  const file = keyFilePath(config);
  const retired = promoteKeyFile(file, target, oldBox.keyId);
  return { oldKeyId: oldBox.keyId, newKeyId: newBox.keyId, values, newKeyFile: file, retiredKeyFile: retired };
}
