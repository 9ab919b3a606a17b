import { describe, expect, it } from 'vitest';
import { isCancelable, isFinal, stepSeconds } from './runFormat.ts';

describe('run helpers', () => {
  it('knows the final and cancelable states', () => {
    expect(isFinal('canceled')).toBe(true);
    expect(isFinal('canceling')).toBe(false);
    expect(isCancelable('started')).toBe(true);
    expect(isCancelable('canceling')).toBe(false);
  });
  it('computes step durations', () => {
    expect(stepSeconds(100, 104)).toBe(4);
    expect(stepSeconds(0, 104)).toBeNull();
  });
});
