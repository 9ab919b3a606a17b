import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** The state of a webhook delivery. */
export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** A webhook delivery to make (or made). */
export interface Delivery {
  readonly id: string;
  readonly executionId: string;
  readonly event: string;
  readonly url: string;
  readonly body: string;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly timeCreatedMs: number;
  readonly nextAttemptMs: number;
  readonly timeDoneMs: number | null;
  readonly lastError: string | null;
}

/** One attempt of a delivery. */
export interface DeliveryAttempt {
  readonly attempt: number;
  readonly timeMs: number;
  readonly durationMs: number;
  /** The HTTP status answered, null when there was no answer. */
  readonly status: number | null;
  readonly error: string | null;
}

const DELIVERY_COLUMNS = sql.raw(
  'id, execution_id AS "executionId", event, url, body, state, attempts, time_created_ms AS "timeCreatedMs", next_attempt_ms AS "nextAttemptMs", time_done_ms AS "timeDoneMs", last_error AS "lastError"',
);

/** How long a replica holds the deliveries it took (an attempt is bounded by its HTTP timeout). */
const CLAIM_MS = 120_000;

/** The durable record of webhook deliveries and their attempts (see `WebhookOutbox`). */
export class NotificationRepository {
  constructor(private readonly db: Database) {}

  /** Stores a delivery due at `nowMs`; joins the caller's transaction if one is open. */
  async add(delivery: { id: string; executionId: string; event: string; url: string; body: string }, nowMs: number): Promise<void> {
    await this.db.run(sql`
      INSERT INTO notification_deliveries (id, execution_id, event, url, body, state, time_created_ms, next_attempt_ms)
      VALUES (${delivery.id}, ${delivery.executionId}, ${delivery.event}, ${delivery.url}, ${delivery.body}, 'pending', ${nowMs}, ${nowMs})`);
  }

  /**
   * Runs `fn` once the caller's transaction commits (at once when none is open), so that what
   * it stored is seen by a delivery pass that `fn` starts; dropped on rollback.
   */
  afterCommit(fn: () => void): void {
    this.db.afterCommit(fn);
  }

  /**
   * Takes the pending deliveries due at `nowMs` (oldest first): each is held for `CLAIM_MS`
   * (its next attempt moved past it) so that no other replica makes the same attempt.
   */
  async due(nowMs: number, limit: number): Promise<Delivery[]> {
    const skip = this.db.engine.skipLocked();
    const rows = await this.db.all<Delivery>(sql`
      UPDATE notification_deliveries SET next_attempt_ms = ${nowMs + CLAIM_MS}
       WHERE id IN (SELECT id FROM notification_deliveries WHERE state = 'pending' AND next_attempt_ms <= ${nowMs}
                    ORDER BY next_attempt_ms, time_created_ms LIMIT ${limit}${skip})
      RETURNING ${DELIVERY_COLUMNS}`);
    return rows.sort((x, y) => x.timeCreatedMs - y.timeCreatedMs || x.id.localeCompare(y.id));
  }

  /** When the next pending delivery is due, if any waits. */
  async nextDueMs(): Promise<number | null> {
    const row = await this.db.get<{ next: number | null }>(sql`SELECT min(next_attempt_ms) AS next FROM notification_deliveries WHERE state = 'pending'`);
    return row?.next ?? null;
  }

  /**
   * Records an attempt and its outcome in one transaction: `done` ends the delivery in that
   * state; otherwise it stays pending until `nextAttemptMs`.
   */
  async record(
    delivery: Delivery,
    attempt: Omit<DeliveryAttempt, 'attempt'>,
    outcome: { done: 'delivered' | 'failed'; nowMs: number } | { done: null; nextAttemptMs: number },
  ): Promise<void> {
    const number = delivery.attempts + 1;
    const lastError = attempt.error ?? (attempt.status !== null && (attempt.status < 200 || attempt.status > 299) ? `HTTP ${attempt.status}` : null);
    await this.db.transaction(async () => {
      await this.db.run(sql`
        INSERT INTO notification_attempts (delivery_id, attempt, time_ms, duration_ms, status, error)
        VALUES (${delivery.id}, ${number}, ${attempt.timeMs}, ${attempt.durationMs}, ${attempt.status}, ${attempt.error})`);
      const end = outcome.done
        ? sql`state = ${outcome.done}, time_done_ms = ${outcome.nowMs}`
        : sql`next_attempt_ms = ${outcome.nextAttemptMs}`;
      await this.db.run(sql`UPDATE notification_deliveries SET attempts = ${number}, last_error = ${lastError}, ${end} WHERE id = ${delivery.id}`);
    });
  }

  /** Ends a delivery without an attempt (its target is no longer configured). */
  async abandon(id: string, reason: string, nowMs: number): Promise<void> {
    await this.db.run(sql`UPDATE notification_deliveries SET state = 'failed', last_error = ${reason}, time_done_ms = ${nowMs} WHERE id = ${id}`);
  }

  /** The deliveries of an execution, oldest first, with their attempts. */
  async ofExecution(executionId: string): Promise<(Delivery & { attemptLog: DeliveryAttempt[] })[]> {
    const deliveries = await this.db.all<Delivery>(
      sql`SELECT ${DELIVERY_COLUMNS} FROM notification_deliveries WHERE execution_id = ${executionId} ORDER BY time_created_ms, url`,
    );
    const result: (Delivery & { attemptLog: DeliveryAttempt[] })[] = [];
    for (const d of deliveries) {
      const attemptLog = await this.db.all<DeliveryAttempt>(sql`
        SELECT attempt, time_ms AS "timeMs", duration_ms AS "durationMs", status, error
          FROM notification_attempts WHERE delivery_id = ${d.id} ORDER BY attempt`);
      result.push({ ...d, attemptLog });
    }
    return result;
  }
}
