/**
 * The one way a test waits for something that happens on its own time: a process, a socket, a
 * lab host, a background loop. Tests of timers, backoff, leases and batching do not wait at
 * all: they move a fake clock (vitest's fake timers, or the harness's TestClock).
 */
export interface EventuallyOptions {
  /** How long to keep looking (default 15 s). */
  timeoutMs?: number;
  /** Stop looking at once (one last look first) when this says the awaited thing cannot come, e.g. the process that was to do it has exited. */
  giveUp?: () => boolean;
}

/** The first look comes at once; the pause between looks grows from 10 ms to 250 ms. */
const FIRST_PAUSE_MS = 10;
const LONGEST_PAUSE_MS = 250;
/**
 * A look that costs time is not repeated at once: the pause is at least this many times the
 * last look's duration (up to LONGEST_COSTLY_PAUSE_MS), so that a wait spends at most a
 * quarter of its time looking. A look at a lab host (`ceph status` in a container: a Python
 * process, 0.3 to 0.5 s of CPU) repeated every 250 ms kept one of the machine's two cores
 * busy for as long as the wait lasted; a look at an in-process state costs nothing and keeps
 * the short pause.
 */
const COSTLY_LOOK_FACTOR = 3;
const LONGEST_COSTLY_PAUSE_MS = 5_000;

/**
 * Looks at `check` until it gives a value other than undefined or false, and returns that
 * value. A look that throws counts as "not yet"; the last such error is quoted when the wait
 * times out ("timed out after N ms waiting for WHAT: ERROR").
 */
export async function eventually<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: number | EventuallyOptions = {},
): Promise<Exclude<T, undefined | false>> {
  const { timeoutMs = 15_000, giveUp } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  let pause = FIRST_PAUSE_MS;
  let lastError: unknown;
  for (;;) {
    const last = giveUp?.() === true;
    const lookStarted = Date.now();
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
    } catch (err) {
      if (last) throw err;
      lastError = err;
    }
    if (last) throw new Error(`gave up waiting for ${what}`);
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? `: ${lastError.message}` : lastError === undefined ? '' : `: ${JSON.stringify(lastError)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    const looked = Date.now() - lookStarted;
    const wait = Math.max(pause, Math.min(COSTLY_LOOK_FACTOR * looked, LONGEST_COSTLY_PAUSE_MS));
    // never past the deadline: the last look comes when the time is up
    await new Promise((resolve) => setTimeout(resolve, Math.min(wait, Math.max(0, deadline - Date.now()))));
    pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
  }
}
