import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, forbidden, tooManyRequests } from '../errors.js';
import type { Principal } from '../accounts/principal.js';
import type { AppServices } from '../app-services.js';

/**
 * Authenticates every route that asks for it, then checks the route's api permissions
 * against the caller's role as stored now: 401 (who are you) before 403 (you may not),
 * both before the body is even parsed.
 *
 * A callback hook, not an async one: a route without authentication costs no promise. A
 * principal the auth service has cached (the common case: a client calling again with its
 * token) still takes one read of the sessions version (see `AuthService`), so every token is
 * decided by `authenticate`.
 *
 * Server registration takes a discovery token or a user token. Registrations with a valid
 * discovery token and requests with a wrong token are counted apart per address: wrong
 * tokens past their limit answer 429, but never keep out a valid one.
 */
export function registerAuthHook(app: FastifyInstance, services: AppServices): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('discovery', false);

  const admit = (request: FastifyRequest, reply: FastifyReply, principal: Principal): void => {
    request.principal = principal;
    void reply.header('x-token-expires', String(principal.expiresAt));
    const permissions = request.routeOptions.config.permissions;
    if (!permissions) return;
    const missing = permissions.filter((p) => !principal.api.has(p));
    if (missing.length) throw forbidden(`This call needs the api permission${missing.length > 1 ? 's' : ''} ${missing.join(', ')}.`);
  };

  /** A refused registration: counted against its address; past the limit, 429 instead of 401. */
  const refusedRegistration = async (request: FastifyRequest, err: unknown): Promise<Error> => {
    if (!(err instanceof ApiError) || err.statusCode !== 401) return err as Error;
    const nowMs = services.clock.nowMs();
    const waitMs = await services.registrations.wrong.retryAfterMs(request.ip, nowMs);
    await services.registrations.wrong.hit(request.ip, nowMs);
    return waitMs > 0 ? tooManyRequests('Too many registrations with a wrong token from this address; retry later.', waitMs / 1000) : err;
  };

  app.addHook('onRequest', (request, reply, done) => {
    const auth = request.routeOptions.config.auth;
    if (auth !== 'token' && auth !== 'discovery-or-token') {
      done();
      return;
    }
    if (auth === 'discovery-or-token' && services.discoveryTokens.matches(request.headers.authorization)) {
      const nowMs = services.clock.nowMs();
      const registration = async () => {
        const waitMs = await services.registrations.valid.retryAfterMs(request.ip, nowMs);
        if (waitMs > 0) throw tooManyRequests('Too many server registrations from this address; retry later.', waitMs / 1000);
        await services.registrations.valid.hit(request.ip, nowMs);
        request.discovery = true;
      };
      registration().then(
        () => done(),
        (err: unknown) => done(err as Error),
      );
      return;
    }
    services.auth.authenticate(request.headers.authorization).then(
      (principal) => {
        try {
          admit(request, reply, principal);
          done();
        } catch (err) {
          done(err as Error);
        }
      },
      (err: unknown) => {
        if (auth !== 'discovery-or-token') {
          done(err as Error);
          return;
        }
        refusedRegistration(request, err).then(done, (e: unknown) => done(e as Error));
      },
    );
  });
}
