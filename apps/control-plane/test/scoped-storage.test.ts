import { describe, expect, it } from 'vitest';
import { ScopedStorage } from '../src/db/scoped-storage.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('ScopedStorage', () => {
  it('carries the store through awaits and started tasks, only while the run is under way', async () => {
    const storage = new ScopedStorage<string>();
    expect(storage.getStore()).toBeUndefined();
    let late: Promise<string | undefined> | undefined;
    const inside = await storage.run('tx', async () => {
      await tick();
      late = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return storage.getStore();
      })();
      return storage.getStore();
    });
    expect(inside).toBe('tx');
    expect(storage.getStore()).toBeUndefined();
    // a task started inside and still running after the run ended sees no store
    expect(await late).toBeUndefined();
  });

  it('keeps concurrent runs apart, and each sees its own store until the last one ends', async () => {
    const storage = new ScopedStorage<number>();
    let releaseFirst = () => undefined as void;
    const first = storage.run(1, async () => {
      await new Promise<void>((resolve) => (releaseFirst = resolve));
      return storage.getStore();
    });
    const second = await storage.run(2, async () => {
      await tick();
      return storage.getStore();
    });
    expect(second).toBe(2);
    releaseFirst();
    expect(await first).toBe(1);
    expect(storage.getStore()).toBeUndefined();
    // and it runs again after being disabled
    expect(await storage.run(3, async () => (await tick(), storage.getStore()))).toBe(3);
  });
});
