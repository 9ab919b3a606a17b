import { openDatabase, type Database } from '@carapace/control-plane';
import { testPostgresDatabase } from './postgres.js';

/**
 * Which engine the control planes of this test process store in: `CARAPACE_TEST_DATABASE=postgres`
 * (the vitest project `postgres`) gives each one a fresh database on the run's PostgreSQL
 * server; otherwise an in-memory SQLite database.
 */
export function testDialect(): 'sqlite' | 'postgres' {
  return process.env.CARAPACE_TEST_DATABASE === 'postgres' ? 'postgres' : 'sqlite';
}

/** A fresh, migrated database of the test's engine, and how to drop it after the control plane is closed. */
export async function openTestDatabase(): Promise<{ db: Database; url: string | null; drop(): Promise<void> }> {
  if (testDialect() === 'sqlite') return { db: await openDatabase(':memory:'), url: null, drop: async () => undefined };
  const fresh = await testPostgresDatabase();
  const db = await openDatabase(fresh.url, { poolSize: 10 });
  return { db, url: fresh.url, drop: () => fresh.drop() };
}
