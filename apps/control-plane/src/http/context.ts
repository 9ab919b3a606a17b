import type { ApiPermission } from '@carapace/models';
import type { Config } from '../config.js';
import type { AuthService } from '../services/auth.service.js';
import type { PasswordResetService } from '../services/password-reset.service.js';
import type { Principal } from '../services/principal.js';
import type { RoleService } from '../services/role.service.js';
import type { UserService } from '../services/user.service.js';
import type { Clock } from '../ports.js';

/** Everything the routes need: the services and the configuration. */
export interface AppServices {
  readonly config: Config;
  readonly clock: Clock;
  readonly version: string;
  readonly auth: AuthService;
  readonly users: UserService;
  readonly roles: RoleService;
  readonly passwordReset: PasswordResetService;
}

/** How a route is authenticated. */
export type AuthMode = 'none' | 'token';

/** The per-route configuration read by the auth hook. */
export interface RouteAuth {
  readonly auth: AuthMode;
  readonly permissions?: readonly ApiPermission[];
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set by the auth hook on routes with `auth: 'token'`. */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    auth?: AuthMode;
    permissions?: readonly ApiPermission[];
  }
}

/** The principal of a request on an authenticated route. */
export function principalOf(request: { principal: Principal | null }): Principal {
  if (!request.principal) throw new Error('route without authentication asked for the principal');
  return request.principal;
}
