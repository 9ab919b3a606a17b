import { CinderIntegrationSchema, CinderQuerySchema, ErrorSchema } from '@carapace/models';
import { Type } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.js';

/** `GET /v1/cinder_integration/{cluster_id}/`: the files an OpenStack host needs to use the cluster. */
export const cinderRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get(
    '/v1/cinder_integration/:cluster_id',
    {
      config: { auth: 'token', permissions: ['view_cinder'] },
      schema: {
        tags: ['cluster'],
        summary: 'Cinder, Glance and Nova integration files of a cluster',
        params: Type.Object({ cluster_id: Type.String({ format: 'uuid', maxLength: 36 }) }),
        querystring: CinderQuerySchema,
        response: { 200: CinderIntegrationSchema, '4xx': ErrorSchema },
      },
    },
    (request) => services.cinder.files(request.params.cluster_id, request.query.root),
  );
};
