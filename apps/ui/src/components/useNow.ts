import { useEffect, useState } from 'react';

/**
 * The time now in Unix seconds, for what a page shows as time passes (a duration that grows):
 * read once at mount, then every `intervalMs` (never again with null). Reading the clock
 * while rendering would make a render depend on when it ran.
 */
export function useNow(intervalMs: number | null): number {
  const [now, setNow] = useState(() => Date.now() / 1000);
  useEffect(() => {
    if (intervalMs === null) return;
    const timer = window.setInterval(() => setNow(Date.now() / 1000), intervalMs);
    return () => window.clearInterval(timer);
  }, [intervalMs]);
  return now;
}
