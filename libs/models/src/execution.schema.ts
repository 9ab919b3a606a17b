import { Type, type Static } from 'typebox';
import { ListQuerySchema, ModelSchema, UpdateBodySchema, UuidSchema } from './common.schema.js';

const ListQueryProperties = ListQuerySchema.properties;

const Hint = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }), value: Type.Unknown() });

/** The configuration of a playbook configuration: extra vars and an Ansible inventory. */
export const PlaybookConfigurationBodySchema = Type.Object({
  global_vars: Type.Record(Type.String(), Type.Unknown()),
  inventory: Type.Record(Type.String(), Type.Unknown()),
});

/** `data` of a playbook configuration model. */
export const PlaybookConfigurationDataSchema = Type.Object({
  name: Type.String(),
  playbook_id: Type.String(),
  cluster_id: Type.String(),
  server_ids: Type.Array(Type.String()),
  hints: Type.Array(Type.Object({ id: Type.String(), value: Type.Unknown() })),
  configuration: PlaybookConfigurationBodySchema,
});
export type PlaybookConfigurationData = Static<typeof PlaybookConfigurationDataSchema>;

/** A playbook configuration model. */
export const PlaybookConfigurationSchema = ModelSchema('playbook_configuration', PlaybookConfigurationDataSchema);
export type PlaybookConfigurationModel = Static<typeof PlaybookConfigurationSchema>;

/**
 * Body of `POST /v1/playbook_configuration/`. The playbook id is `playbook_id`; `playbook`
 * is accepted too, as the contract leaves the key open.
 */
export const PlaybookConfigurationCreateSchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  cluster_id: UuidSchema,
  playbook_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  playbook: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  server_ids: Type.Optional(Type.Array(UuidSchema, { maxItems: 10_000 })),
  hints: Type.Optional(Type.Array(Hint, { maxItems: 64 })),
  run: Type.Optional(Type.Boolean()),
});
export type PlaybookConfigurationCreate = Static<typeof PlaybookConfigurationCreateSchema>;

/** Body of `PUT /v1/playbook_configuration/{id}/`: `name` and `configuration` change. */
export const PlaybookConfigurationUpdateSchema = UpdateBodySchema(
  Type.Object(
    { name: Type.String({ minLength: 1, maxLength: 255 }), configuration: PlaybookConfigurationBodySchema },
    { additionalProperties: true },
  ),
);
export type PlaybookConfigurationUpdate = Static<typeof PlaybookConfigurationUpdateSchema>;

/** The states of an execution. */
export const EXECUTION_STATES = ['created', 'started', 'completed', 'failed', 'canceling', 'canceled'] as const;
export type ExecutionState = (typeof EXECUTION_STATES)[number];

/** `data` of an execution model. */
export const ExecutionDataSchema = Type.Object({
  playbook_configuration: Type.Object({ id: Type.String(), version: Type.Integer(), playbook_name: Type.String() }),
  state: Type.String(),
  cluster_id: Type.String(),
  server_ids: Type.Array(Type.String()),
  time_created: Type.Integer(),
  time_started: Type.Union([Type.Integer(), Type.Null()]),
  time_finished: Type.Union([Type.Integer(), Type.Null()]),
  /** The runner that ran it, once started. */
  runner_id: Type.Union([Type.String(), Type.Null()]),
  /** Why it failed or was canceled, or null. */
  reason: Type.Union([Type.String(), Type.Null()]),
  /**
   * Carapace extension (issue 31), present only on previews: true when the execution is a
   * preview, run in Ansible's check mode with diffs; it changes nothing on any server, in
   * Ceph or in the cluster model. Previews are listed apart (`GET /v1/execution/?preview=true`).
   */
  preview: Type.Optional(
    Type.Boolean({ description: 'True: a preview (Ansible check mode with diffs), which changes nothing; its result is GET /v1/execution/{id}/preview/. Absent on real runs.' }),
  ),
  /** Carapace extension: the execution this one relaunches (`POST /v1/execution/{id}/relaunch/`). */
  relaunch_of: Type.Optional(Type.String({ description: 'The id of the execution this one relaunches (POST /v1/execution/{id}/relaunch/). Absent unless it is a relaunch.' })),
  /** Carapace extension: the executions that relaunch this one, oldest first. */
  relaunched_by: Type.Optional(
    Type.Array(Type.String(), { description: 'The ids of the executions that relaunch this one, oldest first. Absent until it is relaunched.' }),
  ),
  /** Carapace extension: the servers the run is limited to (Ansible `--limit`); absent: all of them. */
  limit_server_ids: Type.Optional(
    Type.Array(Type.String(), {
      description: 'A relaunch of failed hosts: the servers it runs on (Ansible --limit), a subset of server_ids. Absent: every server of the configuration.',
    }),
  ),
  /** Carapace extension: what a relaunch was asked for and what it does. */
  relaunch: Type.Optional(
    Type.Object(
      {
        hosts: Type.Union([Type.Literal('failed'), Type.Literal('all')], { description: 'What was asked: "failed" (the failed and unreachable hosts) or "all".' }),
        whole: Type.Boolean({ description: 'True when the relaunch runs on every host of the configuration, whatever was asked.' }),
        note: Type.Union([Type.String(), Type.Null()], {
          description: 'Why a relaunch asked for failed hosts runs on every host (the playbook does not allow a subset, or no host failed on its own); null otherwise.',
        }),
      },
      { description: 'Present on a relaunch: what was asked and what it runs.' },
    ),
  ),
});
export type ExecutionData = Static<typeof ExecutionDataSchema>;

/** An execution model. */
export const ExecutionSchema = ModelSchema('execution', ExecutionDataSchema);
export type Execution = Static<typeof ExecutionSchema>;

/** Body of `POST /v1/execution/`: either shape of api-v1 §6. */
export const ExecutionCreateSchema = Type.Object({
  playbook_configuration: Type.Optional(Type.Object({ id: UuidSchema, version: Type.Integer({ minimum: 1 }) })),
  playbook_configuration_id: Type.Optional(UuidSchema),
  playbook_configuration_version: Type.Optional(Type.Integer({ minimum: 1 })),
  preview: Type.Optional(
    Type.Boolean({
      description:
        'Carapace extension: true creates a preview, which runs the playbook in Ansible check mode with diffs and changes nothing (GET /v1/execution/{id}/preview/). Default false.',
    }),
  ),
});
export type ExecutionCreate = Static<typeof ExecutionCreateSchema>;

/** The results of a step. */
export const STEP_RESULTS = ['ok', 'error', 'skipped', 'unreachable', 'unknown'] as const;
export type StepResult = (typeof STEP_RESULTS)[number];

/** What a task would do on a host, as a preview finds it. */
export const PREVIEW_STATUSES = ['would_change', 'unchanged', 'would_fail', 'unknown'] as const;
export type PreviewStatus = (typeof PREVIEW_STATUSES)[number];

/** The most characters of a step's diff in a preview (the runner's callback plugin cuts it there). */
export const PREVIEW_DIFF_MAX_CHARS = 16 * 1024;

/** Carapace extension of a step of a preview: what the task would do on its host. */
export const StepPreviewSchema = Type.Object(
  {
    status: Type.Union(
      [Type.Literal('would_change'), Type.Literal('unchanged'), Type.Literal('would_fail'), Type.Literal('unknown')],
      {
        description:
          'would_change: the task would change the host (see diff, and why: what a module of this project says it would do); unchanged: nothing to do; would_fail: the task would fail (see why); unknown: Ansible cannot know in check mode (see why).',
      },
    ),
    diff: Type.Optional(
      Type.String({
        maxLength: PREVIEW_DIFF_MAX_CHARS + 256,
        description: 'What would change, as a unified diff (files) or the module\'s own text; cut at 16 KiB. Never given for a task with no_log.',
      }),
    ),
    why: Type.Optional(Type.String({ maxLength: 4096, description: 'Why it would fail, or why it cannot be known in check mode.' })),
  },
  { description: 'In a preview only: what the task would do on this host.' },
);
export type StepPreview = Static<typeof StepPreviewSchema>;

/** `data` of an execution step model. */
export const ExecutionStepDataSchema = Type.Object({
  execution_id: Type.String(),
  role: Type.String(),
  name: Type.String(),
  result: Type.String(),
  error: Type.Record(Type.String(), Type.Unknown()),
  server_id: Type.Union([Type.String(), Type.Null()]),
  time_started: Type.Integer(),
  time_finished: Type.Integer(),
  /** Carapace extension: what the task would do, in a preview; absent in a real run. */
  preview: Type.Optional(StepPreviewSchema),
});
export type ExecutionStepData = Static<typeof ExecutionStepDataSchema>;

/** An execution step model. */
export const ExecutionStepSchema = ModelSchema('execution_step', ExecutionStepDataSchema);
export type ExecutionStep = Static<typeof ExecutionStepSchema>;

/** The JSON form of the log: `{"data": "<log text>"}`. */
export const ExecutionLogSchema = Type.Object({ data: Type.String() });

/** Query of the log endpoint. */
export const ExecutionLogQuerySchema = Type.Object(
  { download: Type.Optional(Type.String({ maxLength: 8 })), follow: Type.Optional(Type.String({ maxLength: 8 })) },
  { additionalProperties: false },
);

/** Query of the cinder integration endpoint. */
export const CinderQuerySchema = Type.Object(
  { root: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, pattern: '^/' })) },
  { additionalProperties: false },
);

/** The files of a cluster a Cinder/Glance/Nova host needs: path → content. */
export const CinderIntegrationSchema = Type.Record(Type.String(), Type.String());

/** One task on one host in the result of a preview. */
export const PreviewTaskSchema = Type.Object({
  role: Type.String({ description: 'The role of the task, "" outside roles.' }),
  name: Type.String({ description: 'The task as Ansible named it.' }),
  status: StepPreviewSchema.properties.status,
  diff: StepPreviewSchema.properties.diff,
  why: StepPreviewSchema.properties.why,
});
export type PreviewTask = Static<typeof PreviewTaskSchema>;

/** The preview of one host. */
export const PreviewHostSchema = Type.Object({
  server_id: Type.Union([Type.String(), Type.Null()], { description: 'The server the tasks ran on; null for a task of no known server.' }),
  counts: Type.Object(
    { would_change: Type.Integer(), unchanged: Type.Integer(), would_fail: Type.Integer(), unknown: Type.Integer() },
    { description: 'How many of its tasks have each status.' },
  ),
  tasks: Type.Array(PreviewTaskSchema, { description: 'Its tasks in the order they ran.' }),
});
export type PreviewHost = Static<typeof PreviewHostSchema>;

/** Carapace extension: `GET /v1/execution/{id}/preview/`. */
export const ExecutionPreviewSchema = Type.Object({
  execution_id: Type.String({ description: 'The preview execution.' }),
  state: Type.String({ description: 'Its state: the list is complete once it is completed, failed or canceled.' }),
  hosts: Type.Array(PreviewHostSchema, { description: 'One entry per server, in the order of the execution\'s server_ids.' }),
});
export type ExecutionPreview = Static<typeof ExecutionPreviewSchema>;

/** Carapace extension: body of `POST /v1/execution/{id}/relaunch/`. */
export const ExecutionRelaunchSchema = Type.Object(
  {
    hosts: Type.Optional(
      Type.Union([Type.Literal('failed'), Type.Literal('all')], {
        description: 'failed: only the hosts that failed or were unreachable (the execution must be failed or canceled); all (default): every host.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ExecutionRelaunch = Static<typeof ExecutionRelaunchSchema>;

/** Carapace extension: query of `GET /v1/execution/`, the list query with `preview`. */
export const ExecutionListQuerySchema = Type.Object(
  {
    ...ListQueryProperties,
    preview: Type.Optional(
      Type.String({ maxLength: 8, description: 'Carapace extension: true lists previews only; false (default) lists real runs only.' }),
    ),
  },
  { additionalProperties: false },
);
