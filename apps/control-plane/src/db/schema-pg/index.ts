import { sql } from 'drizzle-orm';
import { bigint, bigserial, index, pgTable, primaryKey, smallint, text, uniqueIndex } from 'drizzle-orm/pg-core';

/*
 * The control plane's tables on PostgreSQL: the same exported names, table names, column
 * names, primary keys and index names as the SQLite schema (`../schema/index.ts`), checked
 * by `test/schema-parity.test.ts`. drizzle-kit generates `drizzle/postgres/` from this file
 * (`npm run db:generate:pg -w @carapace/control-plane`).
 *
 * Types: every SQLite `integer` is a `bigint` here (times are milliseconds since the epoch,
 * past 2^31), read as a JavaScript number; `is_latest` stays an integer 0/1 (`smallint`,
 * not boolean) because the repositories' SQL says `is_latest = 1` on both engines. JSON
 * (`data`, `error`, `labels`) is stored as JSON text on both engines, never `jsonb`: the
 * columns are `text` and the repositories serialize and parse it themselves.
 *
 * The indexes on `data` fields are expression indexes, created by the custom migration
 * `drizzle/postgres/0001_expression_indexes.sql` (as on SQLite, by 0001, 0003 and 0005):
 * the field `a.b` is indexed, and must be filtered, as
 * `(NULLIF(data::jsonb #> '{a,b}', 'null'::jsonb))`. The queue's index is on pk, the
 * queue's order (`0006_queue_in_stored_order.sql`).
 */

/** A bigint column read as a JavaScript number (times in ms, counts, sequence numbers). */
function int8(name: string) {
  return bigint(name, { mode: 'number' });
}

/**
 * Columns shared by every versioned model table: each version is one row; `is_latest`
 * marks the newest version of an id, and a partial unique index keeps it to one per id.
 */
function versionedColumns() {
  return {
    pk: bigserial('pk', { mode: 'number' }).primaryKey(),
    id: text('id').notNull(),
    version: int8('version').notNull(),
    timeUpdated: int8('time_updated').notNull(),
    timeDeleted: int8('time_deleted').notNull().default(0),
    initiatorId: text('initiator_id'),
    /** 1 on the newest version of an id, else 0. */
    isLatest: smallint('is_latest').notNull(),
    /** The model, as JSON text. */
    data: text('data').notNull(),
  };
}

/**
 * Defines the table of one versioned model with the common indexes. As on SQLite there is
 * no plain index on (is_latest, time_deleted): lists read through the partial expression
 * indexes of the custom migration.
 */
export function versionedTable<N extends string>(name: N) {
  return pgTable(name, versionedColumns(), (t) => [
    uniqueIndex(`${name}_id_version`).on(t.id, t.version),
    uniqueIndex(`${name}_latest`).on(t.id).where(sql`${t.isLatest} = 1`),
  ]);
}

/** Any versioned model table. */
export type VersionedTable = ReturnType<typeof versionedTable<string>>;

/** Users, every version. Login and e-mail are unique among live users (expression indexes). */
export const users = versionedTable('users');

/** Roles, every version. The name is unique among live roles (expression index). */
export const roles = versionedTable('roles');

/** The password hash of each user, kept apart from the versioned user model. */
export const credentials = pgTable('credentials', {
  userId: text('user_id').primaryKey(),
  passwordHash: text('password_hash').notNull(),
  timeUpdated: int8('time_updated').notNull(),
});

/** Issued API tokens, by their JWT id, so that they can be revoked. */
export const tokens = pgTable(
  'tokens',
  {
    jti: text('jti').primaryKey(),
    userId: text('user_id').notNull(),
    timeCreated: int8('time_created').notNull(),
    expiresAt: int8('expires_at').notNull(),
    revokedAt: int8('revoked_at'),
  },
  (t) => [index('tokens_user').on(t.userId), index('tokens_expires').on(t.expiresAt)],
);

/** Password reset tokens, stored only as SHA-256 digests. */
export const passwordResets = pgTable(
  'password_resets',
  {
    tokenHash: text('token_hash').primaryKey(),
    userId: text('user_id').notNull(),
    timeCreated: int8('time_created').notNull(),
    expiresAt: int8('expires_at').notNull(),
    usedAt: int8('used_at'),
  },
  (t) => [index('password_resets_user').on(t.userId)],
);

/** Secrets the service generates for itself (the token signing key). */
export const secrets = pgTable('secrets', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
  timeCreated: int8('time_created').notNull(),
});

/** The id and check value of the key the secrets are encrypted with (never the key): see the SQLite schema. */
export const encryptionKeys = pgTable('encryption_keys', {
  id: text('id').primaryKey(),
  checkValue: text('check_value').notNull(),
  timeCreated: int8('time_created').notNull(),
});

/** Clusters, every version. The name is unique among live clusters (expression index). */
export const clusters = versionedTable('clusters');

/** Servers, every version; the id is the host's hardware UUID. Indexed on cluster_id. */
export const servers = versionedTable('servers');

/** Playbook configurations, every version. */
export const playbookConfigurations = versionedTable('playbook_configurations');

/** Executions, every version: each state change is a version. Indexed on state. */
export const executions = versionedTable('executions');

/**
 * Steps of executions. `seq` is the runner's event sequence number: a step sent twice is
 * stored once. `error` is JSON text.
 */
export const executionSteps = pgTable(
  'execution_steps',
  {
    executionId: text('execution_id').notNull(),
    seq: int8('seq').notNull(),
    id: text('id').notNull(),
    timeUpdated: int8('time_updated').notNull(),
    role: text('role').notNull(),
    name: text('name').notNull(),
    result: text('result').notNull(),
    error: text('error').notNull(),
    serverId: text('server_id'),
    timeStarted: int8('time_started').notNull(),
    timeFinished: int8('time_finished').notNull(),
    preview: text('preview'),
  },
  (t) => [
    primaryKey({ columns: [t.executionId, t.seq] }),
    // SQLite's `.unique()` on `id` is this very index (same name).
    uniqueIndex('execution_steps_id_unique').on(t.id),
    index('execution_steps_finished').on(t.executionId, t.timeFinished),
  ],
);

/** The log of executions in chunks, keyed by their character offset in the whole log. */
export const executionLogChunks = pgTable(
  'execution_log_chunks',
  {
    executionId: text('execution_id').notNull(),
    offset: int8('offset').notNull(),
    text: text('text').notNull(),
  },
  (t) => [primaryKey({ columns: [t.executionId, t.offset] })],
);

/** Files a run handed back, kept until the execution ends; a file sent twice is stored once. */
export const executionArtifacts = pgTable(
  'execution_artifacts',
  {
    executionId: text('execution_id').notNull(),
    name: text('name').notNull(),
    seq: int8('seq').notNull(),
    content: text('content').notNull(),
  },
  (t) => [primaryKey({ columns: [t.executionId, t.name] })],
);

/** Server locks: a lease on a server held by one execution's runner. */
export const serverLocks = pgTable(
  'server_locks',
  {
    serverId: text('server_id').primaryKey(),
    executionId: text('execution_id').notNull(),
    owner: text('owner').notNull(),
    expiresAt: int8('expires_at').notNull(),
  },
  (t) => [index('server_locks_execution').on(t.executionId), index('server_locks_owner').on(t.owner)],
);

/** Files of a deployed cluster that clients need (ceph.conf, client keyrings). */
export const clusterFiles = pgTable(
  'cluster_files',
  {
    clusterId: text('cluster_id').notNull(),
    name: text('name').notNull(),
    content: text('content').notNull(),
    timeUpdated: int8('time_updated').notNull(),
  },
  (t) => [primaryKey({ columns: [t.clusterId, t.name] })],
);

/** Runners allowed to connect: one row per runner name. `labels` is JSON text. */
export const runners = pgTable('runners', {
  name: text('name').primaryKey(),
  tokenHash: text('token_hash').notNull(),
  labels: text('labels').notNull(),
  timeCreated: int8('time_created').notNull(),
  createdBy: text('created_by'),
  revokedAt: int8('revoked_at'),
});

/** Mail waiting to be delivered, deleted once delivered. */
export const mailOutbox = pgTable(
  'mail_outbox',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    recipient: text('recipient').notNull(),
    subject: text('subject').notNull(),
    body: text('body').notNull(),
    timeCreatedMs: int8('time_created_ms').notNull(),
    attempts: int8('attempts').notNull().default(0),
    nextAttemptMs: int8('next_attempt_ms').notNull(),
    lastError: text('last_error'),
  },
  (t) => [index('mail_outbox_next_attempt').on(t.nextAttemptMs)],
);

/** Webhook deliveries of the notifications of executions' ends. */
export const notificationDeliveries = pgTable(
  'notification_deliveries',
  {
    id: text('id').primaryKey(),
    executionId: text('execution_id').notNull(),
    event: text('event').notNull(),
    url: text('url').notNull(),
    body: text('body').notNull(),
    /** `pending`, `delivered` or `failed`. */
    state: text('state').notNull(),
    attempts: int8('attempts').notNull().default(0),
    timeCreatedMs: int8('time_created_ms').notNull(),
    nextAttemptMs: int8('next_attempt_ms').notNull(),
    timeDoneMs: int8('time_done_ms'),
    lastError: text('last_error'),
  },
  (t) => [index('notification_deliveries_due').on(t.state, t.nextAttemptMs), index('notification_deliveries_execution').on(t.executionId)],
);

/** Every attempt of a webhook delivery: when, how long, the HTTP status or the error. */
export const notificationAttempts = pgTable(
  'notification_attempts',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    deliveryId: text('delivery_id').notNull(),
    attempt: int8('attempt').notNull(),
    timeMs: int8('time_ms').notNull(),
    durationMs: int8('duration_ms').notNull(),
    status: int8('status'),
    error: text('error'),
  },
  (t) => [index('notification_attempts_delivery').on(t.deliveryId, t.attempt)],
);

/**
 * PostgreSQL only: a counter per name (a table), bumped by every write that can change
 * what a cache of it holds, so that the caches of every replica stay exact (see
 * `ChangeCounter`). A replica compares the value its cache was filled at with the stored one.
 */
export const changeCounters = pgTable('change_counters', {
  name: text('name').primaryKey(),
  value: int8('value').notNull().default(0),
});

/** The open stream of each connected runner (see the SQLite schema's `runner-sessions.ts`). */
export const runnerSessions = pgTable(
  'runner_sessions',
  {
    name: text('name').primaryKey(),
    sessionId: text('session_id').notNull(),
    replica: text('replica').notNull(),
    version: text('version').notNull(),
    labels: text('labels').notNull(),
    slots: int8('slots').notNull(),
    connectedAtMs: int8('connected_at_ms').notNull(),
    lastHeartbeatMs: int8('last_heartbeat_ms').notNull(),
    peer: text('peer').notNull(),
    sshPublicKey: text('ssh_public_key').notNull(),
    draining: int8('draining').notNull().default(0),
  },
  (t) => [index('runner_sessions_replica').on(t.replica)],
);

/** Events counted by the throttles across replicas (see the SQLite schema's `throttle-events.ts`). */
export const throttleEvents = pgTable(
  'throttle_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    timeMs: int8('time_ms').notNull(),
  },
  (t) => [index('throttle_events_key').on(t.scope, t.key, t.timeMs), index('throttle_events_time').on(t.timeMs)],
);

/** The servers waiting for their facts, claimed by one replica at a time (see the SQLite schema's `facts-requests.ts`). */
export const factsRequests = pgTable(
  'facts_requests',
  {
    serverId: text('server_id').primaryKey(),
    requestId: text('request_id').notNull(),
    attempts: int8('attempts').notNull().default(0),
    dueMs: int8('due_ms').notNull(),
    runner: text('runner'),
    sentMs: int8('sent_ms'),
  },
  (t) => [index('facts_requests_due').on(t.dueMs)],
);

/** What Ceph last said of each cluster, and the claim of its collection (see the SQLite schema's `cluster-statuses.ts`). */
export const clusterStatuses = pgTable(
  'cluster_statuses',
  {
    clusterId: text('cluster_id').primaryKey(),
    requestId: text('request_id').notNull(),
    dueMs: int8('due_ms').notNull(),
    runner: text('runner'),
    sentMs: int8('sent_ms'),
    report: text('report'),
    collectedAt: int8('collected_at'),
    attemptedAt: int8('attempted_at'),
    unreachableReason: text('unreachable_reason'),
    unreachableSince: int8('unreachable_since'),
    collection: text('collection'),
    health: text('health'),
    notifiedHealth: text('notified_health'),
    pointAt: int8('point_at'),
    /** The last report's numbers, read by `/metrics` without parsing `report`. */
    osdsUp: int8('osds_up'),
    osdsIn: int8('osds_in'),
    osdsTotal: int8('osds_total'),
    rawTotalBytes: int8('raw_total_bytes'),
    rawUsedBytes: int8('raw_used_bytes'),
  },
  (t) => [index('cluster_statuses_due').on(t.dueMs)],
);

/** The 24 hours of history of each cluster's status, a point a minute at most. */
export const clusterStatusPoints = pgTable(
  'cluster_status_points',
  {
    clusterId: text('cluster_id').notNull(),
    at: int8('at').notNull(),
    health: text('health').notNull(),
    rawTotalBytes: int8('raw_total_bytes').notNull(),
    rawUsedBytes: int8('raw_used_bytes').notNull(),
    osdsUp: int8('osds_up').notNull(),
    osdsIn: int8('osds_in').notNull(),
    osdsTotal: int8('osds_total').notNull(),
  },
  (t) => [primaryKey({ columns: [t.clusterId, t.at] }), index('cluster_status_points_at').on(t.at)],
);
