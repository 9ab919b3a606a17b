/** Capped exponential backoff with full jitter over the upper half: attempt 0 → ~initial. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const cap = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(cap / 2 + (cap / 2) * random());
}

/** The attempt number whose delay is the longest (the cap): refusals wait that long. */
export const LONGEST_ATTEMPT = 30;
