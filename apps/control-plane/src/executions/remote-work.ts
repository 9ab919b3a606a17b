/** How long after another replica announced work this one looks at the queue (ms). */
const REMOTE_WORK_DELAY_MS = 20;

/**
 * When a replica looks at the queue for work another replica announced. That replica hands
 * it to its own runners at once, so this one looks a moment later, for what is still queued
 * then, instead of racing it for the same executions; and not at all if a look of its own
 * began after the latest announcement: that look read the queue after the announcing
 * transaction committed. Under load a replica looks for its own runners' events all the
 * time, and the delayed look would find nothing left.
 */
export class RemoteWork {
  private timer: NodeJS.Timeout | null = null;
  /** Whether a look began here since the latest announcement. */
  private lookedSince = false;

  constructor(private readonly look: () => void) {}

  /** Another replica announced work. */
  announced(): void {
    this.lookedSince = false;
    this.timer ??= setTimeout(() => {
      this.timer = null;
      if (!this.lookedSince) this.look();
    }, REMOTE_WORK_DELAY_MS).unref();
  }

  /** A look at the queue began here. */
  looked(): void {
    this.lookedSince = true;
  }
}
