/** Messages between the API benchmark (parent) and a server under test (child, over the IPC channel). */

/** Which server a child runs. */
export type ServerKind = 'bare' | 'carapace';

/** What the Carapace child seeded, for the parent to build its requests. */
export interface Fixtures {
  /** A seeded user to read, and how many live users there are (root included). */
  readonly userId: string;
  readonly users: number;
  /** A few seeded server ids (for a playbook configuration), and how many servers there are. */
  readonly serverIds: readonly string[];
  readonly servers: number;
  /** Mean size of one server's facts, in bytes of JSON. */
  readonly factsBytes: number;
  readonly seedUsersMs: number;
  readonly seedServersMs: number;
  /** Size of the database file after seeding, in bytes. */
  readonly dbBytes: number;
}

/** Child → parent. */
export type ChildMessage =
  | { readonly type: 'ready'; readonly port: number; readonly fixtures?: Fixtures }
  | { readonly type: 'cpu'; readonly seq: number; readonly userMicros: number; readonly systemMicros: number; readonly atMs: number }
  | { readonly type: 'twin-set'; readonly name: string }
  | { readonly type: 'error'; readonly message: string };

/**
 * Parent → child. `twin` (bare server only) sets the constant JSON body that `GET` and
 * `POST /twin/{name}` answer with: the bare twin of a Carapace route returns the very body
 * Carapace returned for it.
 */
export type ParentMessage =
  | { readonly type: 'cpu'; readonly seq: number }
  | { readonly type: 'twin'; readonly name: string; readonly json: string }
  | { readonly type: 'stop' };

/** Environment of a Carapace child: data directory, root password, what to seed. */
export const ENV_DATA_DIR = 'BENCH_CHILD_DATA_DIR';
export const ENV_ADMIN_PASSWORD = 'BENCH_CHILD_ADMIN_PASSWORD';
export const ENV_USERS = 'BENCH_CHILD_USERS';
export const ENV_SERVERS = 'BENCH_CHILD_SERVERS';
