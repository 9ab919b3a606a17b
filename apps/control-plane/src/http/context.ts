import type { ApiPermission } from '@carapace/models';
import type { Principal } from '../accounts/principal.js';

/**
 * How a route is authenticated: not at all, by a user token, or (server registration) by
 * a discovery token or a user token.
 */
export type AuthMode = 'none' | 'token' | 'discovery-or-token';

/** The per-route configuration read by the auth hook. */
export interface RouteAuth {
  readonly auth: AuthMode;
  readonly permissions?: readonly ApiPermission[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set by the auth hook on routes with `auth: 'token'`. */
    principal: Principal | null;
    /** Set when the request presented a valid discovery token. */
    discovery: boolean;
  }
  interface FastifyContextConfig {
    auth?: AuthMode;
    permissions?: readonly ApiPermission[];
    /** False on routes with a secret in the path: the access log shows the route pattern. */
    logUrl?: boolean;
  }
}

/** The principal of a request on an authenticated route. */
export function principalOf(request: { principal: Principal | null }): Principal {
  if (!request.principal) throw new Error('route without authentication asked for the principal');
  return request.principal;
}
