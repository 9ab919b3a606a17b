/** Helpers of the execution pages (the general formatting is in `format.ts`). */

/** The states of an execution (api-v1 §5), in the order of the filters. */
export const EXECUTION_STATES = ['created', 'started', 'canceling', 'completed', 'failed', 'canceled'] as const;
/** The states in which an execution is over. */
export const FINAL_STATES: readonly string[] = ['completed', 'failed', 'canceled'];

/** Whether an execution in this state is over. */
export function isFinal(state: string | undefined): boolean {
  return state !== undefined && FINAL_STATES.includes(state);
}

/** Whether an execution in this state can still be canceled. */
export function isCancelable(state: string | undefined): boolean {
  return state === 'created' || state === 'started';
}

/** The colour of a step result badge. */
export function resultColor(result: string): string {
  switch (result) {
    case 'ok':
      return 'green';
    case 'error':
      return 'red';
    case 'unreachable':
      return 'orange';
    case 'skipped':
      return 'gray';
    default:
      return 'violet';
  }
}

/** A step's duration in seconds from its start and finish times; null when unknown. */
export function stepSeconds(started: number | null | undefined, finished: number | null | undefined): number | null {
  if (!started || !finished || finished < started) return null;
  return finished - started;
}
