import { Type, type Static } from 'typebox';
import { ModelSchema, UpdateBodySchema, UuidSchema } from './common.schema.js';

const Login = Type.String({ minLength: 1, maxLength: 128, pattern: '^[^\\s]+$' });
const Email = Type.String({ minLength: 3, maxLength: 254, format: 'email' });
const FullName = Type.String({ maxLength: 256 });
const RoleId = Type.Union([UuidSchema, Type.Null()]);

/** `data` of a user model. */
export const UserDataSchema = Type.Object({
  login: Type.String(),
  email: Type.String(),
  full_name: Type.String(),
  role_id: Type.Union([Type.String(), Type.Null()]),
});
export type UserData = Static<typeof UserDataSchema>;

/** A user model. */
export const UserSchema = ModelSchema('user', UserDataSchema);
export type User = Static<typeof UserSchema>;

/** Body of `POST /v1/user/`. */
export const UserCreateSchema = Type.Object({
  login: Login,
  email: Email,
  full_name: Type.Optional(FullName),
  role_id: Type.Optional(RoleId),
});
export type UserCreate = Static<typeof UserCreateSchema>;

/** Body of `PUT /v1/user/{id}/`. */
export const UserUpdateSchema = UpdateBodySchema(
  Type.Object({ login: Login, email: Email, full_name: FullName, role_id: RoleId }),
);
export type UserUpdate = Static<typeof UserUpdateSchema>;
