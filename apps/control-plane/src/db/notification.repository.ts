import { and, asc, eq, lte, min } from 'drizzle-orm';
import type { Db } from './client.js';
import { notificationAttempts, notificationDeliveries } from './schema/index.js';

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

/** The durable record of webhook deliveries and their attempts (see `WebhookOutbox`). */
export class NotificationRepository {
  constructor(private readonly db: Db) {}

  /** Stores a delivery due at `nowMs`; joins the caller's transaction if one is open. */
  add(delivery: { id: string; executionId: string; event: string; url: string; body: string }, nowMs: number): void {
    this.db
      .insert(notificationDeliveries)
      .values({ ...delivery, state: 'pending', timeCreatedMs: nowMs, nextAttemptMs: nowMs })
      .run();
  }

  /** The pending deliveries due at `nowMs`, oldest first. */
  due(nowMs: number, limit: number): Delivery[] {
    return this.db
      .select()
      .from(notificationDeliveries)
      .where(and(eq(notificationDeliveries.state, 'pending'), lte(notificationDeliveries.nextAttemptMs, nowMs)))
      .orderBy(asc(notificationDeliveries.nextAttemptMs), asc(notificationDeliveries.timeCreatedMs))
      .limit(limit)
      .all() as Delivery[];
  }

  /** When the next pending delivery is due, if any waits. */
  nextDueMs(): number | null {
    return (
      this.db
        .select({ next: min(notificationDeliveries.nextAttemptMs) })
        .from(notificationDeliveries)
        .where(eq(notificationDeliveries.state, 'pending'))
        .get()?.next ?? null
    );
  }

  /**
   * Records an attempt and its outcome in one transaction: `done` ends the delivery in that
   * state; otherwise it stays pending until `nextAttemptMs`.
   */
  record(
    delivery: Delivery,
    attempt: Omit<DeliveryAttempt, 'attempt'>,
    outcome: { done: 'delivered' | 'failed'; nowMs: number } | { done: null; nextAttemptMs: number },
  ): void {
    const number = delivery.attempts + 1;
    this.db.transaction(() => {
      this.db.insert(notificationAttempts).values({ deliveryId: delivery.id, attempt: number, ...attempt }).run();
      this.db
        .update(notificationDeliveries)
        .set({
          attempts: number,
          lastError: attempt.error ?? (attempt.status !== null && (attempt.status < 200 || attempt.status > 299) ? `HTTP ${attempt.status}` : null),
          ...(outcome.done ? { state: outcome.done, timeDoneMs: outcome.nowMs } : { nextAttemptMs: outcome.nextAttemptMs }),
        })
        .where(eq(notificationDeliveries.id, delivery.id))
        .run();
    });
  }

  /** Ends a delivery without an attempt (its target is no longer configured). */
  abandon(id: string, reason: string, nowMs: number): void {
    this.db.update(notificationDeliveries).set({ state: 'failed', lastError: reason, timeDoneMs: nowMs }).where(eq(notificationDeliveries.id, id)).run();
  }

  /** The deliveries of an execution, oldest first, with their attempts. */
  ofExecution(executionId: string): (Delivery & { attemptLog: DeliveryAttempt[] })[] {
    const deliveries = this.db
      .select()
      .from(notificationDeliveries)
      .where(eq(notificationDeliveries.executionId, executionId))
      .orderBy(asc(notificationDeliveries.timeCreatedMs), asc(notificationDeliveries.url))
      .all() as Delivery[];
    return deliveries.map((d) => ({
      ...d,
      attemptLog: this.db
        .select({
          attempt: notificationAttempts.attempt,
          timeMs: notificationAttempts.timeMs,
          durationMs: notificationAttempts.durationMs,
          status: notificationAttempts.status,
          error: notificationAttempts.error,
        })
        .from(notificationAttempts)
        .where(eq(notificationAttempts.deliveryId, d.id))
        .orderBy(asc(notificationAttempts.attempt))
        .all(),
    }));
  }
}
