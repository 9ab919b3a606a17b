// The order in which `vitest run` hands test files to its workers (README.md, after
// "The two commands").
//
// The suite runs two files at a time. The files that run a Ceph cluster (HEAVY) are the run's
// longest path. They go first, in two lanes that run side by side, one file of each lane at a
// time: the containers' lane (Ceph daemons in containers: mostly waiting on Ceph's timers) and
// the VM lane (a QEMU guest under TCG: one core of emulated CPU). Each lane is walked longest
// first; the light files follow, and fill the workers as the lanes end. The Ceph system locks
// (test/e2e/ceph/system.ts) keep one file of a lane at a time even if the order is upset.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Which lane a heavy file runs in, and its minutes measured in a whole run on the CI machine (2 cores, TCG for VM hosts, the two lanes side by side). */
export interface HeavyFile {
  lane: 'containers' | 'vm';
  minutes: number;
}

export const HEAVY_FILES: Readonly<Record<string, HeavyFile>> = {
  'test/e2e/ceph-vm.e2e.test.ts': { lane: 'vm', minutes: 22 },
  'test/e2e/ceph-upgrade.e2e.test.ts': { lane: 'containers', minutes: 10 },
  'test/e2e/ceph-repair.e2e.test.ts': { lane: 'containers', minutes: 8 },
  'test/e2e/ceph.e2e.test.ts': { lane: 'containers', minutes: 12 },
  // No Ceph. npm test builds its three OCI images before the suite (scripts/test.sh; 2.5
  // minutes cold inside the test, 1 warm): in the containers' lane, so that even a cold build
  // never runs beside one of their Ceph files.
  'test/e2e/package-images.e2e.test.ts': { lane: 'containers', minutes: 1 },
};

/** A test file as the order sees it: its path from the root of the checkout. */
export interface QueuedFile {
  path: string;
}

/**
 * The queue: the heavy files first, taking the lanes in turn (each lane longest first, the
 * lane with the most minutes first), then the light files in the order given.
 */
export function orderFiles<T extends QueuedFile>(files: readonly T[], heavy: Readonly<Record<string, HeavyFile>> = HEAVY_FILES): T[] {
  const lanes = new Map<string, T[]>();
  for (const file of files) {
    const h = heavy[file.path];
    if (!h) continue;
    lanes.set(h.lane, [...(lanes.get(h.lane) ?? []), file]);
  }
  const minutes = (f: T): number => heavy[f.path]?.minutes ?? 0;
  const total = (fs: T[]): number => fs.reduce((sum, f) => sum + minutes(f), 0);
  const ordered = [...lanes.values()]
    .map((fs) => [...fs].sort((a, b) => minutes(b) - minutes(a) || a.path.localeCompare(b.path)))
    .sort((a, b) => total(b) - total(a));
  const queue: T[] = [];
  for (let i = 0; ordered.some((fs) => i < fs.length); i++) {
    for (const fs of ordered) if (i < fs.length) queue.push(fs[i] as T);
  }
  queue.push(...files.filter((f) => heavy[f.path] === undefined));
  return queue;
}

/** Vitest's sequencer with the heavy files first, in their lanes (its sharding and its own sort of the light files kept). */
export default class LaneSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    return orderFiles(sorted.map((spec) => ({ spec, path: relative(root, spec.moduleId) }))).map((f) => f.spec);
  }
}
