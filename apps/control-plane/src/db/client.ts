import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { sql } from 'drizzle-orm';
import type { Database, Dialect } from './database.js';
import { PostgresDatabase } from './postgres.js';
import { SqliteDatabase } from './sqlite.js';

const MIGRATIONS = resolve(dirname(fileURLToPath(import.meta.url)), '../../drizzle');

/** The folder of an engine's committed migrations. */
export function migrationsFolder(dialect: Dialect): string {
  return dialect === 'postgres' ? resolve(MIGRATIONS, 'postgres') : MIGRATIONS;
}

/** How many migrations this release has for an engine (its journal's entries). */
function expectedMigrations(dialect: Dialect): number {
  const journal = JSON.parse(readFileSync(resolve(migrationsFolder(dialect), 'meta/_journal.json'), 'utf8')) as { entries: unknown[] };
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
  const expected = expectedMigrations(db.dialect);
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
    return PostgresDatabase.open({ url: location, poolSize: options.poolSize ?? 10 }, migrationsFolder('postgres'));
  }
  return SqliteDatabase.open(location, migrationsFolder('sqlite'), { readonly: options.readonly ?? false });
}
