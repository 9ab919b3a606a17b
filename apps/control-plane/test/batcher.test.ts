import { afterEach, describe, expect, it, vi } from 'vitest';
import { Batcher } from '../src/batcher.js';

describe('Batcher', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('serves a lone call at once, and the calls that come meanwhile together, within the limits', async () => {
    const groups: number[][] = [];
    let release: () => void = () => undefined;
    const batcher = new Batcher<number, number>(
      async (items) => {
        groups.push([...items]);
        if (groups.length === 1) await new Promise<void>((r) => (release = r));
        return items.map((i) => i * 10);
      },
      { maxItems: 3, maxWeight: 100, weight: (i) => i },
    );
    const first = batcher.add(1);
    expect(groups).toEqual([[1]]);
    const rest = [2, 3, 4, 5, 90, 20].map((i) => batcher.add(i));
    release();
    expect(await Promise.all([first, ...rest])).toEqual([10, 20, 30, 40, 50, 900, 200]);
    // three at most; 5 + 90 fit in 100, 5 + 90 + 20 do not
    expect(groups).toEqual([[1], [2, 3, 4], [5, 90], [20]]);
  });

  it('with sameTurn, serves the calls of one turn of the event loop together, even when serving never waits', async () => {
    // Calls made from separate callbacks of one turn (as the messages of many runners' streams
    // are), to a serve that finishes within its caller's callback (as SQLite's statements do).
    const callsOfOneTurn = (batcher: Batcher<number, number>) =>
      Promise.all([1, 2, 3].map((i) => new Promise<void>((r) => setImmediate(r)).then(() => batcher.add(i))));
    const groupsOf = (sameTurn: boolean) => {
      const groups: number[][] = [];
      const batcher = new Batcher<number, number>(
        async (items) => {
          groups.push([...items]);
          return items.map((i) => i + 1);
        },
        { maxItems: 10, sameTurn },
      );
      return { groups, batcher };
    };
    const gathered = groupsOf(true);
    expect(await callsOfOneTurn(gathered.batcher)).toEqual([2, 3, 4]);
    expect(gathered.groups).toEqual([[1, 2, 3]]);
    const eager = groupsOf(false);
    expect(await callsOfOneTurn(eager.batcher)).toEqual([2, 3, 4]);
    expect(eager.groups).toEqual([[1], [2], [3]]);
  });

  it('with gatherMs, serves the calls of a window together, and at once on flush', async () => {
    // On virtual time: the window is exactly 100 ms however busy the machine is.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'Date'] });
    const groups: number[][] = [];
    const batcher = new Batcher<number, number>(
      async (items) => {
        groups.push([...items]);
        return items.map((i) => i * 2);
      },
      { maxItems: 10, gatherMs: 100 },
    );
    const first = batcher.add(1);
    // Calls spread over the window, each from a later turn of the event loop: one group,
    // served when the window ends and not before.
    const later = [2, 3].map((i) => new Promise((r) => setTimeout(r, i * 30)).then(() => batcher.add(i)));
    await vi.advanceTimersByTimeAsync(99);
    expect(groups).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    vi.useRealTimers();
    expect(await Promise.all([first, ...later])).toEqual([2, 4, 6]);
    expect(groups).toEqual([[1, 2, 3]]);
    // flush serves what waits for its window, and resolves once it is served.
    const waiting = batcher.add(4);
    expect(groups).toEqual([[1, 2, 3]]);
    await batcher.flush();
    expect(groups).toEqual([[1, 2, 3], [4]]);
    expect(await waiting).toBe(8);
    expect(groups).toEqual([[1, 2, 3], [4]]);
    await batcher.flush();
  });

  it('serves each call of a failed group alone, so a bad one fails only its caller', async () => {
    const groups: number[][] = [];
    let release: () => void = () => undefined;
    const batcher = new Batcher<number, number>(
      async (items) => {
        groups.push([...items]);
        if (groups.length === 1) await new Promise<void>((r) => (release = r));
        if (items.includes(13)) throw new Error('unlucky');
        return items.map((i) => -i);
      },
      { maxItems: 10 },
    );
    const first = batcher.add(1);
    const rest = [12, 13, 14].map((i) => batcher.add(i));
    release();
    const settled = await Promise.allSettled([first, ...rest]);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual([-1, -12, 'unlucky', -14]);
    expect(groups).toEqual([[1], [12, 13, 14], [12], [13], [14]]);
    // and it goes on serving
    expect(await batcher.add(2)).toBe(-2);
  });
});
