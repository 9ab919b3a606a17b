import { and, eq, gt, inArray, lte } from 'drizzle-orm';
import type { Db } from './client.js';
import { serverLocks } from './schema/index.js';

/** A held server lock. */
export type ServerLock = typeof serverLocks.$inferSelect;

/** Server locks as leases (ARCHITECTURE.md "Server locks"). Times in milliseconds. */
export class LockRepository {
  constructor(private readonly db: Db) {}

  /** The unexpired lock of a server, if any. */
  lockOf(serverId: string, nowMs: number): ServerLock | undefined {
    return this.db
      .select()
      .from(serverLocks)
      .where(and(eq(serverLocks.serverId, serverId), gt(serverLocks.expiresAt, nowMs)))
      .get();
  }

  /** Every unexpired lock. */
  held(nowMs: number): ServerLock[] {
    return this.db.select().from(serverLocks).where(gt(serverLocks.expiresAt, nowMs)).all();
  }

  /**
   * Locks every server for the execution at once, or none: false when any of them holds an
   * unexpired lock. The caller holds the transaction.
   */
  lockAll(serverIds: readonly string[], executionId: string, owner: string, expiresAt: number, nowMs: number): boolean {
    if (serverIds.length === 0) return true;
    const taken = this.db
      .select()
      .from(serverLocks)
      .where(and(inArray(serverLocks.serverId, [...serverIds]), gt(serverLocks.expiresAt, nowMs)))
      .all();
    if (taken.length > 0) return false;
    this.db.delete(serverLocks).where(inArray(serverLocks.serverId, [...serverIds])).run();
    this.db
      .insert(serverLocks)
      .values(serverIds.map((serverId) => ({ serverId, executionId, owner, expiresAt })))
      .run();
    return true;
  }

  /** Extends every lease of an owner; returns how many. */
  renew(owner: string, expiresAt: number): number {
    return this.db.update(serverLocks).set({ expiresAt }).where(eq(serverLocks.owner, owner)).run().changes;
  }

  /** Extends every lease, whoever holds it; returns how many. */
  renewAll(expiresAt: number): number {
    return this.db.update(serverLocks).set({ expiresAt }).run().changes;
  }

  /** Extends the leases of one execution. */
  renewExecution(executionId: string, expiresAt: number): number {
    return this.db.update(serverLocks).set({ expiresAt }).where(eq(serverLocks.executionId, executionId)).run().changes;
  }

  /** Releases the locks of an execution. */
  release(executionId: string): void {
    this.db.delete(serverLocks).where(eq(serverLocks.executionId, executionId)).run();
  }

  /** The executions whose leases have expired. */
  expiredExecutions(nowMs: number): string[] {
    const rows = this.db
      .selectDistinct({ executionId: serverLocks.executionId })
      .from(serverLocks)
      .where(lte(serverLocks.expiresAt, nowMs))
      .all();
    return rows.map((r) => r.executionId);
  }
}
