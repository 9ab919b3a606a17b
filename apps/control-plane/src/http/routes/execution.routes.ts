import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import {
  ErrorSchema,
  ExecutionCreateSchema,
  ExecutionLogQuerySchema,
  ExecutionSchema,
  ExecutionStepSchema,
  IdParamsSchema,
  ListQuerySchema,
  ListSchema,
  type ExecutionState,
  type ExecutionStepData,
} from '@carapace/models';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { mapCursor, type Stored } from '../../db/versioned.repository.js';
import { badRequest } from '../../errors.js';
import { isFinal } from '../../services/execution-state.js';
import type { AppServices } from '../context.js';
import { listStream } from '../list-json.js';
import { listRequest, pageBody, registerVersionedRoutes } from './versioned.routes.js';

const YES = /^(1|y|yes|t|true|on)$/i;
const NO = /^(0|n|no|f|false|off)$/i;

function flag(name: string, value: string | undefined): boolean {
  if (value === undefined) return false;
  if (YES.test(value)) return true;
  if (NO.test(value)) return false;
  throw badRequest(`Query parameter "${name}" takes a boolean.`);
}

/** Executions (create, cancel, versions), their steps and their log. */
/** Chunks read at once by a follower (each up to 32 KiB from the runner). */
const FOLLOW_READ_CHUNKS = 64;

export const executionRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  registerVersionedRoutes(app, services.config, {
    model: 'execution',
    schema: ExecutionSchema,
    service: services.executions,
    createBody: ExecutionCreateSchema,
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
    (request, reply) => {
      services.executions.get(request.params.id);
      const list = listRequest(request.query, services.config);
      if (list.all) {
        const cursor = mapCursor(services.executionEvents.cursorSteps(request.params.id, list), (model) => ({ model }));
        const serialize = (step: Stored<ExecutionStepData>) =>
          reply.serializeInput({ ...step, model: 'execution_step' }, ExecutionStepSchema as unknown as Record<string, unknown>);
        // The stream writes the list schema's JSON itself (`listStream`), batch by batch.
        void (reply as FastifyReply).type('application/json').send(listStream(cursor, 'execution_step', serialize));
        return;
      }
      return pageBody(list, services.executionEvents.listSteps(request.params.id, list), (s) => ({ ...s, model: 'execution_step' as const }));
    },
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
      services.executions.get(id);
      const download = flag('download', request.query.download);
      const follow = flag('follow', request.query.follow);
      const wantsJson = [request.headers.accept, request.headers['content-type']].some((h) => h?.includes('application/json'));
      if (wantsJson && !follow) return { data: services.executionEvents.readLog(id).text };

      void reply.type('text/plain; charset=utf-8');
      if (download) void reply.header('content-disposition', `attachment; filename=${id}.log`);
      if (!follow) return reply.send(services.executionEvents.readLog(id).text);

      const stream = new PassThrough();
      let closed = false;
      let wake: (() => void) | null = null;
      const unsubscribe = services.engine.events.on((event) => {
        if (event.executionId === id && wake) wake();
      });
      const close = () => {
        closed = true;
        unsubscribe();
        wake?.();
      };
      request.raw.on('close', close);
      const pump = async () => {
        let offset = 0;
        try {
          while (!closed) {
            const finished = isFinal(services.executions.get(id).data.state as ExecutionState);
            const { text, next } = services.executionEvents.readLog(id, offset, FOLLOW_READ_CHUNKS);
            offset = next;
            if (text && !stream.write(text)) await once(stream, 'drain');
            if (text) continue;
            if (finished) break;
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
            wake = null;
          }
        } finally {
          unsubscribe();
          stream.end();
        }
      };
      pump().catch((err: unknown) => {
        request.log.error({ reqId: request.id, err, executionId: id }, 'log follow failed');
        stream.destroy();
      });
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
