/**
 * Counts events (failed logins, reset requests, wrong discovery tokens) per key in a
 * sliding window and says when a key is over its limit. In memory: one control plane
 * process holds it.
 */
export class Throttle {
  private readonly events = new Map<string, number[]>();

  constructor(
    private readonly windowMs: number,
    private readonly limit: number,
    private readonly maxKeys = 100_000,
  ) {}

  /** Milliseconds until `key` may act again; 0 when it may now. */
  retryAfterMs(key: string, nowMs: number): number {
    const times = this.recent(key, nowMs);
    if (times.length < this.limit) return 0;
    return (times[times.length - this.limit] ?? nowMs) + this.windowMs - nowMs;
  }

  /** How many events of `key` the window holds (at most the limit). */
  count(key: string, nowMs: number): number {
    return this.recent(key, nowMs).length;
  }

  /** Records one event of `key`. */
  hit(key: string, nowMs: number): void {
    const times = this.recent(key, nowMs);
    times.push(nowMs);
    if (times.length > this.limit) times.splice(0, times.length - this.limit);
    this.events.set(key, times);
    if (this.events.size > this.maxKeys) this.prune(nowMs);
  }

  /** Forgets `key` (after a successful login). */
  clear(key: string): void {
    this.events.delete(key);
  }

  private recent(key: string, nowMs: number): number[] {
    const times = this.events.get(key);
    if (!times) return [];
    const fresh = times.filter((t) => t > nowMs - this.windowMs);
    if (fresh.length === 0) this.events.delete(key);
    return fresh;
  }

  private prune(nowMs: number): void {
    for (const key of [...this.events.keys()]) this.recent(key, nowMs);
    if (this.events.size > this.maxKeys) {
      const drop = this.events.size - this.maxKeys;
      for (const key of [...this.events.keys()].slice(0, drop)) this.events.delete(key);
    }
  }
}

/**
 * A delay that grows with the events of a key in a sliding window: none for the first
 * `free`, then `baseMs`, doubling with each further event up to `maxMs`. It slows a key
 * down without ever shutting it out.
 */
export class Backoff {
  private readonly events: Throttle;

  constructor(
    windowMs: number,
    private readonly baseMs: number,
    private readonly maxMs: number,
    private readonly free = 3,
  ) {
    // Enough events remembered to reach the cap, and no more.
    const steps = baseMs > 0 && maxMs > baseMs ? Math.ceil(Math.log2(maxMs / baseMs)) : 0;
    this.events = new Throttle(windowMs, free + steps + 1);
  }

  /** How long an attempt of `key` is held now (ms). */
  delayMs(key: string, nowMs: number): number {
    const over = this.events.count(key, nowMs) - this.free;
    if (over <= 0 || this.baseMs === 0) return 0;
    return Math.min(this.maxMs, this.baseMs * 2 ** (over - 1));
  }

  /** Records one event of `key`. */
  hit(key: string, nowMs: number): void {
    this.events.hit(key, nowMs);
  }
}
