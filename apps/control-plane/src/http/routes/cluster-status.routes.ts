import { ClusterStatusHistoryQuerySchema, ClusterStatusHistorySchema, ClusterStatusListSchema, ClusterStatusSchema, ErrorSchema } from '@carapace/models';
import { Type } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.js';
import { notFound } from '../../errors.js';

const Params = Type.Object({ id: Type.String({ format: 'uuid', maxLength: 36, description: 'The cluster\'s id.' }) });

/**
 * The cluster status (a Carapace extension, issue 30): what Ceph last said of a cluster, its
 * 24 hours of history, and every cluster's status at once (the dashboard, `carapace cluster
 * status`). Collected by runners (`StatusScheduler`); these routes only read.
 */
export const clusterStatusRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  /** The cluster, live; 404 when unknown or deleted. */
  const liveCluster = async (id: string) => {
    const cluster = await services.clusters.get(id);
    if (cluster.time_deleted !== 0) throw notFound(`No cluster with id ${id}.`);
    return cluster;
  };

  app.get(
    '/v1/cluster/:id/status',
    {
      config: { auth: 'token', permissions: ['view_cluster'] },
      schema: {
        tags: ['cluster'],
        summary: 'What Ceph last said of a cluster: health and checks, daemons, PGs, capacity, IO (a Carapace extension)',
        params: Params,
        response: { 200: ClusterStatusSchema, '4xx': ErrorSchema },
      },
    },
    async (request) => services.status.status(await liveCluster(request.params.id)),
  );

  app.get(
    '/v1/cluster/:id/status/history',
    {
      config: { auth: 'token', permissions: ['view_cluster'] },
      schema: {
        tags: ['cluster'],
        summary: 'A cluster\'s health, capacity and OSD counts over the last hours, a point a minute at most (a Carapace extension)',
        params: Params,
        querystring: ClusterStatusHistoryQuerySchema,
        response: { 200: ClusterStatusHistorySchema, '4xx': ErrorSchema },
      },
    },
    async (request) => {
      const cluster = await liveCluster(request.params.id);
      return { cluster_id: cluster.id, points: await services.status.history(cluster.id, request.query.hours ?? 24) };
    },
  );

  app.get(
    '/v1/cluster_status',
    {
      config: { auth: 'token', permissions: ['view_cluster'] },
      schema: {
        tags: ['cluster'],
        summary: 'The status of every cluster, in the order of their names (a Carapace extension)',
        response: { 200: ClusterStatusListSchema, '4xx': ErrorSchema },
      },
    },
    async () => {
      const clusters = await services.clusters.list({ page: 1, perPage: 1, all: true, sortBy: '{"name": 1}' });
      return { items: await services.status.statuses(clusters.items) };
    },
  );
};
