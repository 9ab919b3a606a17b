// When dispatch passes run (grpc/dispatch-passes.ts): one at a time; work asked for during a
// pass runs one more pass after it, a gap later, however often it was asked for; a failing
// pass is reported and does not stop the next. On virtual time (fake timers): the gaps are
// exact, and nothing depends on how busy the machine is.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DispatchPasses } from '../src/grpc/dispatch-passes.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('dispatch passes', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('run one at a time; what is asked for during a pass makes one more, the gap after it', async () => {
    const starts: number[] = [];
    const ends: number[] = [];
    let inPass = 0;
    let overlapped = false;
    const passes = new DispatchPasses(
      async () => {
        overlapped ||= inPass > 0;
        inPass += 1;
        starts.push(Date.now());
        await sleep(20);
        ends.push(Date.now());
        inPass -= 1;
      },
      () => undefined,
      30,
    );
    const t0 = Date.now();
    passes.schedule();
    await vi.advanceTimersByTimeAsync(5);
    expect(starts).toEqual([t0]);
    // Ten asks during the pass: one more pass, 30 ms after the first ends.
    for (let i = 0; i < 10; i++) {
      passes.schedule();
      await vi.advanceTimersByTimeAsync(1);
    }
    await vi.advanceTimersByTimeAsync(150);
    expect(overlapped).toBe(false);
    expect(starts).toEqual([t0, t0 + 20 + 30]);
    expect(ends).toEqual([t0 + 20, t0 + 20 + 30 + 20]);
    // Asked for while idle: at once (the end of the turn), no gap.
    const idle = Date.now();
    passes.schedule();
    await vi.advanceTimersByTimeAsync(0);
    expect(starts).toHaveLength(3);
    expect(starts[2]).toBe(idle);
    await vi.advanceTimersByTimeAsync(20);
    passes.close();
    passes.schedule();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(starts).toHaveLength(3);
  });

  it('reports a failing pass and runs the next', async () => {
    const failures: unknown[] = [];
    let n = 0;
    const passes = new DispatchPasses(
      async () => {
        n += 1;
        if (n === 1) throw new Error('first fails');
      },
      (err) => failures.push(err),
      1,
    );
    passes.schedule();
    await vi.advanceTimersByTimeAsync(5);
    passes.schedule();
    await vi.advanceTimersByTimeAsync(5);
    expect(n).toBe(2);
    expect(failures).toEqual([new Error('first fails')]);
  });
});
