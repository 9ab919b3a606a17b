/**
 * The runs each runner holds, as one replica knows them: set from the database when the
 * runner says hello there (`forget`, then `hold` each run it still has), grown by what is
 * handed to it, shrunk by every end of a run through any replica (the bus). Dispatch reads it
 * on every turn, with no query.
 */
export class RunnerLoad {
  private readonly byRunner = new Map<string, Set<string>>();
  private readonly holder = new Map<string, string>();

  /** How many runs a runner holds. */
  of(runnerId: string): number {
    return this.byRunner.get(runnerId)?.size ?? 0;
  }

  hold(runnerId: string, executionId: string): void {
    let held = this.byRunner.get(runnerId);
    if (!held) {
      held = new Set();
      this.byRunner.set(runnerId, held);
    }
    held.add(executionId);
    this.holder.set(executionId, runnerId);
  }

  /** A run ended (or is not the runner's any more). */
  release(executionId: string): void {
    const runnerId = this.holder.get(executionId);
    if (runnerId === undefined) return;
    this.holder.delete(executionId);
    const held = this.byRunner.get(runnerId);
    held?.delete(executionId);
    if (held?.size === 0) this.byRunner.delete(runnerId);
  }

  /** Forgets every run of a runner (before it is told again what it holds). */
  forget(runnerId: string): void {
    for (const id of [...(this.byRunner.get(runnerId) ?? [])]) this.release(id);
  }
}
