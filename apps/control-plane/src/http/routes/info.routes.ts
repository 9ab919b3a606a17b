import { InfoSchema } from '@carapace/models';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.js';

function localIso(date: Date): string {
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().replace('Z', '');
}

/** `GET /v1/info/`: the service version and time; no authentication; the health check. */
export const infoRoutes: FastifyPluginAsyncTypebox<{ services: AppServices }> = async (app, { services }) => {
  app.get(
    '/v1/info',
    { config: { auth: 'none' }, schema: { tags: ['info'], summary: 'Service information and health check', response: { 200: InfoSchema } } },
    () => {
      const now = new Date(services.clock.nowMs());
      return {
        version: services.version,
        time: { local: localIso(now), utc: now.toISOString(), unix: Math.floor(now.getTime() / 1000) },
      };
    },
  );
};
