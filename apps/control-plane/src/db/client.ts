import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import * as schema from './schema/index.js';

/** The Drizzle database of the control plane. */
export type Db = BetterSQLite3Database<typeof schema> & { $client: Database.Database };

const MIGRATIONS = resolve(dirname(fileURLToPath(import.meta.url)), '../../drizzle');
const MAX_REGEXP_LENGTH = 256;

/**
 * Opens (creating if needed) the SQLite database at `path` (`:memory:` for tests), sets
 * WAL, foreign keys and a busy timeout, registers the `regexp` function and applies the
 * committed migrations.
 */
export function openDatabase(path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new Database(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const cache = new Map<string, RegExp>();
  sqlite.function('regexp', { deterministic: true }, (pattern: unknown, value: unknown) => {
    if (typeof pattern !== 'string' || value === null || value === undefined) return 0;
    let re = cache.get(pattern);
    if (!re) {
      re = compileRegexp(pattern);
      if (cache.size > 100) cache.clear();
      cache.set(pattern, re);
    }
    const text = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'bigint' ? value.toString() : '';
    return re.test(text) ? 1 : 0;
  });
  const db: Db = drizzle({ client: sqlite, schema });
  migrate(db, { migrationsFolder: MIGRATIONS });
  return db;
}

/** Compiles a user-given regular expression, refusing ones too long to be reasonable. */
export function compileRegexp(pattern: string): RegExp {
  if (pattern.length > MAX_REGEXP_LENGTH) throw new Error(`regexp longer than ${MAX_REGEXP_LENGTH} characters`);
  return new RegExp(pattern, 'u');
}
