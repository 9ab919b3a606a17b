import type { Clock } from '@carapace/control-plane';

/** A clock tests can move forward (it moves the control plane's idea of now, not the test's). */
export class TestClock implements Clock {
  offsetMs = 0;
  nowMs(): number {
    return Date.now() + this.offsetMs;
  }
  advance(seconds: number): void {
    this.offsetMs += seconds * 1000;
  }
}
