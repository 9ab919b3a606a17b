import { eq } from 'drizzle-orm';
import type { Db } from './client.js';
import { runners } from './schema/index.js';

/** A runner allowed to connect. */
export type RunnerRow = typeof runners.$inferSelect;

/** The runners table: names, token hashes and labels. */
export class RunnerRepository {
  constructor(private readonly db: Db) {}

  get(name: string): RunnerRow | undefined {
    return this.db.select().from(runners).where(eq(runners.name, name)).get();
  }

  all(): RunnerRow[] {
    return this.db.select().from(runners).orderBy(runners.name).all();
  }

  /** Inserts a runner; false when the name is taken. */
  insert(row: RunnerRow): boolean {
    return this.db.insert(runners).values(row).onConflictDoNothing().run().changes === 1;
  }

  /** Replaces a runner's token hash and labels (or inserts it). */
  upsert(row: RunnerRow): void {
    this.db
      .insert(runners)
      .values(row)
      .onConflictDoUpdate({ target: runners.name, set: { tokenHash: row.tokenHash, labels: row.labels, timeCreated: row.timeCreated, createdBy: row.createdBy } })
      .run();
  }

  delete(name: string): boolean {
    return this.db.delete(runners).where(eq(runners.name, name)).run().changes === 1;
  }
}
