/**
 * The interfaces of what each engine builds in its own way (`SqlEngine.changeCounters`,
 * `SqlEngine.openBus`), apart from their implementations (`change-counter.ts`, `bus.ts`), so that
 * the engine's interface can name them without importing back the modules that use it.
 */

/**
 * What the replicas of a control plane tell each other:
 * - `work`: executions were queued or servers freed; every replica dispatches to its runners;
 * - `execution`: an execution changed (`{"executionId", "kind"}`); followers of its log wake;
 * - `cancel`: a running execution must stop (`{"executionId", "runnerId"}`); the replica
 *   holding that runner's stream tells it;
 * - `runner_revoked`: a runner's token was revoked (its name); its stream closes;
 * - `facts`: a server needs its facts gathered (its id); its request is a row of
 *   `facts_requests`, which one replica claims: the message only wakes them to look.
 */
export type BusChannel = 'work' | 'execution' | 'cancel' | 'runner_revoked' | 'facts';

/**
 * Messages between the replicas sharing a database. A message published inside a
 * transaction goes out when it commits, and not at all when it rolls back; every replica,
 * the publisher included, receives it: the publisher at once after the commit, the others
 * as soon as the database tells them. On SQLite there is one control plane and messages stay
 * in its memory; on PostgreSQL they are `NOTIFY`s, heard through one `LISTEN`ing connection
 * per replica.
 */
export interface Bus {
  publish(channel: BusChannel, payload?: string): Promise<void>;
  /**
   * Calls `handler` with the payload of each message on `channel`, and whether this replica
   * sent it (`here`) or another one (`elsewhere`); returns its removal.
   */
  subscribe(channel: BusChannel, handler: BusHandler): () => void;
  /**
   * Calls `handler` when messages may have been missed (the listening connection was lost
   * and is back): whoever waits on the bus should look again. Returns its removal.
   */
  onResync(handler: () => void): () => void;
  close(): Promise<void>;
}

/** Where a message comes from: this replica, or another one sharing the database. */
export type BusOrigin = 'here' | 'elsewhere';
export type BusHandler = (payload: string, from: BusOrigin) => void;

/**
 * Counts the writes to tables, so that what is read from them can be cached and known stale
 * exactly: a cache takes the count before it reads, keeps what it read under that count, and
 * any later write changes it.
 *
 * Every repository writing a table bumps its counter (`bump`) with each write that can change
 * what a cache of the table holds (a write that cannot, such as the insert of a token under a
 * new key, which no cache has read, need not: `AuthRepository.addToken`). What is read inside
 * a transaction must not be cached (it may be rolled back): see `Database.inTransaction`.
 *
 * On SQLite the control plane is the only process writing its database, and the counts live
 * in memory (a write rolled back still bumps: a needless refill, never a stale answer). On
 * PostgreSQL several replicas share the database, so the counts are rows of
 * `change_counters`, bumped in the writer's transaction: a replica reads them before it trusts
 * its cache, and a change committed through another replica is seen by the next request.
 */
export interface ChangeCounters {
  /** A number that changes whenever one of `tables` is written. */
  read(tables: readonly string[]): Promise<number>;
  /** Records a write to `table` (in the caller's transaction, if one is open). */
  bump(table: string): Promise<void>;
}
