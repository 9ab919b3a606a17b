/**
 * Counts events (failed logins, reset requests) per key in a sliding window and says when
 * a key is over its limit. In memory: one control plane process holds it.
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
