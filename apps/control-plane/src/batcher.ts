/**
 * Groups calls that come while others are being served, so that a burst costs one call of
 * `serve` (one transaction, a few round trips) instead of one per caller. A call that comes
 * when nothing is being served is served at once, alone: waiting for company would only add
 * latency. Those that come meanwhile wait for it, then go together, up to `maxItems` items
 * or `maxWeight` of their weight (one at least).
 *
 * With `sameTurn`, a call that comes when nothing is being served waits for the end of the
 * current turn of the event loop (`setImmediate`), and the calls of that turn go with it:
 * for a `serve` that finishes without ever waiting (SQLite's statements run synchronously),
 * nothing would otherwise come "meanwhile", and every call would be served alone. With
 * `gatherMs`, it waits that long instead, and the calls of that window go with it: for calls
 * that come steadily, one at a time, and can wait (heartbeats).
 *
 * When a group fails, each of its items is served again alone, so that one bad item (its
 * effects cannot be applied, its row is refused) fails only its own caller.
 */
export class Batcher<I, O> {
  private readonly waiting: { item: I; resolve: (out: O) => void; reject: (e: unknown) => void }[] = [];
  private serving = false;
  /** The wait of a `gatherMs` window, while it lasts. */
  private window: NodeJS.Timeout | null = null;
  /** The serving of the waiting calls, once begun. */
  private drained: Promise<void> = Promise.resolve();

  /** `serve` answers each item of a group, in order, in one go. */
  constructor(
    private readonly serve: (items: readonly I[]) => Promise<O[]>,
    private readonly limits: {
      readonly maxItems: number;
      readonly maxWeight?: number;
      readonly weight?: (item: I) => number;
      readonly sameTurn?: boolean;
      readonly gatherMs?: number;
    },
  ) {}

  /** Serves `item` with those that come with it; resolves with its own answer. */
  add(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.serving) return;
      this.serving = true;
      if (this.limits.gatherMs) this.window = setTimeout(() => this.begin(), this.limits.gatherMs).unref();
      else if (this.limits.sameTurn) setImmediate(() => this.begin());
      else this.begin();
    });
  }

  /** Serves the calls waiting for a window now; resolves once every call made so far is served (before closing). */
  async flush(): Promise<void> {
    if (this.window) this.begin();
    await this.drained;
  }

  private begin(): void {
    if (this.window) clearTimeout(this.window);
    this.window = null;
    this.drained = this.drain();
  }

  private async drain(): Promise<void> {
    try {
      while (this.waiting.length) {
        const group = this.take();
        try {
          const out = await this.serve(group.map((g) => g.item));
          group.forEach((g, i) => g.resolve(out[i] as O));
        } catch (e) {
          if (group.length === 1) {
            group[0]?.reject(e);
            continue;
          }
          for (const g of group) {
            await this.serve([g.item]).then(
              (out) => g.resolve(out[0] as O),
              (err: unknown) => g.reject(err),
            );
          }
        }
      }
    } finally {
      this.serving = false;
    }
  }

  /** The next group: the oldest waiting calls, within the limits. */
  private take(): typeof this.waiting {
    const { maxItems, maxWeight = Infinity, weight = () => 0 } = this.limits;
    let n = 0;
    let total = 0;
    while (n < this.waiting.length && n < maxItems) {
      total += weight((this.waiting[n] as { item: I }).item);
      if (n > 0 && total > maxWeight) break;
      n += 1;
    }
    return this.waiting.splice(0, n);
  }
}

/**
 * How heartbeats are stored (runner sessions, leases): those of 200 ms together, up to 1000
 * in a statement. A thousand runners beating every 5 s cost each of the two batchers five
 * statements a second, not one per two or three heartbeats; a lease (30 s) or a session's
 * liveness loses nothing to the wait.
 */
export const HEARTBEAT_BATCHING = { maxItems: 1000, gatherMs: 200 } as const;
