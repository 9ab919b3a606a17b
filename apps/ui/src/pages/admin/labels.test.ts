import { describe, expect, it } from 'vitest';
import { RUNNER_NAME, parseLabels } from './labels.ts';

describe('runner labels', () => {
  it('parses key=value lines and commas', () => {
    expect(parseLabels('site=lab\n rack = 1 ,\n')).toEqual({ labels: { site: 'lab', rack: '1' } });
    expect(parseLabels('oops')).toEqual({ error: '"oops" is not key=value' });
    expect(RUNNER_NAME.test('rack-1')).toBe(true);
    expect(RUNNER_NAME.test('Rack 1')).toBe(false);
  });
});
