import type { Logger } from 'pino';
import type { Clock } from '../ports.js';

/** The durable queue a `DeliveryLoop` drains (the mail outbox, the webhook deliveries). */
export interface DueQueue<T> {
  /** Up to `limit` items due at `nowMs`. */
  due(nowMs: number, limit: number): Promise<T[]>;
  /** When the next item falls due; null when none waits. */
  nextDueMs(): Promise<number | null>;
}

export interface DeliveryLoopOptions<T> {
  readonly queue: DueQueue<T>;
  readonly batch: number;
  /** Attempts the items of one batch; a pass takes batches until none is due. */
  readonly deliver: (items: T[]) => Promise<void>;
  readonly clock: Clock;
  readonly log: Logger;
  readonly messages: { readonly passFailed: string; readonly cannotRead: string };
  /** Called at close once the grace period is over, to stop a pass under way; close then waits for the pass to end. */
  readonly cancel?: () => void;
}

const CLOSE_WAIT_MS = 5_000;
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * The background delivery of an outbox: one pass at a time, started by `kick` (a kick during a
 * pass runs another after it), and a timer for the next item due.
 *
 * `kick` must come after the commit of what it is to deliver (`Database.afterCommit`): a pass
 * reads the queue outside any transaction, and would not see uncommitted work.
 */
export class DeliveryLoop<T> {
  private timer: NodeJS.Timeout | null = null;
  /** The passes under way and the scheduling after them; null when idle. It never rejects. */
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(private readonly opts: DeliveryLoopOptions<T>) {}

  get closed(): boolean {
    return this.stopped;
  }

  /** Starts a pass on the next turn of the event loop. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.run();
  }

  /** Stops: no pass starts any more, and one under way gets a grace period. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const running = this.running;
    if (!running) return;
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([running, new Promise<void>((resolve) => (timeout = setTimeout(resolve, CLOSE_WAIT_MS)))]);
    clearTimeout(timeout);
    if (this.opts.cancel) {
      this.opts.cancel();
      await running;
    }
  }

  /**
   * Passes until no kick came during the last one, then the timer for the next item due.
   * `running` is cleared in the same step as the last look at `again`: a kick is never lost
   * between them.
   */
  private async run(): Promise<void> {
    try {
      for (;;) {
        this.again = false;
        await new Promise<void>((resolve) => setImmediate(resolve));
        try {
          await this.drain();
        } catch (err) {
          this.opts.log.error({ err }, this.opts.messages.passFailed);
        }
        if (this.stopped) return;
        if (this.again) continue;
        const next = await this.nextDueMs();
        if (this.stopped) return;
        if (this.again) continue;
        if (next !== null) this.schedule(next);
        return;
      }
    } finally {
      this.running = null;
    }
  }

  /** When the next item falls due; null when none waits or the queue cannot be read. */
  private async nextDueMs(): Promise<number | null> {
    try {
      return await this.opts.queue.nextDueMs();
    } catch (err) {
      this.opts.log.error({ err }, this.opts.messages.cannotRead);
      return null;
    }
  }

  private schedule(nextMs: number): void {
    const delay = Math.min(Math.max(0, nextMs - this.opts.clock.nowMs()), MAX_TIMEOUT_MS);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.kick();
    }, delay);
    this.timer.unref();
  }

  private async drain(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const items = await this.opts.queue.due(this.opts.clock.nowMs(), this.opts.batch);
      if (items.length === 0) return;
      await this.opts.deliver(items);
    }
  }
}
