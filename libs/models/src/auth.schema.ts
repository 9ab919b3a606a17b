import { Type, type Static } from 'typebox';
import { UserSchema } from './user.schema.js';

/** Body of `POST /v1/auth/`. */
export const LoginSchema = Type.Object({
  username: Type.String({ minLength: 1, maxLength: 128 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
});
export type Login = Static<typeof LoginSchema>;

/** The token model returned by login (api-v1 §3). `id` is the token itself. */
export const TokenSchema = Type.Object({
  id: Type.String(),
  model: Type.Literal('token'),
  version: Type.Integer(),
  time_updated: Type.Integer(),
  time_deleted: Type.Integer(),
  initiator_id: Type.Union([Type.String(), Type.Null()]),
  data: Type.Object({ user: UserSchema, expires_at: Type.Integer() }),
});
export type Token = Static<typeof TokenSchema>;

/** Body of `POST /v1/password_reset/`. */
export const PasswordResetRequestSchema = Type.Object({ login: Type.String({ minLength: 1, maxLength: 128 }) });

/** Body of `POST /v1/password_reset/{token}/`: `password`, or `new_password` as the contract names it. */
export const PasswordResetSchema = Type.Object({
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  new_password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
});

/** Path parameters of the password reset check and reset. */
export const ResetTokenParamsSchema = Type.Object({ token: Type.String({ minLength: 1, maxLength: 256 }) });
