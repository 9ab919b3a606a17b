import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { eventually } from './eventually.js';

describe('eventually', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Runs eventually on a check that takes `lookMs` and answers on its `answerOn`-th look; returns the times the looks began. */
  async function looks(lookMs: number, answerOn: number, timeoutMs = 60_000): Promise<{ starts: number[]; result: Promise<string> }> {
    const starts: number[] = [];
    const result = eventually(
      'the answer',
      () => {
        starts.push(Date.now());
        vi.setSystemTime(Date.now() + lookMs); // the look takes lookMs
        return starts.length >= answerOn ? 'yes' : undefined;
      },
      timeoutMs,
    );
    await vi.advanceTimersByTimeAsync(120_000);
    return { starts, result };
  }

  it('looks again soon after a cheap look: pauses grow from 10 ms to 250 ms', async () => {
    const { starts, result } = await looks(0, 8);
    await expect(result).resolves.toBe('yes');
    const pauses = starts.slice(1).map((t, i) => t - (starts[i] as number));
    expect(pauses).toEqual([10, 20, 40, 80, 160, 250, 250]);
  });

  it('after a look that took 400 ms, pauses three times as long, so a wait spends at most a quarter of its time looking', async () => {
    const { starts, result } = await looks(400, 4);
    await expect(result).resolves.toBe('yes');
    const gaps = starts.slice(1).map((t, i) => t - (starts[i] as number));
    expect(gaps).toEqual([1_600, 1_600, 1_600]); // 400 looking, 1,200 pausing
  });

  it('pauses at most 5 s, and looks a last time when the time is up, quoting what the look threw', async () => {
    const starts: number[] = [];
    const result = eventually(
      'a host that never answers',
      () => {
        starts.push(Date.now());
        vi.setSystemTime(Date.now() + 3_000);
        throw new Error('connection refused');
      },
      20_000,
    );
    const settled = expect(result).rejects.toThrow('timed out after 20000 ms waiting for a host that never answers: connection refused');
    await vi.advanceTimersByTimeAsync(60_000);
    await settled;
    const gaps = starts.slice(1).map((t, i) => t - (starts[i] as number));
    expect(gaps.every((g) => g <= 8_000)).toBe(true);
    expect(gaps[0]).toBe(8_000); // 3 s looking, then the 5 s cap
    expect((starts.at(-1) as number) - (starts[0] as number)).toBeLessThanOrEqual(20_000 + 3_000);
  });
});
