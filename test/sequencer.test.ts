import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HEAVY_MINUTES, spreadHeavyFiles } from './sequencer.js';

const light = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `test/light-${i}.test.ts`, project: 'sqlite' }));

describe('the order of the test files (two workers, heavy files spread)', () => {
  it('puts the longest heavy file first, then the light files that fit in its minutes, then the next heavy one', () => {
    const files = [...light(10), { path: 'h-short', project: 'sqlite' }, { path: 'h-long', project: 'sqlite' }];
    const order = spreadHeavyFiles(files, { 'h-long': 3, 'h-short': 1 }, 0.5).map((f) => f.path);
    expect(order).toEqual([
      'h-long',
      ...light(6).map((f) => f.path),
      'h-short',
      ...light(8)
        .slice(6)
        .map((f) => f.path),
      ...light(10)
        .slice(8)
        .map((f) => f.path),
    ]);
  });

  it('keeps every file exactly once, and the light files in their order, when the light ones run out', () => {
    const files = [{ path: 'a', project: 'p' }, ...light(3), { path: 'b', project: 'p' }, { path: 'c', project: 'p' }];
    const order = spreadHeavyFiles(files, { a: 10, b: 9, c: 8 }, 1);
    expect(order.map((f) => f.path)).toEqual(['a', ...light(3).map((f) => f.path), 'b', 'c']);
    expect(new Set(order).size).toBe(files.length);
  });

  it('names heavy files that exist', () => {
    for (const path of Object.keys(HEAVY_MINUTES)) expect(existsSync(path), path).toBe(true);
  });
});
