import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HEAVY_FILES, orderFiles, type HeavyFile } from './sequencer.js';

const light = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `test/light-${i}.test.ts` }));

describe('the order of the test files (two workers, the Ceph files first, in two lanes)', () => {
  const heavy: Record<string, HeavyFile> = {
    vm: { lane: 'vm', minutes: 25 },
    upgrade: { lane: 'containers', minutes: 13 },
    repair: { lane: 'containers', minutes: 11 },
    deploy: { lane: 'containers', minutes: 8 },
  };

  it('starts one file of each lane side by side, walks each lane longest first, then the light files in their order', () => {
    const files = [...light(2), { path: 'deploy' }, { path: 'repair' }, ...light(4).slice(2), { path: 'vm' }, { path: 'upgrade' }];
    expect(orderFiles(files, heavy).map((f) => f.path)).toEqual(['upgrade', 'vm', 'repair', 'deploy', ...light(4).map((f) => f.path)]);
  });

  it('keeps every file exactly once, with or without heavy files', () => {
    const files = [...light(3), { path: 'vm' }];
    expect(orderFiles(files, heavy).map((f) => f.path)).toEqual(['vm', ...light(3).map((f) => f.path)]);
    expect(orderFiles(light(3), heavy)).toEqual(light(3));
  });

  it('names heavy files that exist', () => {
    for (const path of Object.keys(HEAVY_FILES)) expect(existsSync(path), path).toBe(true);
  });
});
