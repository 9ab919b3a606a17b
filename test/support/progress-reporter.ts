// A vitest reporter beside the default one: every few minutes it prints which tests are still
// running and for how long, and how many files have ended. The default reporter prints a file
// only when it ends, so a run stopped from outside (CI's time limit) would otherwise leave no
// trace of what was still going; with this, the last lines of any run say it.
import type { Reporter, TestCase, TestModule } from 'vitest/node';
import { freemem, loadavg } from 'node:os';
import { relative } from 'node:path';

const EVERY_MS = Number(process.env.CARAPACE_TEST_PROGRESS_MS ?? 180_000);

function minutes(ms: number): string {
  return `${(ms / 60_000).toFixed(1)} min`;
}

export default class ProgressReporter implements Reporter {
  private readonly began = Date.now();
  private readonly files = new Map<string, number>();
  private readonly cases = new Map<string, { name: string; file: string; since: number }>();
  /** The last test that ended in each running file, and when. */
  private readonly lastEnded = new Map<string, { name: string; at: number }>();
  private ended = 0;
  private total = 0;
  private timer: NodeJS.Timeout | undefined;

  onTestRunStart(specifications: ReadonlyArray<{ moduleId: string }>): void {
    this.total = specifications.length;
    if (EVERY_MS > 0) {
      this.timer = setInterval(() => this.print(), EVERY_MS);
      this.timer.unref();
    }
  }

  onTestModuleStart(module: TestModule): void {
    this.files.set(module.moduleId, Date.now());
  }

  onTestModuleEnd(module: TestModule): void {
    this.files.delete(module.moduleId);
    this.lastEnded.delete(module.moduleId);
    this.ended++;
  }

  onTestCaseReady(test: TestCase): void {
    this.cases.set(test.id, { name: test.fullName, file: test.module.moduleId, since: Date.now() });
  }

  onTestCaseResult(test: TestCase): void {
    this.cases.delete(test.id);
    this.lastEnded.set(test.module.moduleId, { name: test.name, at: Date.now() });
  }

  onTestRunEnd(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private print(): void {
    const now = Date.now();
    const lines = [`[progress] ${minutes(now - this.began)} into the run: ${this.ended} of ${this.total} files ended, ${this.files.size} running; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}, ${(freemem() / 2 ** 30).toFixed(1)} GiB free`];
    for (const [file, since] of this.files) {
      const running = [...this.cases.values()].filter((c) => c.file === file);
      const last = this.lastEnded.get(file);
      // the workers report a test's start late, or not before it ends: then say what ended last
      const between = last ? `the last test to end was "${last.name}", ${minutes(now - last.at)} ago` : 'no test of it has ended yet (its first test or a hook)';
      const what = running.map((c) => `"${c.name}" for ${minutes(now - c.since)}`).join('; ') || between;
      lines.push(`[progress]   ${relative(process.cwd(), file)} (${minutes(now - since)}): ${what}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
