import { Type, type Static } from 'typebox';
import { HOST_MAX_LENGTH } from './host.js';

/**
 * Body of `POST /v1/server/`: the host's id (`id`, or `server_id` as the contract's client
 * sends it), its address and the SSH user of the automation. The service also checks that
 * `host` is an IPv4 address, an IPv6 address or a DNS name (`hostProblem`).
 */
export const ServerCreateSchema = Type.Object({
  id: Type.Optional(Type.String({ format: 'uuid', maxLength: 36 })),
  server_id: Type.Optional(Type.String({ format: 'uuid', maxLength: 36 })),
  host: Type.String({
    minLength: 1,
    maxLength: HOST_MAX_LENGTH,
    description: 'An IPv4 address, an IPv6 address (no brackets, no zone id) or a DNS name.',
  }),
  username: Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z_][a-z0-9_-]*[$]?$' }),
});
export type ServerCreate = Static<typeof ServerCreateSchema>;
