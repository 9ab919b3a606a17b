import { CinderIntegrationSchema, CinderQuerySchema, ErrorSchema } from '@carapace/models';
import { Type } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { posix } from 'node:path';
import { badRequest, notFound } from '../../errors.js';
import type { AppServices } from '../context.js';

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
    (request) => {
      const root = request.query.root ?? '/etc/ceph';
      if (root.split('/').includes('..') || root.includes('\0')) throw badRequest('"root" must be an absolute path without "..".');
      const cluster = services.clusters.get(request.params.cluster_id);
      if (cluster.time_deleted !== 0) throw notFound(`The cluster ${cluster.id} is deleted.`);
      const files = services.clusterFiles.list(cluster.id);
      if (files.length === 0) throw notFound(`The cluster ${cluster.id} has no integration files yet: deploy it first.`);
      return Object.fromEntries(files.map((f) => [posix.join(posix.normalize(root), f.name), f.content]));
    },
  );
};
