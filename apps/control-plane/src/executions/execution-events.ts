// The messages of executions the replicas tell each other through the bus (`Bus` channels
// `execution` and `cancel`), and how they are read back.

/**
 * Something happened to an execution: a log chunk, a step, a state change (`final` when it
 * ended). `resync`, with the execution id `*`: events may have been missed (the bus was
 * lost for a while), whoever waits on an execution should look again.
 */
export interface ExecutionEvent {
  readonly executionId: string;
  readonly kind: 'log' | 'step' | 'state' | 'resync';
  readonly final?: boolean;
}

/** The execution id of a `resync` event: every execution. */
export const EVERY_EXECUTION = '*';

/** An `execution` bus message, or null when it is not one. */
export function parseEvent(payload: string): ExecutionEvent | null {
  try {
    const value = JSON.parse(payload) as Partial<ExecutionEvent>;
    if (typeof value.executionId !== 'string' || (value.kind !== 'log' && value.kind !== 'step' && value.kind !== 'state')) return null;
    return { executionId: value.executionId, kind: value.kind, final: value.final === true };
  } catch {
    return null;
  }
}

/** A `cancel` bus message, or null when it is not one. */
export function parseCancel(payload: string): { executionId: string; runnerId: string } | null {
  try {
    const value = JSON.parse(payload) as { executionId?: unknown; runnerId?: unknown };
    return typeof value.executionId === 'string' && typeof value.runnerId === 'string' ? { executionId: value.executionId, runnerId: value.runnerId } : null;
  } catch {
    return null;
  }
}
