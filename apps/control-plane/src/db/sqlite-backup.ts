import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { SqliteDatabase } from './sqlite.js';
import { EncryptionRepository, type SecretValue, type StoredKey } from './encryption.repository.js';

/** The format of the backup files this release writes and reads. */
export const BACKUP_FORMAT = '1';
const MANIFEST = 'carapace_backup';
const FILES = 'carapace_backup_files';

/** What a backup says of itself. */
export interface BackupManifest {
  readonly format: string;
  readonly createdAt: string;
  readonly version: string;
  /** Migrations applied to the database when it was copied. */
  readonly migrations: number;
  readonly keyId: string;
}

/** A file of the data directory, as a backup holds it: its content sealed with the secrets key. */
export interface BackupFile {
  readonly path: string;
  readonly mode: number;
  readonly sealed: string;
}

/** A backup, read. */
export interface BackupContents {
  readonly manifest: BackupManifest;
  readonly files: BackupFile[];
  readonly key: StoredKey | undefined;
  /** Every secret value of the database in the backup. */
  readonly secrets: SecretValue[];
}

/** A file that is not a backup, or one this release cannot restore. */
export class BackupFormatError extends Error {}

/**
 * The online copy of a live SQLite database, in a worker thread so that the event loop of a
 * control plane taking a scheduled backup never waits on it. SQLite's backup API copies every
 * page in one step, inside one read transaction of the source: in WAL mode a reader blocks no
 * writer, and the copy is the database as it was at that step's start (every transaction
 * committed before it, none after). Stepping a few pages at a time would instead restart
 * the copy at each write of the running control plane, its own connection being another one.
 */
export function onlineCopy(source: string, target: string): Promise<{ pages: number }> {
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  // Plain JavaScript, evaluated: the same in the sources (TypeScript under a loader) and the build.
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const Database = require(workerData.module);
    const db = new Database(workerData.source, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    db.backup(workerData.target, { progress: () => 0x7fffffff }).then(
      (p) => { db.close(); parentPort.postMessage({ ok: true, pages: p.totalPages }); },
      (e) => { db.close(); parentPort.postMessage({ ok: false, message: String((e && e.message) || e) }); },
    );`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData: { module, source, target } });
    let answered = false;
    worker.once('message', (m: { ok: boolean; pages?: number; message?: string }) => {
      answered = true;
      if (m.ok) resolve({ pages: m.pages ?? 0 });
      else reject(new Error(`the online copy failed: ${m.message ?? 'unknown error'}`));
    });
    worker.once('error', (err) => {
      answered = true;
      reject(err);
    });
    worker.once('exit', (code) => {
      if (!answered) reject(new Error(`the online copy stopped (worker exit ${code})`));
    });
  });
}

/**
 * The online copy at `path` settled into one file (a rollback journal, not WAL: a backup is
 * one file); the key its secrets are under, as it records it (undefined: in clear).
 */
export function settleCopy(path: string): StoredKey | undefined {
  const db = new BetterSqlite3(path, { fileMustExist: true });
  try {
    // The caller syncs the file once done (off the event loop).
    db.pragma('synchronous = OFF');
    db.pragma('journal_mode = DELETE');
    return db.prepare('SELECT id, check_value AS checkValue FROM encryption_keys ORDER BY time_created DESC LIMIT 1').get() as StoredKey | undefined;
  } finally {
    db.close();
  }
}

/**
 * Makes the copy at `path` a backup: its manifest and the data directory's files in two
 * tables of their own, in one file (rollback journal, not WAL). Checks that the copy's
 * secrets are under the key the manifest names.
 */
export function sealArchive(path: string, manifest: BackupManifest, files: readonly BackupFile[]): void {
  const db = new BetterSqlite3(path, { fileMustExist: true });
  try {
    db.pragma('synchronous = OFF');
    db.pragma('journal_mode = DELETE');
    const key = db.prepare('SELECT id FROM encryption_keys').get() as { id: string } | undefined;
    if (key?.id !== manifest.keyId) throw new Error(`the copy's secrets are under the key ${key?.id ?? 'none'}, not ${manifest.keyId}`);
    db.exec(`CREATE TABLE ${MANIFEST} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
             CREATE TABLE ${FILES} (path TEXT PRIMARY KEY NOT NULL, mode INTEGER NOT NULL, content TEXT NOT NULL);`);
    const putKey = db.prepare(`INSERT INTO ${MANIFEST} (key, value) VALUES (?, ?)`);
    const putFile = db.prepare(`INSERT INTO ${FILES} (path, mode, content) VALUES (?, ?, ?)`);
    db.transaction(() => {
      for (const [k, v] of Object.entries(manifest)) putKey.run(k, String(v));
      for (const f of files) putFile.run(f.path, f.mode, f.sealed);
    })();
  } finally {
    db.close();
  }
}

/** Reads a backup (without changing it); BackupFormatError when it is not one this release reads. */
export async function readArchive(path: string, migrationsFolder: string): Promise<BackupContents> {
  let db: SqliteDatabase;
  try {
    db = SqliteDatabase.open(path, migrationsFolder, { readonly: true });
  } catch (err) {
    throw new BackupFormatError(`${path} is not a Carapace backup (${(err as Error).message})`);
  }
  try {
    const c = db.connection;
    let rows: { key: string; value: string }[];
    try {
      rows = c.prepare(`SELECT key, value FROM ${MANIFEST}`).all() as { key: string; value: string }[];
    } catch {
      throw new BackupFormatError(`${path} is not a Carapace backup (no manifest)`);
    }
    const m = new Map(rows.map((r) => [r.key, r.value]));
    if (m.get('format') !== BACKUP_FORMAT) throw new BackupFormatError(`${path} is a backup of format ${m.get('format') ?? '?'}; this release reads format ${BACKUP_FORMAT}`);
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      createdAt: m.get('createdAt') ?? '',
      version: m.get('version') ?? '',
      migrations: Number(m.get('migrations') ?? 0),
      keyId: m.get('keyId') ?? '',
    };
    const files = (c.prepare(`SELECT path, mode, content AS sealed FROM ${FILES} ORDER BY path`).all() as BackupFile[]).map((f) => ({ ...f }));
    const repo = new EncryptionRepository(db);
    return { manifest, files, key: await repo.current(), secrets: await repo.all() };
  } finally {
    await db.close();
  }
}

/** The restored copy of a backup at `path` made a plain database again: without the backup's tables, in WAL mode, checked. */
export function unsealArchive(path: string): void {
  const db = new BetterSqlite3(path, { fileMustExist: true });
  try {
    db.exec(`DROP TABLE ${MANIFEST}; DROP TABLE ${FILES};`);
    db.exec('VACUUM');
    db.pragma('journal_mode = WAL');
    const check = db.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new Error(`the restored database fails SQLite's check: ${String(check)}`);
  } finally {
    db.close();
  }
}

/** The migrations applied to an SQLite database file (read only). */
export function appliedMigrations(path: string): number {
  const db = new BetterSqlite3(path, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM __drizzle_migrations').get() as { n: number }).n;
  } finally {
    db.close();
  }
}
