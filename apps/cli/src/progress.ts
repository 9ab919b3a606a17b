import type { ExecutionProgress } from '@carapace/client';

const SPINNER = ['|', '/', '-', '\\'];

function elapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/**
 * The live display of `execution create --wait` on stderr: a line per state change and per
 * finished step, and on a terminal a status line (spinner, state, step counts, elapsed time)
 * redrawn in place.
 */
export class ProgressDisplay {
  private state = '';
  private steps = 0;
  private failed = 0;
  private frame = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly startedAt = Date.now();

  /**
   * @param out - Where to write (stderr).
   * @param servers - Server id → how to show it; a server not in it is shown by id.
   */
  constructor(
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean },
    private readonly servers: ReadonlyMap<string, string> = new Map(),
  ) {}

  private get tty(): boolean {
    return this.out.isTTY === true;
  }

  /** Starts redrawing the status line (on a terminal). */
  start(): void {
    if (!this.tty) return;
    this.timer = setInterval(() => this.drawStatus(), 250);
    this.timer.unref();
  }

  /** Shows a progress of the execution. */
  update(progress: ExecutionProgress): void {
    this.clearStatus();
    const { execution, newSteps } = progress;
    for (const step of newSteps) {
      this.steps++;
      if (step.data.result === 'error' || step.data.result === 'unreachable') this.failed++;
      const server = step.data.server_id ? ` [${this.servers.get(step.data.server_id) ?? step.data.server_id}]` : '';
      this.out.write(`  [${step.data.result}] ${step.data.role ? `${step.data.role}: ` : ''}${step.data.name}${server}\n`);
    }
    if (execution.data.state !== this.state) {
      this.state = execution.data.state;
      const reason = execution.data.reason ? ` (${execution.data.reason})` : '';
      this.out.write(`execution ${execution.id}: ${this.state}${reason}\n`);
    }
    if (!progress.final) this.drawStatus();
  }

  /** Stops the status line. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.clearStatus();
  }

  private drawStatus(): void {
    if (!this.tty) return;
    const spin = SPINNER[this.frame++ % SPINNER.length] ?? '';
    this.out.write(`\r\x1b[K${spin} ${this.state} · ${this.steps} steps, ${this.failed} failed · ${elapsed(Date.now() - this.startedAt)}`);
  }

  private clearStatus(): void {
    if (this.tty) this.out.write('\r\x1b[K');
  }
}
