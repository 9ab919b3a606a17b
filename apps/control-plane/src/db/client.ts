import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import type { Database, Dialect } from './database.js';
import { POSTGRES_MIGRATIONS } from './postgres-engine.js';
import { PostgresDatabase } from './postgres.js';
import { SQLITE_MIGRATIONS } from './sqlite-engine.js';
import { SqliteDatabase } from './sqlite.js';

const MIGRATIONS: Readonly<Record<Dialect, string>> = { sqlite: SQLITE_MIGRATIONS, postgres: POSTGRES_MIGRATIONS };

/**
 * The folder of the committed migrations of the engine named (for callers that work on one
 * engine's files, such as SQLite's backups; a database's own is `db.engine.migrationsFolder`).
 */
export function migrationsFolder(engine: Dialect): string {
  return MIGRATIONS[engine];
}

/** How many migrations this release has for a database's engine (its journal's entries). */
function expectedMigrations(db: Database): number {
  const journal = JSON.parse(readFileSync(resolve(db.engine.migrationsFolder, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
  return journal.entries.length;
}

/**
 * Whether the database can serve this release: it answers, and holds at least the
 * migrations this release has (a newer replica may have applied more). The reason when not.
 */
export async function databaseProblem(db: Database): Promise<string | null> {
  let applied: number;
  try {
    applied = (await db.get<{ n: number }>(sql`SELECT count(*) AS n FROM __drizzle_migrations`))?.n ?? 0;
  } catch (e) {
    return `the database does not answer: ${(e as Error).message}`;
  }
  const expected = expectedMigrations(db);
  return applied < expected ? `the database has ${applied} of the ${expected} migrations of this release` : null;
}

/** Whether a database location is a PostgreSQL URL (else it is the path of an SQLite file). */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** How to open the database. */
export interface DatabaseOptions {
  /** Connections of a PostgreSQL pool. */
  readonly poolSize?: number;
  /** SQLite: open an existing file read only, without migrating it. */
  readonly readonly?: boolean;
}

/**
 * Opens the control plane's database and applies the committed migrations: PostgreSQL when
 * `location` is a `postgres://` URL, else the SQLite file at that path (`:memory:` for tests).
 */
export async function openDatabase(location: string, options: DatabaseOptions = {}): Promise<Database> {
  if (isPostgresUrl(location)) {
    return PostgresDatabase.open({ url: location, poolSize: options.poolSize ?? 10 }, POSTGRES_MIGRATIONS);
  }
  return SqliteDatabase.open(location, SQLITE_MIGRATIONS, { readonly: options.readonly ?? false });
}
