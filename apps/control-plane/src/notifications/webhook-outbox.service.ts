import { createHmac, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Delivery, NotificationRepository } from '../db/notification.repository.js';
import type { Clock } from '../ports.js';
import { DeliveryLoop } from './delivery-loop.js';

/** When a webhook delivery that failed is tried again, and how long one attempt may take. */
export interface WebhookRetry {
  /** The delay after the first failure; it doubles after each one ... */
  readonly initialMs: number;
  /** ... up to this. */
  readonly maxMs: number;
  /** A delivery still failing this long after it was queued is given up (`failed`). */
  readonly giveUpMs: number;
  /** One attempt's time limit, the answer's headers included. */
  readonly timeoutMs: number;
}

export const DEFAULT_WEBHOOK_RETRY: WebhookRetry = { initialMs: 5_000, maxMs: 600_000, giveUpMs: 86_400_000, timeoutMs: 10_000 };

/** The headers of a signed webhook request. */
export const SIGNATURE_HEADER = 'x-carapace-signature';
export const TIMESTAMP_HEADER = 'x-carapace-timestamp';
export const DELIVERY_HEADER = 'x-carapace-delivery';
export const EVENT_HEADER = 'x-carapace-event';

/**
 * The signature of a webhook request: `sha256=` and the hex HMAC-SHA256, keyed by the
 * webhook's secret, of the timestamp (Unix seconds, as in `X-Carapace-Timestamp`), a dot,
 * and the raw body. Signing the timestamp lets a receiver refuse replays of old requests.
 */
export function webhookSignature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** HTTP statuses worth another attempt: timeouts, throttling, server errors. */
function retryable(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || status >= 500;
}

/** The scheme, host and port of a URL: what the log may say of a target (a path may hold a credential). */
export function targetOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(invalid URL)';
  }
}

const BATCH = 8;

/**
 * Webhook deliveries, as the mail outbox does mail: `enqueue` stores a delivery in the
 * caller's transaction; deliveries go out in the background, at once after the commit
 * (never before it), again at start (`resume`), and after a failure with capped
 * exponential backoff and jitter. Each attempt is recorded (`notification_attempts`). A 2xx answer delivers; a
 * timeout, a connection error, 408, 425, 429 or 5xx is tried again until `giveUpMs`; any
 * other answer (redirects are not followed) fails the delivery for good. Delivery is at
 * least once: receivers deduplicate by `X-Carapace-Delivery`.
 */
export class WebhookOutbox {
  private readonly abort = new AbortController();
  private readonly loop: DeliveryLoop<Delivery>;

  constructor(
    private readonly repo: NotificationRepository,
    /** The secret of the configured webhook with this URL; null when none is configured now. */
    private readonly secretOf: (url: string) => string | null,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly userAgent: string,
    private readonly retry: WebhookRetry = DEFAULT_WEBHOOK_RETRY,
  ) {
    this.loop = new DeliveryLoop({
      queue: repo,
      batch: BATCH,
      deliver: async (batch) => {
        await Promise.all(batch.map((d) => this.attempt(d)));
      },
      clock,
      log,
      messages: { passFailed: 'webhook delivery pass failed', cannotRead: 'cannot read the webhook deliveries; they go at the next start' },
      // an attempt still under way is stopped; its delivery stays pending for the next start
      cancel: () => this.abort.abort(),
    });
  }

  /** Stores a delivery of `body` to `url`, in the caller's transaction if one is open; returns its id. */
  async enqueue(delivery: { executionId: string; event: string; url: string; body: string }): Promise<string> {
    const id = randomUUID();
    await this.repo.add({ id, ...delivery }, this.clock.nowMs());
    this.log.debug({ deliveryId: id, executionId: delivery.executionId, target: targetOf(delivery.url) }, 'webhook queued');
    // a pass started before the commit would not see the delivery
    this.repo.afterCommit(() => this.loop.kick());
    return id;
  }

  /** Delivers what is pending (deliveries left by an earlier run of the service). */
  resume(): void {
    this.loop.kick();
  }

  async close(): Promise<void> {
    await this.loop.close();
  }

  private async attempt(d: Delivery): Promise<void> {
    const meta = { deliveryId: d.id, executionId: d.executionId, event: d.event, target: targetOf(d.url), attempt: d.attempts + 1 };
    const secret = this.secretOf(d.url);
    if (secret === null) {
      await this.repo.abandon(d.id, 'no webhook with this URL is configured any more', this.clock.nowMs());
      this.log.warn(meta, 'webhook not delivered: its target is no longer configured');
      return;
    }
    const startMs = this.clock.nowMs();
    const timestamp = Math.floor(startMs / 1000);
    let status: number | null = null;
    let error: string | null = null;
    try {
      const res = await fetch(d.url, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'content-type': 'application/json',
          'user-agent': this.userAgent,
          [EVENT_HEADER]: d.event,
          [DELIVERY_HEADER]: d.id,
          [TIMESTAMP_HEADER]: String(timestamp),
          [SIGNATURE_HEADER]: webhookSignature(secret, timestamp, d.body),
        },
        body: d.body,
        signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(this.retry.timeoutMs)]),
      });
      status = res.status;
      await res.body?.cancel().catch(() => undefined);
    } catch (err) {
      if (this.loop.closed) return; // stopped by close(): the delivery stays pending, unrecorded
      const e = err as Error & { cause?: { code?: string; message?: string } };
      error = e.name === 'TimeoutError' ? `no answer within ${this.retry.timeoutMs} ms` : (e.cause?.code ?? e.cause?.message ?? e.message).slice(0, 500);
    }
    const nowMs = this.clock.nowMs();
    const attempt = { timeMs: startMs, durationMs: Math.max(0, nowMs - startMs), status, error };
    if (status !== null && status >= 200 && status <= 299) {
      await this.repo.record(d, attempt, { done: 'delivered', nowMs });
      this.log.info({ ...meta, status }, 'webhook delivered');
      return;
    }
    if ((status === null || retryable(status)) && nowMs - d.timeCreatedMs < this.retry.giveUpMs) {
      const delay = this.backoff(d.attempts + 1);
      await this.repo.record(d, attempt, { done: null, nextAttemptMs: nowMs + delay });
      this.log.warn({ ...meta, status, error, retryInMs: delay }, 'webhook not delivered; will try again');
      return;
    }
    await this.repo.record(d, attempt, { done: 'failed', nowMs });
    this.log.error({ ...meta, status, error }, 'webhook not delivered: refused for good or too old; given up');
  }

  /** Capped exponential backoff with ±20 % jitter. */
  private backoff(attempts: number): number {
    const base = Math.min(this.retry.maxMs, this.retry.initialMs * 2 ** Math.min(attempts - 1, 30));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }
}
