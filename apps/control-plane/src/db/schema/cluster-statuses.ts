import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * What Ceph last said of each cluster (`StatusScheduler`, issue 30), one row per cluster with
 * monitors, replaced at every collection and shared by the replicas. The row is also the
 * collection's claim, as a `facts_requests` row is: `due_ms` is when it may next be handed to
 * a runner (the next interval, at once after an execution on the cluster ended, or, while a
 * runner holds it, `runner` and `sent_ms` set, the deadline of its answer); `request_id`
 * changes at every hand-out and only the answer carrying it is recorded, so one replica
 * collects a cluster at a time. `report` is the `CephReport` JSON of the last success;
 * `health` the last health seen (`HEALTH_OK`, `HEALTH_WARN`, `HEALTH_ERR` or `UNREACHABLE`)
 * and `notified_health` the last one notified (an alert goes once per change, across
 * replicas and restarts); `point_at` the time of the last history point.
 */
export const clusterStatuses = sqliteTable(
  'cluster_statuses',
  {
    clusterId: text('cluster_id').primaryKey(),
    requestId: text('request_id').notNull(),
    dueMs: integer('due_ms').notNull(),
    runner: text('runner'),
    sentMs: integer('sent_ms'),
    report: text('report'),
    collectedAt: integer('collected_at'),
    attemptedAt: integer('attempted_at'),
    unreachableReason: text('unreachable_reason'),
    unreachableSince: integer('unreachable_since'),
    /** JSON `{runner, monitor, duration_ms}` of the last attempt. */
    collection: text('collection'),
    health: text('health'),
    notifiedHealth: text('notified_health'),
    pointAt: integer('point_at'),
    /** The last report's numbers, read by `/metrics` without parsing `report`. */
    osdsUp: integer('osds_up'),
    osdsIn: integer('osds_in'),
    osdsTotal: integer('osds_total'),
    rawTotalBytes: integer('raw_total_bytes'),
    rawUsedBytes: integer('raw_used_bytes'),
  },
  (t) => [index('cluster_statuses_due').on(t.dueMs)],
);

/**
 * The history of each cluster's status: at most one point a minute (`ClusterStatusPoint`),
 * pruned after 24 hours. Small rows: about 1,440 a cluster.
 */
export const clusterStatusPoints = sqliteTable(
  'cluster_status_points',
  {
    clusterId: text('cluster_id').notNull(),
    at: integer('at').notNull(),
    health: text('health').notNull(),
    rawTotalBytes: integer('raw_total_bytes').notNull(),
    rawUsedBytes: integer('raw_used_bytes').notNull(),
    osdsUp: integer('osds_up').notNull(),
    osdsIn: integer('osds_in').notNull(),
    osdsTotal: integer('osds_total').notNull(),
  },
  (t) => [primaryKey({ columns: [t.clusterId, t.at] }), index('cluster_status_points_at').on(t.at)],
);
