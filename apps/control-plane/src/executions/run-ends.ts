import type { ExecutionData, ExecutionState } from '@carapace/models';
import type { Bus } from '../db/bus.js';
import type { ExecutionEventsRepository } from '../db/execution-events.repository.js';
import type { LockRepository } from '../db/lock.repository.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import type { Clock } from '../ports.js';
import { Batcher } from '../batcher.js';
import { isFinal } from './execution-state.js';
import type { RunEffects } from './run-effects.js';
import type { EndReport, StateChange } from './execution.types.js';


/** The most ends of runs stored in one transaction. */
const END_BATCH_MAX = 256;

/**
 * Stores the ends of runs: the final state, the playbook's effects on success (in the same
 * transaction), the run's files dropped, its leases released, and work announced. Ends
 * reported while others are stored wait for them and are then stored together, in one
 * transaction whose statements do not grow in number with them: under load, a burst of
 * results costs a few round trips, not a few per run. The ends of one turn of the event loop
 go together too (on SQLite a group is stored before the next end can come). If a
 * group fails, each end is stored alone (`Batcher`), so one whose effects cannot be applied
 * fails only itself.
 */
export class RunEnds {
  private readonly waiting = new Batcher<EndReport, Stored<ExecutionData> | null>((ends) => this.finishMany(ends), {
    maxItems: END_BATCH_MAX,
    sameTurn: true,
  });

  /** `appendMany` stores new states (the engine's: events published, `ended` emitted). */
  constructor(
    private readonly executions: VersionedRepository<ExecutionData>,
    private readonly eventsRepo: ExecutionEventsRepository,
    private readonly effects: RunEffects,
    private readonly locks: LockRepository,
    private readonly bus: Bus,
    private readonly clock: Clock,
    private readonly appendMany: (changes: readonly StateChange[]) => Promise<Stored<ExecutionData>[]>,
  ) {}

  /**
   * Ends a run; null when it is over already (or unknown). Inside the caller's transaction,
   * it is stored in that transaction.
   */
  finish(end: EndReport): Promise<Stored<ExecutionData> | null> {
    if (this.executions.inTransaction()) return this.finishMany([end]).then((done) => done[0] ?? null);
    return this.waiting.add(end);
  }

  /** Ends runs in one transaction; null for each one already over, or named twice. */
  private finishMany(ends: readonly EndReport[]): Promise<(Stored<ExecutionData> | null)[]> {
    const nowS = Math.floor(this.clock.nowMs() / 1000);
    return this.executions.transaction(async () => {
      const latest = await this.executions.getManyForUpdate(ends.map((e) => e.executionId));
      const changes: StateChange[] = [];
      const at: number[] = [];
      const seen = new Set<string>();
      for (const [i, end] of ends.entries()) {
        const current = latest.get(end.executionId);
        if (!current || isFinal(current.data.state as ExecutionState) || seen.has(end.executionId)) continue;
        seen.add(end.executionId);
        // `canceled` is what a user asked for. A run the runner stopped on its own (its drain
        // ran out of grace) was not: it failed, with the runner's reason.
        const selfCanceled = end.outcome === 'canceled' && current.data.state !== 'canceling';
        const to: ExecutionState = end.outcome === 'completed' ? 'completed' : end.outcome === 'canceled' && !selfCanceled ? 'canceled' : 'failed';
        const why = selfCanceled ? `runner ${current.data.runner_id ?? 'unknown'} stopped the run: ${end.reason ?? 'no reason given'}` : end.reason;
        changes.push({ latest: current, to, patch: { time_finished: nowS, reason: why } });
        at.push(i);
      }
      const out: (Stored<ExecutionData> | null)[] = ends.map(() => null);
      if (changes.length === 0) return out;
      const done = await this.appendMany(changes);
      // the runs' files serve their effects (when they completed), then none stays
      const artifacts = await this.eventsRepo.takeArtifacts(done.map((e) => e.id));
      for (const execution of done) {
        // A preview changed nothing: none of the playbook's effects applies.
        if (execution.data.state === 'completed' && execution.data.preview !== true) await this.effects.apply(execution, artifacts.get(execution.id) ?? [], nowS);
      }
      await this.locks.release(done.map((e) => e.id));
      await this.bus.publish('work');
      done.forEach((execution, k) => (out[at[k] as number] = execution));
      return out;
    });
  }
}
