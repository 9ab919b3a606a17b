import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** The throttle_events table (see `SharedThrottle`). */
export class ThrottleRepository {
  constructor(private readonly db: Database) {}

  /** The times of the newest events of a key after `sinceMs` (at most `limit`), newest first. */
  async newest(scope: string, key: string, sinceMs: number, limit: number): Promise<number[]> {
    const rows = await this.db.all<{ t: number }>(sql`
      SELECT time_ms AS t FROM throttle_events
       WHERE scope = ${scope} AND key = ${key} AND time_ms > ${sinceMs}
       ORDER BY time_ms DESC LIMIT ${limit}`);
    return rows.map((r) => r.t);
  }

  /** Records an event, and drops the key's events older than `sinceMs` or beyond the newest `keep`. */
  async add(scope: string, key: string, timeMs: number, sinceMs: number, keep: number): Promise<void> {
    await this.db.run(sql`INSERT INTO throttle_events (scope, key, time_ms) VALUES (${scope}, ${key}, ${timeMs})`);
    await this.db.run(sql`
      DELETE FROM throttle_events WHERE scope = ${scope} AND key = ${key}
         AND (time_ms <= ${sinceMs} OR id NOT IN (
           SELECT id FROM throttle_events WHERE scope = ${scope} AND key = ${key} ORDER BY time_ms DESC, id DESC LIMIT ${keep}))`);
  }

  /** Forgets a key. */
  async clear(scope: string, key: string): Promise<void> {
    await this.db.run(sql`DELETE FROM throttle_events WHERE scope = ${scope} AND key = ${key}`);
  }

  /** Drops every event older than `beforeMs` (keys no longer hit). */
  async prune(beforeMs: number): Promise<number> {
    return this.db.run(sql`DELETE FROM throttle_events WHERE time_ms <= ${beforeMs}`);
  }
}
