import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppServices } from '../../app-services.js';

const HealthSchema = Type.Object({ status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]), reason: Type.Optional(Type.String()) });

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/**
 * What load balancers and monitoring ask, without a user token: `GET /v1/health/live` (the
 * process answers), `GET /v1/health/ready` (it can serve: the database answers and holds this
 * release's migrations; 503 and the reason otherwise) and `GET /metrics` (Prometheus text;
 * with `metrics.token` set, only for `Authorization: Bearer <token>`).
 */
export const operationsRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get(
    '/v1/health/live',
    { config: { auth: 'none' }, schema: { tags: ['operations'], summary: 'Whether the process answers', response: { 200: HealthSchema } } },
    () => ({ status: 'ok' as const }),
  );
  app.get(
    '/v1/health/ready',
    {
      config: { auth: 'none' },
      schema: { tags: ['operations'], summary: 'Whether this replica can serve requests', response: { 200: HealthSchema, 503: HealthSchema } },
    },
    async (_request, reply) => {
      const problem = await services.operations.problem();
      if (problem === null) return { status: 'ok' as const };
      return reply.code(503).send({ status: 'unavailable' as const, reason: problem });
    },
  );
  const token = services.config.metrics.token;
  const expected = token === null ? null : digest(token);
  app.get(
    '/metrics',
    { config: { auth: 'none' }, schema: { tags: ['operations'], summary: 'Prometheus metrics of this replica and of the installation', hide: true } },
    async (request, reply) => {
      if (expected) {
        const given = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
        if (!timingSafeEqual(digest(given), expected)) {
          return reply.code(401).type('text/plain; charset=utf-8').send('a metrics token is required\n');
        }
      }
      const text = await services.operations.metrics.scrape();
      return reply.type(services.operations.metrics.contentType).send(text);
    },
  );
};
