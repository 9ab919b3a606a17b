import { EmptySchema, ErrorSchema, LoginSchema, TokenSchema } from '@carapace/models';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.js';
import { principalOf } from '../context.js';

/** `POST /v1/auth/` (login) and `DELETE /v1/auth/` (logout). */
export const authRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.post(
    '/v1/auth',
    {
      config: { auth: 'none' },
      schema: { tags: ['auth'], summary: 'Log in', body: LoginSchema, response: { 200: TokenSchema, '4xx': ErrorSchema, 503: ErrorSchema } },
    },
    (request) => services.auth.login(request.body.username, request.body.password, request.ip),
  );
  app.delete(
    '/v1/auth',
    { config: { auth: 'token' }, schema: { tags: ['auth'], summary: 'Log out: revoke the token', response: { 200: EmptySchema, '4xx': ErrorSchema } } },
    async (request) => {
      await services.auth.logout(principalOf(request));
      return {};
    },
  );
};
