import {
  ErrorSchema,
  MessageSchema,
  PASSWORD_HAS_BEEN_RESET,
  PASSWORD_RESET_REQUESTED,
  PasswordResetRequestSchema,
  PasswordResetSchema,
  ResetTokenParamsSchema,
} from '@carapace/models';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { badRequest } from '../../errors.js';
import type { AppServices } from '../../app-services.js';

/** The password reset flow (api-v1 §6): request, check, reset. No authentication. */
export const passwordResetRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  const response = { 200: MessageSchema, '4xx': ErrorSchema };
  app.post(
    '/v1/password_reset',
    { config: { auth: 'none' }, schema: { tags: ['password reset'], summary: 'Request a password reset e-mail', body: PasswordResetRequestSchema, response } },
    async (request) => {
      await services.passwordReset.request(request.body.login, request.ip);
      return { message: PASSWORD_RESET_REQUESTED };
    },
  );
  app.get(
    '/v1/password_reset/:token',
    { config: { auth: 'none', logUrl: false }, schema: { tags: ['password reset'], summary: 'Check a reset token', params: ResetTokenParamsSchema, response } },
    async (request) => {
      await services.passwordReset.check(request.params.token);
      return { message: PASSWORD_RESET_REQUESTED };
    },
  );
  app.post(
    '/v1/password_reset/:token',
    {
      config: { auth: 'none', logUrl: false },
      schema: { tags: ['password reset'], summary: 'Set a new password', params: ResetTokenParamsSchema, body: PasswordResetSchema, response },
    },
    async (request) => {
      const password = request.body.password ?? request.body.new_password;
      if (password === undefined) throw badRequest('The body needs "password" (or "new_password").');
      await services.passwordReset.reset(request.params.token, password);
      return { message: PASSWORD_HAS_BEEN_RESET };
    },
  );
};
