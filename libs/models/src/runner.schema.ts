import { Type, type Static } from 'typebox';

/** A runner as `GET /v1/runner/` lists it (Carapace extension). */
export const RunnerSchema = Type.Object({
  name: Type.String(),
  /** `connected`, `draining` (finishing its runs, taking no new work) or `disconnected`. */
  state: Type.Union([Type.Literal('connected'), Type.Literal('draining'), Type.Literal('disconnected')]),
  labels: Type.Record(Type.String(), Type.String()),
  version: Type.Union([Type.String(), Type.Null()]),
  /** How many executions it runs at once, and how many more it can take now. */
  slots: Type.Integer(),
  free_slots: Type.Integer(),
  /** Unix time of its last heartbeat, while connected. */
  last_heartbeat: Type.Union([Type.Integer(), Type.Null()]),
  connected_since: Type.Union([Type.Integer(), Type.Null()]),
  /** Address it connected from. */
  peer: Type.Union([Type.String(), Type.Null()]),
  /** The public key it logs in to servers with: put it in the servers' cloud-config. */
  ssh_public_key: Type.Union([Type.String(), Type.Null()]),
  /** Ids of the executions it runs. */
  executions: Type.Array(Type.String()),
  time_created: Type.Integer(),
});
export type Runner = Static<typeof RunnerSchema>;

/** Body of `POST /v1/runner/`: a new runner identity. */
export const RunnerCreateSchema = Type.Object(
  {
    name: Type.String({ pattern: '^[a-z0-9][a-z0-9_.-]{0,62}$', description: 'Lower-case letters, digits, ".", "_" and "-".' }),
    labels: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 1024 }), { maxProperties: 64 })),
  },
  { additionalProperties: false },
);
export type RunnerCreate = Static<typeof RunnerCreateSchema>;

/** Answer of `POST /v1/runner/`: the token is shown this once. */
export const RunnerTokenSchema = Type.Object({
  name: Type.String(),
  labels: Type.Record(Type.String(), Type.String()),
  token: Type.String(),
});
export type RunnerToken = Static<typeof RunnerTokenSchema>;
