/** The time, behind a port so tests can move it. */
export interface Clock {
  /** Unix time in milliseconds. */
  nowMs(): number;
}

/** Unix time in whole seconds. */
export function nowS(clock: Clock): number {
  return Math.floor(clock.nowMs() / 1000);
}

/** The system clock. */
export const systemClock: Clock = { nowMs: () => Date.now() };

/** Password hashing: slow on purpose, bounded by the process's CPUs (adapters/passwords.ts). */
export interface PasswordHasher {
  /** A stored form of the password (salted, slow to derive). */
  hash(password: string): Promise<string>;
  /** Whether the password is the one of the stored form, compared in constant time. */
  verify(password: string, stored: string): Promise<boolean>;
  /** A stored form no password matches: what an unknown login is checked against, for the same timing as a known one. */
  readonly dummy: string;
}

/** One e-mail. */
export interface Mail {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

/** Sends e-mail in the background. */
export interface Mailer {
  /**
   * Queues a mail and never waits for its delivery: resolves once the mail is queued. The
   * control plane's mailer stores it in the database: called inside a transaction (awaited
   * within its callback), the mail is committed or rolled back with it, and its delivery
   * starts only after the commit.
   */
  send(mail: Mail): Promise<void>;
  /** Waits (briefly) for the mail under way, then closes the transport. */
  close(): Promise<void>;
}
