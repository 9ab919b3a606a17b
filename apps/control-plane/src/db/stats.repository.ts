import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** What the metrics read of the whole installation (every replica's work), at each scrape. */
export class StatsRepository {
  constructor(private readonly db: Database) {}

  /** The live executions by state. */
  async executionsByState(): Promise<Map<string, number>> {
    const state = this.db.engine.jsonText('data', 'state');
    const rows = await this.db.all<{ state: string; n: number }>(
      sql`SELECT ${state} AS state, count(*) AS n FROM executions WHERE is_latest = 1 AND time_deleted = 0 GROUP BY 1`,
    );
    return new Map(rows.map((r) => [r.state, r.n]));
  }

  /** The queued executions: how many, and when the oldest was created (unix seconds), null when none. */
  async queue(): Promise<{ depth: number; oldestS: number | null }> {
    const engine = this.db.engine;
    const state = sql`${engine.dataField(['state'], false).expr} = ${engine.dataLiteral('created')}`;
    const created = engine.jsonInteger('data', 'time_created');
    const row = await this.db.get<{ n: number; oldest: number | null }>(
      sql`SELECT count(*) AS n, min(${created}) AS oldest FROM executions WHERE is_latest = 1 AND time_deleted = 0 AND ${state}`,
    );
    return { depth: row?.n ?? 0, oldestS: row?.oldest ?? null };
  }

  /** The unexpired server leases. */
  async leases(nowMs: number): Promise<number> {
    return (await this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM server_locks WHERE expires_at > ${nowMs}`))?.n ?? 0;
  }
}
