import {
  ClusterCreateSchema,
  ClusterSchema,
  ClusterUpdateSchema,
  ErrorSchema,
  PlaybookConfigurationCreateSchema,
  PlaybookConfigurationSchema,
  PlaybookConfigurationUpdateSchema,
  ServerCreateSchema,
  ServerSchema,
  ServerUpdateSchema,
} from '@carapace/models';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.js';
import { principalOf } from '../context.js';
import { registerVersionedRoutes } from './versioned.routes.js';

/** Clusters, servers (with registration) and playbook configurations. */
export const infrastructureRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  registerVersionedRoutes(app, services.config, {
    model: 'cluster',
    schema: ClusterSchema,
    service: services.clusters,
    createBody: ClusterCreateSchema,
    updateBody: ClusterUpdateSchema,
    permissions: { view: 'view_cluster', versions: 'view_cluster_versions', create: 'create_cluster', edit: 'edit_cluster', delete: 'delete_cluster' },
  });

  registerVersionedRoutes(app, services.config, {
    model: 'server',
    schema: ServerSchema,
    service: services.servers,
    listItems: (request) => services.servers.listForResponse(request),
    updateBody: ServerUpdateSchema,
    permissions: { view: 'view_server', versions: 'view_server_versions', edit: 'edit_server', delete: 'delete_server' },
  });
  app.post(
    '/v1/server',
    {
      config: { auth: 'discovery-or-token', permissions: ['create_server'] },
      schema: {
        tags: ['server'],
        summary: 'Register a server (the discovery token, or a user with create_server)',
        body: ServerCreateSchema,
        response: { 200: ServerSchema, '4xx': ErrorSchema },
      },
    },
    async (request) => ({ ...(await services.servers.register(request.body, request.discovery ? null : principalOf(request))), model: 'server' as const }),
  );

  registerVersionedRoutes(app, services.config, {
    model: 'playbook_configuration',
    schema: PlaybookConfigurationSchema,
    service: {
      list: (r) => services.playbookConfigurations.list(r),
      listCursor: (r) => services.playbookConfigurations.listCursor(r),
      get: (id) => services.playbookConfigurations.get(id),
      versions: (id, r) => services.playbookConfigurations.versions(id, r),
      versionsCursor: (id, r) => services.playbookConfigurations.versionsCursor(id, r),
      version: (id, v) => services.playbookConfigurations.version(id, v),
      update: (id, body, p) => services.playbookConfigurations.update(id, body, p),
      delete: (id, p) => services.playbookConfigurations.delete(id, p),
    },
    updateBody: PlaybookConfigurationUpdateSchema,
    permissions: {
      view: 'view_playbook_configuration',
      versions: 'view_playbook_configuration_version',
      edit: 'edit_playbook_configuration',
      delete: 'delete_playbook_configuration',
    },
  });
  app.post(
    '/v1/playbook_configuration',
    {
      config: { auth: 'token', permissions: ['view_playbook_configuration', 'create_playbook_configuration'] },
      schema: {
        tags: ['playbook_configuration'],
        summary: 'Create a playbook configuration (and run it at once with "run": true)',
        body: PlaybookConfigurationCreateSchema,
        response: { 200: PlaybookConfigurationSchema, '4xx': ErrorSchema },
      },
    },
    async (request, reply) => {
      const { configuration, execution } = await services.playbookConfigurations.createAndRun(request.body, principalOf(request));
      if (execution) void reply.header('x-execution-id', execution.id);
      return { ...configuration, model: 'playbook_configuration' as const };
    },
  );
};
