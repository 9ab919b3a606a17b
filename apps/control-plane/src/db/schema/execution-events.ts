import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * Steps of executions. `seq` is the runner's event sequence number: a step sent twice is
 * stored once.
 */
export const executionSteps = sqliteTable(
  'execution_steps',
  {
    executionId: text('execution_id').notNull(),
    seq: integer('seq').notNull(),
    id: text('id').notNull().unique(),
    timeUpdated: integer('time_updated').notNull(),
    role: text('role').notNull(),
    name: text('name').notNull(),
    result: text('result').notNull(),
    error: text('error', { mode: 'json' }).notNull().$type<Record<string, unknown>>(),
    serverId: text('server_id'),
    timeStarted: integer('time_started').notNull(),
    timeFinished: integer('time_finished').notNull(),
    // A preview's verdict on the task (`StepPreview` of the API, as JSON); null in a real run.
    preview: text('preview'),
  },
  (t) => [primaryKey({ columns: [t.executionId, t.seq] }), index('execution_steps_finished').on(t.executionId, t.timeFinished)],
);

/**
 * The log of executions in chunks, keyed by their character offset in the whole log: a
 * chunk sent twice is stored once, and chunks arriving out of order still give the exact
 * text once the gaps are filled.
 */
export const executionLogChunks = sqliteTable(
  'execution_log_chunks',
  {
    executionId: text('execution_id').notNull(),
    offset: integer('offset').notNull(),
    text: text('text').notNull(),
  },
  (t) => [primaryKey({ columns: [t.executionId, t.offset] })],
);

/**
 * Files a run handed back (`RunArtifact` of the runner protocol), kept from their arrival
 * until the execution ends: a completed run gives them to its playbook's effects (e.g. the
 * cluster's files), then they are removed whatever the outcome. Never served by the API.
 * A file sent twice is stored once (by name).
 */
export const executionArtifacts = sqliteTable(
  'execution_artifacts',
  {
    executionId: text('execution_id').notNull(),
    name: text('name').notNull(),
    seq: integer('seq').notNull(),
    content: text('content').notNull(),
  },
  (t) => [primaryKey({ columns: [t.executionId, t.name] })],
);
