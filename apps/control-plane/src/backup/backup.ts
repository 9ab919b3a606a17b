import { open } from 'node:fs/promises';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import type { Config } from '../config.js';
import { migrationsFolder } from '../db/client.js';
import { appliedMigrations, BackupFormatError, BACKUP_FORMAT, onlineCopy, readArchive, sealArchive, settleCopy, unsealArchive, type BackupFile, type BackupManifest } from '../db/sqlite-backup.js';
import { boxFor } from '../secrets/at-rest.js';
import { syncDirectory } from '../secrets/key-file.js';
import { VERSION } from '../version.js';
import { liveProcess } from './live.js';

export { BackupFormatError };

/** The database file of an installation on SQLite. */
export const DATABASE_FILE = 'carapace.db';
/** Files of the data directory besides the database that a restored installation needs (missing ones are skipped). */
const DATA_FILES = ['discovery-token', 'runner/id_ed25519', 'runner/id_ed25519.pub'];
/** Folders of the data directory whose every file a restore needs: mail written to files, not yet sent on. */
const DATA_FOLDERS = ['mail'];

/** A backup or a restore that cannot be done; the message (one line) says why. */
export class BackupError extends Error {}

type BackupConfig = Pick<Config, 'dataDir' | 'secrets' | 'database'>;

/** What a backup wrote. */
export interface BackupReport {
  readonly file: string;
  readonly bytes: number;
  readonly keyId: string;
  readonly files: number;
  readonly ms: number;
}

function refuseOnPostgres(config: BackupConfig): void {
  if (config.database.url) {
    throw new BackupError('the database is PostgreSQL: back it up with pg_dump and restore it with pg_restore (README, "Backups and secrets"); this command is for SQLite installations');
  }
}

function dataFiles(dataDir: string): string[] {
  const found = DATA_FILES.filter((f) => isFile(join(dataDir, f)));
  for (const folder of DATA_FOLDERS) {
    let names: string[] = [];
    try {
      names = readdirSync(join(dataDir, folder));
    } catch {
      continue;
    }
    for (const name of names.sort()) if (isFile(join(dataDir, folder, name))) found.push(`${folder}/${name}`);
  }
  return found;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function fileContext(path: string): string {
  return `backup_file:${path}`;
}

/** Makes a file durable, off the event loop (a scheduled backup runs in the serving process). */
async function syncFile(path: string): Promise<void> {
  const handle = await open(path, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * `backup FILE`: an online backup of a running (or stopped) SQLite installation, one file:
 * the database as SQLite's backup API copies it (see `onlineCopy`) with its secrets as they
 * are stored, encrypted, plus the data directory's files a restore needs, sealed with the
 * same key. The key itself is never in it. Written beside FILE and renamed into place once
 * complete: a failed backup leaves no FILE. Refuses to replace an existing FILE.
 */
export async function takeBackup(config: BackupConfig, file: string): Promise<BackupReport> {
  refuseOnPostgres(config);
  const started = performance.now();
  const target = resolve(file);
  const source = join(config.dataDir, DATABASE_FILE);
  if (!existsSync(source)) throw new BackupError(`no installation to back up: ${source} does not exist`);
  if (existsSync(target)) throw new BackupError(`${target} exists already: a backup never replaces a file`);
  if (!existsSync(dirname(target))) throw new BackupError(`the folder ${dirname(target)} does not exist`);
  const partial = `${target}.partial-${process.pid}`;
  rmSync(partial, { force: true });
  try {
    await onlineCopy(source, partial);
    chmodSync(partial, 0o600);
    // The copy's pages to disk off the event loop first: what follows writes little, unsynced, then syncs again.
    await syncFile(partial);
    const copied = settleCopy(partial);
    if (!copied) throw new BackupError('the secrets of this database are still in clear: start this release of the control plane on it once (it encrypts them), then back it up');
    const box = boxFor(config, copied, 'the secrets of this database are');
    const files: BackupFile[] = dataFiles(config.dataDir).map((path) => {
      const full = join(config.dataDir, path);
      return { path, mode: statSync(full).mode & 0o777, sealed: box.seal(readFileSync(full), fileContext(path)) };
    });
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      createdAt: new Date().toISOString(),
      version: VERSION,
      migrations: appliedMigrations(partial),
      keyId: box.keyId,
    };
    sealArchive(partial, manifest, files);
    await syncFile(partial);
    renameSync(partial, target);
    syncDirectory(dirname(target));
    return { file: target, bytes: statSync(target).size, keyId: box.keyId, files: files.length, ms: Math.round(performance.now() - started) };
  } catch (err) {
    rmSync(partial, { force: true });
    rmSync(`${partial}-journal`, { force: true });
    throw err;
  }
}

/** What a restore did. */
export interface RestoreReport {
  readonly dataDir: string;
  readonly createdAt: string;
  readonly version: string;
  readonly keyId: string;
  readonly files: number;
  readonly secrets: number;
}

/**
 * `restore FILE`: makes the data directory an installation restored from a backup, all or
 * nothing. Refuses a data directory that holds an installation (live or not: it is never
 * overwritten), a backup of a newer schema, and a key that is missing or not the backup's
 * (one line says which key the backup needs). Every secret and file of the backup is opened
 * before anything is written; the restore is prepared in a folder of the data directory and
 * the database moved into place last, so that an installation exists only once complete.
 */
export async function restoreBackup(config: BackupConfig, file: string): Promise<RestoreReport> {
  refuseOnPostgres(config);
  const source = resolve(file);
  if (!isFile(source)) throw new BackupError(`no backup at ${source}`);
  const dataDir = config.dataDir;
  const database = join(dataDir, DATABASE_FILE);
  if ([database, `${database}-wal`, `${database}-shm`].some((f) => existsSync(f))) {
    const pid = liveProcess(dataDir);
    throw new BackupError(
      `${dataDir} holds an installation already (${DATABASE_FILE}${pid ? `, its control plane running as process ${pid}` : ''}): a restore never overwrites one; restore into a new data directory (CARAPACE_DATA_DIR), or stop that control plane and move its data directory away first`,
    );
  }
  const contents = await readArchive(source, migrationsFolder('sqlite')).catch((err: unknown) => {
    if (err instanceof BackupFormatError) throw new BackupError(err.message);
    throw err;
  });
  const { manifest } = contents;
  const release = releaseMigrations();
  if (manifest.migrations > release) throw new BackupError(`${source} was made by a newer release (${manifest.version}, ${manifest.migrations} migrations; this release has ${release}): restore it with that release`);
  if (!contents.key || contents.key.id !== manifest.keyId) throw new BackupError(`${source} is damaged: its database's key record does not match its manifest`);
  const box = boxFor(config, contents.key, `${source} holds secrets`);
  for (const secret of contents.secrets) box.openBytes(secret.value, secret.context);
  const opened = contents.files.map((f) => {
    const inside = resolve(dataDir, f.path);
    if (!inside.startsWith(dataDir + sep) || f.path.includes('..')) throw new BackupError(`${source} is damaged: it names a file outside the data directory (${f.path})`);
    return { path: f.path, mode: f.mode & 0o700, content: box.openBytes(f.sealed, fileContext(f.path)) };
  });
  const present = opened.map((f) => join(dataDir, f.path)).filter((path) => existsSync(path));
  if (present.length > 0) throw new BackupError(`the data directory holds files the restore would replace (${present.join(', ')}): restore into a new data directory`);

  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const staging = mkdtempSync(join(dataDir, '.restore-'));
  const moved: string[] = [];
  try {
    const staged = join(staging, DATABASE_FILE);
    copyFileSync(source, staged);
    chmodSync(staged, 0o600);
    unsealArchive(staged);
    for (const f of opened) {
      const at = join(staging, f.path);
      mkdirSync(dirname(at), { recursive: true, mode: 0o700 });
      writeFileSync(at, f.content, { mode: f.mode || 0o600 });
      chmodSync(at, f.mode || 0o600);
    }
    for (const f of opened) {
      const to = join(dataDir, f.path);
      mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
      renameSync(join(staging, f.path), to);
      moved.push(to);
    }
    if (existsSync(database)) throw new BackupError(`${database} appeared during the restore: nothing was restored`);
    renameSync(staged, database);
    syncDirectory(dataDir);
  } catch (err) {
    for (const path of moved) rmSync(path, { force: true });
    throw err;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return { dataDir, createdAt: manifest.createdAt, version: manifest.version, keyId: manifest.keyId, files: opened.length, secrets: contents.secrets.length };
}

function releaseMigrations(): number {
  const journal = JSON.parse(readFileSync(join(migrationsFolder('sqlite'), 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
  return journal.entries.length;
}

/** The backups of a folder that a schedule wrote, oldest first. */
export function scheduledBackups(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((n) => SCHEDULED_NAME.test(n)).sort().map((n) => join(dir, n));
}

/** `carapace-20260102T030405Z.backup`: names that sort by time. */
const SCHEDULED_NAME = /^carapace-\d{8}T\d{6}(\d{3})?Z\.backup$/;

/** The name of a scheduled backup taken at `date`. */
export function scheduledName(date: Date): string {
  return `carapace-${date.toISOString().replace(/[-:]/g, '').replace(/\.(\d{3})Z$/, '$1Z')}.backup`;
}
