import { Type, type Static, type TSchema } from 'typebox';

/** A UUID (RFC 4122) as a string. */
export const UuidSchema = Type.String({ format: 'uuid', maxLength: 36 });

/** The versioned model kinds of the API. */
export const MODEL_NAMES = ['user', 'role', 'cluster', 'server', 'playbook_configuration', 'execution'] as const;
export type ModelName = (typeof MODEL_NAMES)[number];

/** The envelope fields every versioned model carries (contract, "Common model envelope"). */
export const ENVELOPE_FIELDS = ['id', 'model', 'version', 'time_updated', 'time_deleted', 'initiator_id'] as const;

/** Builds the schema of a versioned model: the common envelope around `data`. */
export function ModelSchema<M extends string, D extends TSchema>(model: M, data: D) {
  return Type.Object(
    {
      id: Type.String(),
      model: Type.Literal(model),
      version: Type.Integer({ minimum: 1 }),
      time_updated: Type.Integer(),
      time_deleted: Type.Integer(),
      initiator_id: Type.Union([Type.String(), Type.Null()]),
      data,
    },
  );
}

/** The body of `PUT /v1/{model}/{id}/`: the envelope as last read, `data` changed. */
export function UpdateBodySchema<D extends TSchema>(data: D) {
  return Type.Object({
    id: Type.String({ maxLength: 64 }),
    model: Type.String({ maxLength: 64 }),
    version: Type.Integer(),
    time_updated: Type.Integer(),
    time_deleted: Type.Integer(),
    initiator_id: Type.Union([Type.String({ maxLength: 64 }), Type.Null()]),
    data,
  });
}

/** A page of a collection (api-v1 §4). */
export function ListSchema<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    page: Type.Integer(),
    per_page: Type.Integer(),
    total: Type.Integer(),
  });
}

/** Query parameters of every collection GET (api-v1 §4). */
export const ListQuerySchema = Type.Object(
  {
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
    per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000 })),
    all: Type.Optional(Type.String({ maxLength: 8 })),
    filter: Type.Optional(Type.String({ maxLength: 16_384 })),
    sort_by: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: false },
);
export type ListQuery = Static<typeof ListQuerySchema>;

/** Path parameters naming one model. */
export const IdParamsSchema = Type.Object({ id: UuidSchema });
/** Path parameters naming one version of one model. */
export const VersionParamsSchema = Type.Object({
  id: UuidSchema,
  version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
});

/** The error body (contract "Errors" plus api-v1 §2). */
export const ErrorSchema = Type.Object({
  code: Type.Integer(),
  error: Type.String(),
  description: Type.String(),
  message: Type.String(),
});
export type ErrorBody = Static<typeof ErrorSchema>;

/** The service information object. */
export const InfoSchema = Type.Object({
  version: Type.String(),
  time: Type.Object({ local: Type.String(), utc: Type.String(), unix: Type.Integer() }),
});
export type Info = Static<typeof InfoSchema>;

/** The password reset messages. */
export const MessageSchema = Type.Object({ message: Type.String() });
export const PASSWORD_RESET_REQUESTED = 'Password reset was requested.';
export const PASSWORD_HAS_BEEN_RESET = 'Password has been reset.';

/** An empty object (the logout answer). */
export const EmptySchema = Type.Object({});
