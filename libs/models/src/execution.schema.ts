import { Type, type Static } from 'typebox';
import { ModelSchema, UpdateBodySchema, UuidSchema } from './common.schema.js';

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
});
export type ExecutionCreate = Static<typeof ExecutionCreateSchema>;

/** The results of a step. */
export const STEP_RESULTS = ['ok', 'error', 'skipped', 'unreachable', 'unknown'] as const;
export type StepResult = (typeof STEP_RESULTS)[number];

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
