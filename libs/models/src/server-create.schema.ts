import { Type, type Static } from 'typebox';

/**
 * Body of `POST /v1/server/`: the host's id (`id`, or `server_id` as the contract's client
 * sends it), its address and the SSH user of the automation.
 */
export const ServerCreateSchema = Type.Object({
  id: Type.Optional(Type.String({ format: 'uuid', maxLength: 36 })),
  server_id: Type.Optional(Type.String({ format: 'uuid', maxLength: 36 })),
  host: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9:._-]+$' }),
  username: Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z_][a-z0-9_-]*[$]?$' }),
});
export type ServerCreate = Static<typeof ServerCreateSchema>;
