import { appendFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { RunnerMessage } from '@carapace/protocol';

/** A numbered event of an execution, as it goes on the wire. */
export type OutboxEvent =
  | Required<Pick<RunnerMessage, 'step'>>
  | Required<Pick<RunnerMessage, 'log'>>
  | Required<Pick<RunnerMessage, 'artifact'>>
  | Required<Pick<RunnerMessage, 'result'>>;

interface Stored {
  seq: number;
  message: OutboxEvent;
  bytes: number;
}

interface Lane {
  nextSeq: number;
  acked: number;
  memory: Stored[];
  /** Events past the memory bound, in order, after every event in `memory`. */
  spill: { path: string; count: number; lastSeq: number } | null;
  finished: boolean;
}

function sizeOf(message: OutboxEvent): number {
  if ('log' in message) return message.log?.text?.length ?? 0;
  if ('artifact' in message) return message.artifact?.content?.length ?? 0;
  return 256;
}

/**
 * Keeps every numbered event of each execution until the control plane acknowledges it
 * (ARCHITECTURE.md "Events are numbered"). Events live in memory up to a byte bound; past
 * it, an execution's further events are appended to a file in `spillDir` (and read back on
 * resend), so a long outage costs disk, not memory, and loses nothing.
 */
export class Outbox {
  private readonly lanes = new Map<string, Lane>();
  private memoryBytes = 0;
  private drainedWaiters: (() => void)[] = [];

  constructor(
    private readonly spillDir: string,
    private readonly memoryLimitBytes: number,
  ) {}

  /** Numbers an event of `executionId`, keeps it, and returns it for sending. */
  push(executionId: string, make: (seq: number) => OutboxEvent): OutboxEvent {
    let lane = this.lanes.get(executionId);
    if (!lane) {
      lane = { nextSeq: 1, acked: 0, memory: [], spill: null, finished: false };
      this.lanes.set(executionId, lane);
    }
    const seq = lane.nextSeq++;
    const message = make(seq);
    if ('result' in message) lane.finished = true;
    const bytes = sizeOf(message);
    if (lane.spill || this.memoryBytes + bytes > this.memoryLimitBytes) {
      if (!lane.spill) {
        mkdirSync(this.spillDir, { recursive: true, mode: 0o700 });
        lane.spill = { path: join(this.spillDir, `${executionId}.jsonl`), count: 0, lastSeq: 0 };
        rmSync(lane.spill.path, { force: true });
      }
      appendFileSync(lane.spill.path, `${JSON.stringify({ seq, message })}\n`, { mode: 0o600 });
      lane.spill.count += 1;
      lane.spill.lastSeq = seq;
    } else {
      lane.memory.push({ seq, message, bytes });
      this.memoryBytes += bytes;
    }
    return message;
  }

  /** Drops the events of `executionId` up to `seq`; forgets a finished execution once all is acknowledged. */
  ack(executionId: string, seq: number): void {
    const lane = this.lanes.get(executionId);
    if (!lane || seq <= lane.acked) return;
    lane.acked = seq;
    while (lane.memory.length && (lane.memory[0]?.seq ?? Infinity) <= seq) {
      this.memoryBytes -= lane.memory.shift()?.bytes ?? 0;
    }
    if (lane.spill && lane.spill.lastSeq <= seq) {
      rmSync(lane.spill.path, { force: true });
      lane.spill = null;
    }
    if (lane.finished && lane.acked >= lane.nextSeq - 1) this.lanes.delete(executionId);
    this.settleDrained();
  }

  /** Every unacknowledged event, in order per execution, to resend after a reconnect. */
  *unacked(): Generator<OutboxEvent> {
    for (const lane of [...this.lanes.values()]) {
      for (const stored of [...lane.memory]) if (stored.seq > lane.acked) yield stored.message;
      if (lane.spill) {
        const lines = readFileSync(lane.spill.path, 'utf8').split('\n');
        for (const line of lines) {
          if (!line) continue;
          const { seq, message } = JSON.parse(line) as { seq: number; message: OutboxEvent };
          if (seq > lane.acked) yield message;
        }
      }
    }
  }

  /** Forgets an execution entirely (the control plane gave it up). */
  drop(executionId: string): void {
    const lane = this.lanes.get(executionId);
    if (!lane) return;
    for (const s of lane.memory) this.memoryBytes -= s.bytes;
    if (lane.spill) rmSync(lane.spill.path, { force: true });
    this.lanes.delete(executionId);
    this.settleDrained();
  }

  /** Resolves once no event is unacknowledged (at once when none is). */
  drained(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainedWaiters.push(resolve));
  }

  private settleDrained(): void {
    if (this.drainedWaiters.length === 0 || this.pending > 0) return;
    for (const resolve of this.drainedWaiters.splice(0)) resolve();
  }

  /** Number of unacknowledged events (memory and disk). */
  get pending(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.nextSeq - 1 - lane.acked;
    return n;
  }

  /** Executions still producing events or with events not yet acknowledged. */
  get executionIds(): string[] {
    return [...this.lanes.keys()];
  }

  /** Bytes held in memory. */
  get bytesInMemory(): number {
    return this.memoryBytes;
  }

  /** Whether an execution's result is still unacknowledged or it is still producing events. */
  has(executionId: string): boolean {
    return this.lanes.has(executionId);
  }
}
