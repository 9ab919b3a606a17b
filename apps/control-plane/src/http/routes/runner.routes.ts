import { EmptySchema, ErrorSchema, RunnerCreateSchema, RunnerSchema, RunnerTokenSchema } from '@carapace/models';
import { Type } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.js';
import { principalOf } from '../context.js';

/**
 * Runners (Carapace extension of /v1): the list with their live state, issuing a runner
 * token, and revoking one. Every success is 200, as everywhere in the API (api-v1 §1).
 */
export const runnerRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get(
    '/v1/runner',
    {
      config: { auth: 'token', permissions: ['view_runner'] },
      schema: {
        tags: ['runner'],
        summary: 'Runners, their state, labels, slots, last heartbeat and current executions',
        response: { 200: Type.Object({ items: Type.Array(RunnerSchema) }), '4xx': ErrorSchema },
      },
    },
    async () => ({ items: await services.runners.list() }),
  );
  app.post(
    '/v1/runner',
    {
      config: { auth: 'token', permissions: ['create_runner'] },
      schema: {
        tags: ['runner'],
        summary: 'Issue the token of a new runner (shown once)',
        body: RunnerCreateSchema,
        response: { 200: RunnerTokenSchema, '4xx': ErrorSchema },
      },
    },
    (request) => services.runners.create(request.body.name, request.body.labels ?? {}, principalOf(request).user.id),
  );
  app.delete(
    '/v1/runner/:name',
    {
      config: { auth: 'token', permissions: ['delete_runner'] },
      schema: {
        tags: ['runner'],
        summary: 'Revoke a runner token and close its stream',
        params: Type.Object({ name: Type.String({ maxLength: 63 }) }),
        response: { 200: EmptySchema, '4xx': ErrorSchema },
      },
    },
    async (request) => {
      await services.runners.delete(request.params.name);
      return {};
    },
  );
};
