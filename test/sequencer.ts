// The order in which `vitest run` hands test files to its workers (README.md, after
// "The two commands").
//
// The suite runs two files at a time. The files that run a Ceph cluster (HEAVY) take most of
// the run and most of the machine; two of them at once would slow both and make Ceph's own
// timeouts the tests' weather. So they are spread through the queue: the longest first, then
// as many light files as fit in its time, then the next heavy one, and so on; one worker
// walks the heavy files one after the other while the other takes the light ones beside it.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files that run a Ceph cluster, with their minutes measured on the CI machine (2 cores,
 * TCG for VM hosts): only the ratio between them and the light files matters.
 */
export const HEAVY_MINUTES: Readonly<Record<string, number>> = {
  'test/e2e/ceph.e2e.test.ts': 28,
  'test/e2e/ceph-upgrade.e2e.test.ts': 13,
  'test/e2e/ceph-repair.e2e.test.ts': 11,
};

/** A light file's minutes when nothing better is known: the light files' measured average (843 s over 118 files). */
export const LIGHT_MINUTES = 0.12;

/** A test file as the order sees it: its path from the root of the checkout, and its project. */
export interface QueuedFile {
  path: string;
  project: string;
}

/**
 * The queue: heavy files longest first, each followed by the light files that fit in its
 * minutes (in the order given), the light files left over at the end after the last heavy one.
 */
export function spreadHeavyFiles<T extends QueuedFile>(files: readonly T[], heavy: Readonly<Record<string, number>> = HEAVY_MINUTES, lightMinutes = LIGHT_MINUTES): T[] {
  const heavyFiles = files.filter((f) => heavy[f.path] !== undefined).sort((a, b) => (heavy[b.path] ?? 0) - (heavy[a.path] ?? 0) || a.path.localeCompare(b.path));
  const light = files.filter((f) => heavy[f.path] === undefined);
  const queue: T[] = [];
  let next = 0;
  for (const file of heavyFiles) {
    queue.push(file);
    let budget = heavy[file.path] ?? 0;
    while (next < light.length && budget > 0) {
      queue.push(light[next] as T);
      next += 1;
      budget -= lightMinutes;
    }
  }
  queue.push(...light.slice(next));
  return queue;
}

/** Vitest's sequencer with the heavy files spread (its sharding and its own sort of the light files kept). */
export default class SpreadSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const queued = sorted.map((spec) => ({ spec, path: relative(root, spec.moduleId), project: spec.project.name }));
    return spreadHeavyFiles(queued).map((f) => f.spec);
  }
}
