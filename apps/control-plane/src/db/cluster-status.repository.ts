import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { Database } from './database.js';

/** A row of `cluster_statuses`: the claim of a cluster's collection and what it last got. */
export interface StoredClusterStatus {
  readonly clusterId: string;
  readonly requestId: string;
  readonly dueMs: number;
  readonly runner: string | null;
  readonly sentMs: number | null;
  /** `CephReport` JSON of the last success. */
  readonly report: string | null;
  readonly collectedAt: number | null;
  readonly attemptedAt: number | null;
  readonly unreachableReason: string | null;
  readonly unreachableSince: number | null;
  /** `{runner, monitor, duration_ms}` JSON of the last attempt. */
  readonly collection: string | null;
  /** `HEALTH_OK`, `HEALTH_WARN`, `HEALTH_ERR` or `UNREACHABLE`; null before the first attempt. */
  readonly health: string | null;
  readonly notifiedHealth: string | null;
  readonly pointAt: number | null;
  /** The last report's numbers (0 before any). */
  readonly osdsUp: number;
  readonly osdsIn: number;
  readonly osdsTotal: number;
  readonly rawTotalBytes: number;
  readonly rawUsedBytes: number;
}

/** The numbers of the last report, for `/metrics` and the history. */
export interface StatusNumbers {
  readonly osdsUp: number;
  readonly osdsIn: number;
  readonly osdsTotal: number;
  readonly rawTotalBytes: number;
  readonly rawUsedBytes: number;
}

/** What an attempt changes in a row (the claim is released, due again at `dueMs`). */
export interface StatusAttempt {
  readonly dueMs: number;
  readonly attemptedAt: number;
  readonly collection: string;
  readonly health: string;
  /** Set on success: the report and its numbers; the unreachable streak ends. */
  readonly success: { readonly report: string; readonly collectedAt: number; readonly numbers: StatusNumbers } | null;
  /** Set on failure: why, and when the streak began. */
  readonly failure: { readonly reason: string; readonly since: number } | null;
}

/** One row of `cluster_status_points`. */
export interface StoredStatusPoint extends StatusNumbers {
  readonly at: number;
  readonly health: string;
}

/** A row for `/metrics`: a cluster's last health and numbers. */
export interface StatusGaugeRow extends StatusNumbers {
  readonly clusterId: string;
  readonly health: string | null;
  readonly collectedAt: number | null;
}

const COLUMNS = sql.raw(
  `cluster_id AS "clusterId", request_id AS "requestId", due_ms AS "dueMs", runner, sent_ms AS "sentMs", report, collected_at AS "collectedAt", attempted_at AS "attemptedAt", unreachable_reason AS "unreachableReason", unreachable_since AS "unreachableSince", collection, health, notified_health AS "notifiedHealth", point_at AS "pointAt", coalesce(osds_up, 0) AS "osdsUp", coalesce(osds_in, 0) AS "osdsIn", coalesce(osds_total, 0) AS "osdsTotal", coalesce(raw_total_bytes, 0) AS "rawTotalBytes", coalesce(raw_used_bytes, 0) AS "rawUsedBytes"`,
);
/** Every column but the report: what a hand-out reads. */
const CLAIM_COLUMNS = sql.raw(`cluster_id AS "clusterId", request_id AS "requestId", due_ms AS "dueMs", runner, sent_ms AS "sentMs"`);

/**
 * The `cluster_statuses` and `cluster_status_points` tables (issue 30), shared by the
 * replicas. A row is handed to one runner at a time, as `facts_requests` rows are: `due`
 * takes rows with `FOR UPDATE SKIP LOCKED` on PostgreSQL, `claim` gives the row a new request
 * id, the runner and the answer's deadline, and `record` changes it only if it still holds
 * the request id of the answer: one replica records (and notifies) each collection.
 */
export class ClusterStatusRepository {
  constructor(private readonly db: Database) {}

  /** Runs `fn` in a transaction (joining the caller's). */
  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  /** Runs `fn` once the caller's transaction commits (at once outside one). */
  afterCommit(fn: () => void): void {
    this.db.afterCommit(fn);
  }

  /** Starts collecting a cluster at `nowMs` unless it is collected already (its row kept as it is). */
  async ensure(clusterId: string, nowMs: number): Promise<void> {
    await this.db.run(sql`
      INSERT INTO cluster_statuses (cluster_id, request_id, due_ms) VALUES (${clusterId}, ${randomUUID()}, ${nowMs})
      ON CONFLICT (cluster_id) DO NOTHING`);
  }

  /**
   * Asks for a collection of the cluster at `nowMs` (an execution on it ended): a new row, or
   * an existing one due now unless a runner is collecting it already.
   */
  async collectSoon(clusterId: string, nowMs: number): Promise<void> {
    await this.db.run(sql`
      INSERT INTO cluster_statuses (cluster_id, request_id, due_ms) VALUES (${clusterId}, ${randomUUID()}, ${nowMs})
      ON CONFLICT (cluster_id) DO UPDATE SET due_ms = excluded.due_ms
       WHERE cluster_statuses.runner IS NULL AND cluster_statuses.due_ms > excluded.due_ms`);
  }

  /** A cluster's row, if it has one. */
  async get(clusterId: string): Promise<StoredClusterStatus | undefined> {
    return this.db.get<StoredClusterStatus>(sql`SELECT ${COLUMNS} FROM cluster_statuses WHERE cluster_id = ${clusterId}`);
  }

  /** The rows of these clusters (in no order). */
  async getMany(clusterIds: readonly string[]): Promise<StoredClusterStatus[]> {
    if (clusterIds.length === 0) return [];
    const out: StoredClusterStatus[] = [];
    for (let i = 0; i < clusterIds.length; i += 500) {
      const ids = clusterIds.slice(i, i + 500);
      out.push(...(await this.db.all<StoredClusterStatus>(sql`SELECT ${COLUMNS} FROM cluster_statuses WHERE cluster_id IN (${sql.join(ids.map((id) => sql`${id}`), sql`, `)})`)));
    }
    return out;
  }

  /** Whether any row is due at `nowMs` (one indexed read). */
  async anyDue(nowMs: number): Promise<boolean> {
    return (await this.db.get<{ one: number }>(sql`SELECT 1 AS one FROM cluster_statuses WHERE due_ms <= ${nowMs} LIMIT 1`)) !== undefined;
  }

  /** The earliest due time, null when there is no row. */
  async nextDueMs(): Promise<number | null> {
    return (await this.db.get<{ due: number | null }>(sql`SELECT min(due_ms) AS due FROM cluster_statuses`))?.due ?? null;
  }

  /**
   * Up to `limit` rows due at `nowMs`, after `after`, in the order of their due time, locked
   * until the caller's transaction ends; on PostgreSQL those another replica holds are skipped.
   */
  async due(nowMs: number, limit: number, after?: { dueMs: number; clusterId: string }): Promise<Pick<StoredClusterStatus, 'clusterId' | 'requestId' | 'dueMs' | 'runner' | 'sentMs'>[]> {
    const skip = this.db.engine.skipLocked();
    const from = after ? sql` AND (due_ms, cluster_id) > (${after.dueMs}, ${after.clusterId})` : sql``;
    return this.db.all(sql`
      SELECT ${CLAIM_COLUMNS} FROM cluster_statuses WHERE due_ms <= ${nowMs}${from}
       ORDER BY due_ms, cluster_id LIMIT ${limit}${skip}`);
  }

  /** Hands a collection to `runner` as `requestId`, its answer awaited until `deadlineMs`. */
  async claim(clusterId: string, requestId: string, runner: string, nowMs: number, deadlineMs: number): Promise<void> {
    await this.db.run(sql`
      UPDATE cluster_statuses SET request_id = ${requestId}, runner = ${runner}, sent_ms = ${nowMs}, due_ms = ${deadlineMs}
       WHERE cluster_id = ${clusterId}`);
  }

  /** Puts a row off until `dueMs` without a runner (nobody can collect it now). */
  async postpone(clusterId: string, dueMs: number): Promise<void> {
    await this.db.run(sql`UPDATE cluster_statuses SET due_ms = ${dueMs}, runner = NULL, sent_ms = NULL WHERE cluster_id = ${clusterId}`);
  }

  /**
   * Records an attempt of `requestId`, only if the row still holds it, handed out (otherwise
   * another replica recorded it already, or a later request took over: false). Locks the row until the transaction ends.
   */
  async record(clusterId: string, requestId: string, a: StatusAttempt): Promise<boolean> {
    const s = a.success;
    const f = a.failure;
    const outcome = s
      ? sql`report = ${s.report}, collected_at = ${s.collectedAt}, unreachable_reason = NULL, unreachable_since = NULL,
            osds_up = ${s.numbers.osdsUp}, osds_in = ${s.numbers.osdsIn}, osds_total = ${s.numbers.osdsTotal},
            raw_total_bytes = ${s.numbers.rawTotalBytes}, raw_used_bytes = ${s.numbers.rawUsedBytes}`
      : sql`unreachable_reason = ${f?.reason ?? 'unknown'}, unreachable_since = ${f?.since ?? a.attemptedAt}`;
    const changed = await this.db.run(sql`
      UPDATE cluster_statuses SET runner = NULL, sent_ms = NULL, due_ms = ${a.dueMs}, attempted_at = ${a.attemptedAt},
             collection = ${a.collection}, health = ${a.health}, ${outcome}
       WHERE cluster_id = ${clusterId} AND request_id = ${requestId} AND runner IS NOT NULL`);
    return changed > 0;
  }

  /** Records the health last notified. */
  async setNotified(clusterId: string, health: string): Promise<void> {
    await this.db.run(sql`UPDATE cluster_statuses SET notified_health = ${health} WHERE cluster_id = ${clusterId}`);
  }

  /** Adds a history point and records its time; drops the cluster's points older than `pruneBefore`. */
  async addPoint(clusterId: string, point: StoredStatusPoint, pruneBefore: number): Promise<void> {
    await this.db.run(sql`
      INSERT INTO cluster_status_points (cluster_id, at, health, raw_total_bytes, raw_used_bytes, osds_up, osds_in, osds_total)
      VALUES (${clusterId}, ${point.at}, ${point.health}, ${point.rawTotalBytes}, ${point.rawUsedBytes}, ${point.osdsUp}, ${point.osdsIn}, ${point.osdsTotal})
      ON CONFLICT (cluster_id, at) DO NOTHING`);
    await this.db.run(sql`UPDATE cluster_statuses SET point_at = ${point.at} WHERE cluster_id = ${clusterId}`);
    await this.db.run(sql`DELETE FROM cluster_status_points WHERE cluster_id = ${clusterId} AND at < ${pruneBefore}`);
  }

  /** The cluster's points from `since` on, oldest first. */
  async history(clusterId: string, since: number): Promise<StoredStatusPoint[]> {
    return this.db.all<StoredStatusPoint>(sql`
      SELECT at, health, raw_total_bytes AS "rawTotalBytes", raw_used_bytes AS "rawUsedBytes", osds_up AS "osdsUp", osds_in AS "osdsIn", osds_total AS "osdsTotal"
        FROM cluster_status_points WHERE cluster_id = ${clusterId} AND at >= ${since} ORDER BY at`);
  }

  /** Drops every point older than `before` (of clusters no longer collected too). */
  async prune(before: number): Promise<number> {
    return this.db.run(sql`DELETE FROM cluster_status_points WHERE at < ${before}`);
  }

  /** Forgets a cluster (deleted, or without monitors any more): its row and its history. */
  async remove(clusterId: string): Promise<void> {
    await this.db.run(sql`DELETE FROM cluster_statuses WHERE cluster_id = ${clusterId}`);
    await this.db.run(sql`DELETE FROM cluster_status_points WHERE cluster_id = ${clusterId}`);
  }

  /** Every cluster's health and numbers (for `/metrics`), without the reports. */
  async gauges(): Promise<StatusGaugeRow[]> {
    return this.db.all<StatusGaugeRow>(sql`
      SELECT cluster_id AS "clusterId", health, collected_at AS "collectedAt", coalesce(osds_up, 0) AS "osdsUp", coalesce(osds_in, 0) AS "osdsIn",
             coalesce(osds_total, 0) AS "osdsTotal", coalesce(raw_total_bytes, 0) AS "rawTotalBytes", coalesce(raw_used_bytes, 0) AS "rawUsedBytes"
        FROM cluster_statuses ORDER BY cluster_id`);
  }
}
