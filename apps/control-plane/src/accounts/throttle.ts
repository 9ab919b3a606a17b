import type { ThrottleRepository } from '../db/throttle.repository.js';

/**
 * Counts events (failed logins, reset requests, wrong discovery tokens) per key in a
 * sliding window and says when a key is over its limit.
 */
export interface Limiter {
  /** Milliseconds until `key` may act again; 0 when it may now. */
  retryAfterMs(key: string, nowMs: number): Promise<number>;
  /** How many events of `key` the window holds (at most the limit). */
  count(key: string, nowMs: number): Promise<number>;
  /** Records one event of `key`. */
  hit(key: string, nowMs: number): Promise<void>;
  /** Forgets `key` (after a successful login). */
  clear(key: string): Promise<void>;
}

/** A `Limiter` in memory: one control plane process holds the counts. */
export class Throttle implements Limiter {
  private readonly events = new Map<string, number[]>();

  constructor(
    private readonly windowMs: number,
    private readonly limit: number,
    private readonly maxKeys = 100_000,
  ) {}

  async retryAfterMs(key: string, nowMs: number): Promise<number> {
    const times = this.recent(key, nowMs);
    if (times.length < this.limit) return 0;
    return (times[times.length - this.limit] ?? nowMs) + this.windowMs - nowMs;
  }

  async count(key: string, nowMs: number): Promise<number> {
    return this.recent(key, nowMs).length;
  }

  async hit(key: string, nowMs: number): Promise<void> {
    const times = this.recent(key, nowMs);
    times.push(nowMs);
    if (times.length > this.limit) times.splice(0, times.length - this.limit);
    this.events.set(key, times);
    if (this.events.size > this.maxKeys) this.prune(nowMs);
  }

  async clear(key: string): Promise<void> {
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
 * A `Limiter` in the database (`throttle_events`), for replicas sharing PostgreSQL: each
 * counts the events all of them saw, so requests spread over replicas are counted as one.
 * A key keeps at most `limit` rows, and rows older than the window go as keys are hit.
 */
export class SharedThrottle implements Limiter {
  constructor(
    private readonly repo: ThrottleRepository,
    private readonly scope: string,
    private readonly windowMs: number,
    private readonly limit: number,
  ) {}

  async retryAfterMs(key: string, nowMs: number): Promise<number> {
    const times = await this.repo.newest(this.scope, key, nowMs - this.windowMs, this.limit);
    if (times.length < this.limit) return 0;
    return (times[times.length - 1] ?? nowMs) + this.windowMs - nowMs;
  }

  async count(key: string, nowMs: number): Promise<number> {
    return (await this.repo.newest(this.scope, key, nowMs - this.windowMs, this.limit)).length;
  }

  async hit(key: string, nowMs: number): Promise<void> {
    await this.repo.add(this.scope, key, nowMs, nowMs - this.windowMs, this.limit);
  }

  async clear(key: string): Promise<void> {
    await this.repo.clear(this.scope, key);
  }
}

/**
 * A delay that grows with the events of a key in a sliding window: none for the first
 * `free`, then `baseMs`, doubling with each further event up to `maxMs`. It slows a key
 * down without ever shutting it out.
 */
export class Backoff {
  private readonly events: Limiter;

  /** `limiter(n)`: a limiter of the window that remembers `n` events of a key. */
  constructor(
    limiter: (limit: number) => Limiter,
    private readonly baseMs: number,
    private readonly maxMs: number,
    private readonly free = 3,
  ) {
    // Enough events remembered to reach the cap, and no more.
    const steps = baseMs > 0 && maxMs > baseMs ? Math.ceil(Math.log2(maxMs / baseMs)) : 0;
    this.events = limiter(free + steps + 1);
  }

  /** How long an attempt of `key` is held now (ms). */
  async delayMs(key: string, nowMs: number): Promise<number> {
    const over = (await this.events.count(key, nowMs)) - this.free;
    if (over <= 0 || this.baseMs === 0) return 0;
    return Math.min(this.maxMs, this.baseMs * 2 ** (over - 1));
  }

  /** Records one event of `key`. */
  hit(key: string, nowMs: number): Promise<void> {
    return this.events.hit(key, nowMs);
  }
}
