import type { Logger } from 'pino';

/**
 * A lifecycle as an explicit table (HOUSE-STYLE 11): a transition the table does not list
 * throws, and every transition is logged (debug) with the context given.
 */
export class StateMachine<S extends string> {
  private current: S;

  constructor(
    private readonly name: string,
    initial: S,
    private readonly table: Readonly<Record<S, readonly S[]>>,
    private readonly log: Logger,
    private readonly context: Readonly<Record<string, unknown>> = {},
  ) {
    this.current = initial;
  }

  get state(): S {
    return this.current;
  }

  /** Moves to `next`; throws when the table does not allow it from the current state. */
  transition(next: S): void {
    const from = this.current;
    if (!this.table[from].includes(next)) throw new Error(`${this.name}: illegal transition ${from} → ${next}`);
    this.current = next;
    this.log.debug({ ...this.context, from, to: next }, `${this.name} ${from} → ${next}`);
  }
}

/** For the `default` of an exhaustive switch: a value the types say cannot exist. */
export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}
