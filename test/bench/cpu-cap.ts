// A CPU cap for a process of the benchmark: a cgroup of its own with a CFS quota, as if the
// process had a machine of that many cores to itself (bench:scale's capped setups: replicas
// of a fixed size each, on a machine that cannot give each one its own). cgroup v2 (`cpu.max`)
// or v1 (`cpu.cfs_quota_us`); it needs root, or a delegated cgroup.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup';
/** The CFS period (µs): the quota is spent over it. */
const PERIOD_US = 100_000;

export class CpuCap {
  private constructor(private readonly dir: string) {}

  /**
   * Why caps cannot be made on this machine, or null when they can: checked by making one
   * and removing it again.
   */
  static unavailable(): string | null {
    try {
      CpuCap.create('carapace-bench-probe', 1).remove();
      return null;
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  }

  /** A cgroup `name` whose processes share `cores` cores' worth of CPU time. */
  static create(name: string, cores: number): CpuCap {
    if (!(cores > 0)) throw new Error(`a CPU cap needs a number of cores above 0, not ${cores}`);
    const quota = String(Math.round(cores * PERIOD_US));
    if (existsSync(join(ROOT, 'cgroup.controllers'))) {
      // v2: the parent must hand the cpu controller down to its children.
      if (!readFileSync(join(ROOT, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('cpu')) writeFileSync(join(ROOT, 'cgroup.subtree_control'), '+cpu');
      const dir = join(ROOT, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
      return new CpuCap(dir);
    }
    const dir = join(ROOT, 'cpu', name);
    if (!existsSync(join(ROOT, 'cpu'))) throw new Error(`no cgroup cpu controller under ${ROOT}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), quota);
    return new CpuCap(dir);
  }

  /** Moves a process (all its threads) into the cap; its children made later stay in it. */
  add(pid: number): void {
    // 0 would move the writer: this process.
    if (!(pid > 0)) throw new Error(`not a process id: ${pid}`);
    writeFileSync(join(this.dir, 'cgroup.procs'), String(pid));
  }

  /** Removes the cgroup; its processes must have exited. */
  remove(): void {
    rmdirSync(this.dir);
  }
}
