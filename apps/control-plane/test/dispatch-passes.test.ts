// When dispatch passes run (grpc/dispatch-passes.ts): one at a time; work asked for during a
// pass runs one more pass after it, a gap later, however often it was asked for; a failing
// pass is reported and does not stop the next.
import { describe, expect, it } from 'vitest';
import { DispatchPasses } from '../src/grpc/dispatch-passes.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('dispatch passes', () => {
  it('run one at a time; what is asked for during a pass makes one more, the gap after it', async () => {
    const starts: number[] = [];
    const ends: number[] = [];
    let inPass = 0;
    let overlapped = false;
    const passes = new DispatchPasses(
      async () => {
        overlapped ||= inPass > 0;
        inPass += 1;
        starts.push(performance.now());
        await sleep(20);
        ends.push(performance.now());
        inPass -= 1;
      },
      () => undefined,
      30,
    );
    passes.schedule();
    await sleep(5);
    for (let i = 0; i < 10; i++) {
      passes.schedule();
      await sleep(1);
    }
    await sleep(150);
    expect(overlapped).toBe(false);
    expect(starts).toHaveLength(2);
    expect((starts[1] as number) - (ends[0] as number)).toBeGreaterThanOrEqual(25);
    // Asked for while idle: at once (the end of the turn), no gap.
    const before = performance.now();
    passes.schedule();
    await sleep(10);
    expect(starts).toHaveLength(3);
    expect((starts[2] as number) - before).toBeLessThan(25);
    passes.close();
    passes.schedule();
    await sleep(40);
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
    await sleep(5);
    passes.schedule();
    await sleep(5);
    expect(n).toBe(2);
    expect(failures).toEqual([new Error('first fails')]);
  });
});
