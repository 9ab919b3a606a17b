import { Readable } from 'node:stream';
import {
  ErrorSchema,
  ExecutionCreateSchema,
  ExecutionListQuerySchema,
  ExecutionLogQuerySchema,
  ExecutionPreviewSchema,
  ExecutionRelaunchSchema,
  ExecutionSchema,
  ExecutionStepSchema,
  IdParamsSchema,
  ListQuerySchema,
  ListSchema,
  type ExecutionStepData,
} from '@carapace/models';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { parseBoolean } from '@carapace/config';
import { mapCursor, type Stored } from '../../domain/list-types.js';
import { badRequest } from '../../errors.js';
import type { AppServices } from '../../app-services.js';
import { listStream } from '../list-json.js';
import { principalOf } from '../context.js';
import { listRequest, pageBody, registerVersionedRoutes } from './versioned.routes.js';

function flag(name: string, value: string | undefined): boolean {
  const parsed = value === undefined ? false : parseBoolean(value);
  if (parsed === undefined) throw badRequest(`Query parameter "${name}" takes a boolean.`);
  return parsed;
}

/** Executions (create, cancel, versions), their steps and their log. */
export const executionRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  registerVersionedRoutes(app, services.config, {
    model: 'execution',
    schema: ExecutionSchema,
    service: services.executions,
    createBody: ExecutionCreateSchema,
    listQuery: ExecutionListQuerySchema,
    permissions: { view: 'view_execution', versions: 'view_execution_version', create: 'create_execution', delete: 'delete_execution' },
  });

  app.get(
    '/v1/execution/:id/steps',
    {
      config: { auth: 'token', permissions: ['view_execution', 'view_execution_steps'] },
      schema: {
        tags: ['execution'],
        summary: 'The steps of an execution',
        params: IdParamsSchema,
        querystring: ListQuerySchema,
        response: { 200: ListSchema(ExecutionStepSchema), '4xx': ErrorSchema },
      },
    },
    async (request, reply) => {
      // An unknown execution answers 404 before a bad query answers 400.
      await services.executions.get(request.params.id);
      const list = listRequest(request.query, services.config);
      if (list.all) {
        const cursor = mapCursor(await services.executions.stepsCursor(request.params.id, list), (model) => ({ model }));
        const serialize = (step: Stored<ExecutionStepData>) =>
          reply.serializeInput({ ...step, model: 'execution_step' }, ExecutionStepSchema as unknown as Record<string, unknown>);
        // The stream writes the list schema's JSON itself (`listStream`), batch by batch.
        return (reply as FastifyReply).type('application/json').send(listStream(cursor, 'execution_step', serialize));
      }
      return pageBody(list, await services.executions.steps(request.params.id, list), (s) => ({ ...s, model: 'execution_step' as const }));
    },
  );

  app.post(
    '/v1/execution/:id/relaunch',
    {
      config: { auth: 'token', permissions: ['view_execution', 'create_execution'] },
      schema: {
        tags: ['execution'],
        summary: 'Carapace extension: relaunch a finished execution, on every host or only on its failed ones (a new execution)',
        params: IdParamsSchema,
        body: ExecutionRelaunchSchema,
        response: { 200: ExecutionSchema, '4xx': ErrorSchema },
      },
      // No body at all is `{}`: every host.
      preValidation: async (request) => {
        if (request.body === undefined || request.body === null) request.body = {};
      },
    },
    async (request) => ({
      ...(await services.executions.relaunch(request.params.id, request.body ?? {}, principalOf(request))),
      model: 'execution' as const,
    }),
  );

  app.get(
    '/v1/execution/:id/preview',
    {
      config: { auth: 'token', permissions: ['view_execution', 'view_execution_steps'] },
      schema: {
        tags: ['execution'],
        summary: 'Carapace extension: what a preview found, per host and task (would change, with the diff; unchanged; would fail; unknown)',
        params: IdParamsSchema,
        response: { 200: ExecutionPreviewSchema, '4xx': ErrorSchema },
      },
    },
    async (request) => services.executions.preview(request.params.id),
  );

  app.get(
    '/v1/execution/:id/log',
    {
      config: { auth: 'token', permissions: ['view_execution', 'view_execution_steps'] },
      schema: {
        tags: ['execution'],
        summary: 'The Ansible log of an execution: JSON, plain text, download, or followed live',
        params: IdParamsSchema,
        querystring: ExecutionLogQuerySchema,
        // No response schema: 200 is `{"data": text}` or plain text; errors use the error handler's own.
      },
    },
    async (request, reply) => {
      const id = request.params.id;
      await services.executions.get(id);
      const download = flag('download', request.query.download);
      const follow = flag('follow', request.query.follow);
      const wantsJson = [request.headers.accept, request.headers['content-type']].some((h) => h?.includes('application/json'));
      if (wantsJson && !follow) return { data: await services.executions.log(id) };

      void reply.type('text/plain; charset=utf-8');
      if (download) void reply.header('content-disposition', `attachment; filename=${id}.log`);
      if (!follow) return reply.send(await services.executions.log(id));

      const gone = new AbortController();
      request.raw.on('close', () => gone.abort());
      // A byte stream over the service's pieces of text: it asks for the next piece only when
      // the client has taken the bytes before (high-water mark, then the socket's `drain`).
      const stream = Readable.from(services.executions.follow(id, gone.signal), { objectMode: false });
      stream.on('error', (err) => request.log.error({ reqId: request.id, err, executionId: id }, 'log follow failed'));
      // Node sends the status line and headers with the first byte of the body, which a
      // queued execution may not have for a long time: Fastify pipes the stream once the
      // headers are set, and from then on they go at once.
      reply.raw.once('pipe', () => {
        if (!reply.raw.headersSent) reply.raw.flushHeaders();
      });
      return reply.send(stream);
    },
  );
};
