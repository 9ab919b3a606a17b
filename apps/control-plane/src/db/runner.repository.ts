import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** A runner allowed to connect. */
export interface RunnerRow {
  name: string;
  tokenHash: string;
  labels: Record<string, string>;
  timeCreated: number;
  createdBy: string | null;
  revokedAt: number | null;
}

interface StoredRunner {
  name: string;
  token_hash: string;
  labels: string;
  time_created: number;
  created_by: string | null;
  revoked_at: number | null;
}

function fromStored(r: StoredRunner): RunnerRow {
  return {
    name: r.name,
    tokenHash: r.token_hash,
    labels: JSON.parse(r.labels) as Record<string, string>,
    timeCreated: r.time_created,
    createdBy: r.created_by,
    revokedAt: r.revoked_at,
  };
}

/** The runners table: names, token hashes and labels. */
export class RunnerRepository {
  constructor(private readonly db: Database) {}

  async get(name: string): Promise<RunnerRow | undefined> {
    const row = await this.db.get<StoredRunner>(sql`SELECT * FROM runners WHERE name = ${name}`);
    return row && fromStored(row);
  }

  async all(): Promise<RunnerRow[]> {
    return (await this.db.all<StoredRunner>(sql`SELECT * FROM runners ORDER BY name`)).map(fromStored);
  }

  /** Inserts a runner; false when the name is taken. */
  async insert(row: RunnerRow): Promise<boolean> {
    const changed = await this.db.run(sql`
      INSERT INTO runners (name, token_hash, labels, time_created, created_by, revoked_at)
      VALUES (${row.name}, ${row.tokenHash}, ${JSON.stringify(row.labels)}, ${row.timeCreated}, ${row.createdBy}, ${row.revokedAt})
      ON CONFLICT (name) DO NOTHING`);
    return changed === 1;
  }

  /** Replaces a runner's token hash and labels (or inserts it). */
  async upsert(row: RunnerRow): Promise<void> {
    await this.db.run(sql`
      INSERT INTO runners (name, token_hash, labels, time_created, created_by, revoked_at)
      VALUES (${row.name}, ${row.tokenHash}, ${JSON.stringify(row.labels)}, ${row.timeCreated}, ${row.createdBy}, ${row.revokedAt})
      ON CONFLICT (name) DO UPDATE SET token_hash = excluded.token_hash, labels = excluded.labels,
        time_created = excluded.time_created, created_by = excluded.created_by`);
  }

  async delete(name: string): Promise<boolean> {
    return (await this.db.run(sql`DELETE FROM runners WHERE name = ${name}`)) === 1;
  }
}
