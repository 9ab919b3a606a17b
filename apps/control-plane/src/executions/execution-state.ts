import type { ExecutionState } from '@carapace/models';

/** The legal transitions of an execution (api-v1 §5 states). */
const TRANSITIONS: Readonly<Record<ExecutionState, readonly ExecutionState[]>> = {
  created: ['started', 'canceled', 'failed'],
  started: ['completed', 'failed', 'canceling'],
  // A run may still end on its own while the cancel travels to the runner.
  canceling: ['canceled', 'failed', 'completed'],
  completed: [],
  failed: [],
  canceled: [],
};

/** The states of an execution a runner holds: it runs, or its cancel travels to the runner. */
export const RUNNING_STATES: readonly ExecutionState[] = ['started', 'canceling'];

/** Whether an execution in this state is over. */
export function isFinal(state: ExecutionState): boolean {
  return TRANSITIONS[state].length === 0;
}

/** An illegal transition: a bug in the caller, or a stale message from a runner. */
export class IllegalTransition extends Error {
  constructor(
    readonly from: string,
    readonly to: ExecutionState,
  ) {
    super(`execution cannot go from ${from} to ${to}`);
  }
}

/** Checks a transition; throws IllegalTransition otherwise. */
export function checkTransition(from: string, to: ExecutionState): void {
  const allowed = (TRANSITIONS as Record<string, readonly ExecutionState[] | undefined>)[from];
  if (!allowed?.includes(to)) throw new IllegalTransition(from, to);
}

/** Exhaustiveness check for switches over unions. */
export function assertNever(value: never): never {
  throw new Error(`unexpected value ${String(value)}`);
}
