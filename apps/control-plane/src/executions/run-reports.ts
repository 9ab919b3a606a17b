import type { EventKey, ExecutionEventsRepository, StepInput } from '../db/execution-events.repository.js';
import type { Clock } from '../ports.js';
import { Batcher } from '../batcher.js';
import type { EventCounts, EventReport } from './execution.types.js';
import type { ExecutionEvent } from './execution-events.js';

/** The most reports of steps and log chunks stored together, and about the most bytes of their chunks. */
const EVENT_BATCH_MAX = 256;
const EVENT_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Stores the steps and log chunks runners report, each once, and tells the followers of each
 * execution that gained some. Reports of one turn of the event loop, and those that come while
 * others are stored, are stored together: one statement for their steps, one for their
 * chunks (`Batcher`).
 */
export class RunReports {
  private readonly waiting = new Batcher<EventReport, EventCounts>((reports) => this.store(reports), {
    maxItems: EVENT_BATCH_MAX,
    maxWeight: EVENT_BATCH_BYTES,
    weight: (r) => r.logs.reduce((n, c) => n + c.text.length, 0),
    sameTurn: true,
  });

  /**
   * `serverIdOf` names the server of a step's host in its execution; `publish` tells
   * followers; `inTransaction` says whether the caller holds a transaction (then what it
   * reports is stored in it, at once).
   */
  constructor(
    private readonly events: ExecutionEventsRepository,
    private readonly clock: Clock,
    private readonly serverIdOf: (executionId: string, host: string) => Promise<string | null>,
    private readonly publish: (event: ExecutionEvent) => Promise<void>,
    private readonly inTransaction: () => boolean,
  ) {}

  /** Stores a report; how many of its steps and chunks were new. */
  record(report: EventReport): Promise<EventCounts> {
    if (report.steps.length === 0 && report.logs.length === 0) return Promise.resolve({ steps: 0, logs: 0, logBytes: 0 });
    if (this.inTransaction()) return this.store([report]).then((counts) => counts[0] as EventCounts);
    return this.waiting.add(report);
  }

  /** Stores several reports at once; the counts of each. */
  private async store(reports: readonly EventReport[]): Promise<EventCounts[]> {
    const inputs: (StepInput & EventKey)[] = [];
    for (const { steps } of reports) {
      for (const { executionId, seq, report } of steps) {
        const { host, ...rest } = report;
        inputs.push({ ...rest, executionId, seq, serverId: await this.serverIdOf(executionId, host) });
      }
    }
    const nowS = Math.floor(this.clock.nowMs() / 1000);
    const addedSteps = await this.events.addSteps(inputs, nowS);
    const addedLogs = await this.events.appendLogs(reports.flatMap((r) => r.logs));
    for (const id of new Set(addedSteps.map((k) => k.executionId))) await this.publish({ executionId: id, kind: 'step' });
    for (const id of new Set(addedLogs.map((c) => c.executionId))) await this.publish({ executionId: id, kind: 'log' });
    // Each new step and chunk counts for the first report that brought it.
    const newSteps = new Set(addedSteps.map((k) => `${k.seq} ${k.executionId}`));
    const newLogs = new Set(addedLogs.map((c) => `${c.offset} ${c.executionId}`));
    return reports.map(({ steps, logs }) => {
      const counts = { steps: 0, logs: 0, logBytes: 0 };
      for (const { executionId, seq } of steps) if (newSteps.delete(`${seq} ${executionId}`)) counts.steps += 1;
      for (const c of logs) {
        if (!newLogs.delete(`${c.offset} ${c.executionId}`)) continue;
        counts.logs += 1;
        counts.logBytes += Buffer.byteLength(c.text);
      }
      return counts;
    });
  }
}
