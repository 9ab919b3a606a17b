import type { FastifyInstance } from 'fastify';
import { forbidden, tooManyRequests } from '../errors.js';
import type { AppServices } from './context.js';

/**
 * Authenticates every route that asks for it, then checks the route's api permissions
 * against the caller's role as stored now: 401 (who are you) before 403 (you may not),
 * both before the body is even parsed.
 */
export function registerAuthHook(app: FastifyInstance, services: AppServices): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('discovery', false);
  app.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config;
    if (config.auth === 'discovery-or-token') {
      const nowMs = services.clock.nowMs();
      const waitMs = services.registrations.retryAfterMs(request.ip, nowMs);
      if (waitMs > 0) throw tooManyRequests('Too many server registrations from this address; retry later.', waitMs / 1000);
      services.registrations.hit(request.ip, nowMs);
    }
    if (config.auth === 'discovery-or-token' && services.discoveryTokens.matches(request.headers.authorization)) {
      request.discovery = true;
      return;
    }
    if (config.auth !== 'token' && config.auth !== 'discovery-or-token') return;
    const principal = await services.auth.authenticate(request.headers.authorization);
    request.principal = principal;
    void reply.header('x-token-expires', String(principal.expiresAt));
    const missing = (config.permissions ?? []).filter((p) => !principal.api.has(p));
    if (missing.length) throw forbidden(`This call needs the api permission${missing.length > 1 ? 's' : ''} ${missing.join(', ')}.`);
  });
}
