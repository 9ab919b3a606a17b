import type { ApiPermission } from '@carapace/models';
import type { Config } from '../config.js';
import type { AuthService } from '../services/auth.service.js';
import type { PasswordResetService } from '../services/password-reset.service.js';
import type { Principal } from '../services/principal.js';
import type { RoleService } from '../services/role.service.js';
import type { UserService } from '../services/user.service.js';
import type { Clock } from '../ports.js';
import type { ClusterService } from '../services/cluster.service.js';
import type { ServerService } from '../services/server.service.js';
import type { PlaybookConfigurationService } from '../services/playbook-configuration.service.js';
import type { ExecutionService } from '../services/execution.service.js';
import type { ExecutionEngine } from '../services/execution-engine.js';
import type { FactsScheduler } from '../services/facts.scheduler.js';
import type { RunnerService } from '../services/runner.service.js';
import type { Limiter } from '../services/throttle.js';
import type { CinderIntegrationService } from '../services/cinder-integration.service.js';
import type { DiscoveryTokens } from '../services/discovery-tokens.js';
import type { Metrics } from '../services/metrics.js';

/** Everything the routes need: the services and the configuration. */
export interface AppServices {
  readonly config: Config;
  readonly clock: Clock;
  readonly version: string;
  readonly auth: AuthService;
  readonly users: UserService;
  readonly roles: RoleService;
  readonly passwordReset: PasswordResetService;
  readonly clusters: ClusterService;
  readonly servers: ServerService;
  readonly playbookConfigurations: PlaybookConfigurationService;
  readonly executions: ExecutionService;
  readonly engine: ExecutionEngine;
  readonly cinder: CinderIntegrationService;
  readonly discoveryTokens: DiscoveryTokens;
  readonly runners: RunnerService;
  /** Server registrations per client address (first-boot discovery is unauthenticated by users). */
  readonly registrations: RegistrationThrottles;
  readonly facts: FactsScheduler;
  /** Health and metrics, for load balancers and monitoring. */
  readonly operations: Operations;
}

/** What `/v1/health/*` and `/metrics` answer from. */
export interface Operations {
  /** Why this replica cannot serve now, or null when it can. */
  problem(): Promise<string | null>;
  readonly metrics: Metrics;
}

/**
 * Server registrations (`POST /v1/server/`) per client address, two counts apart so that
 * wrong tokens never refuse a right one: `valid`, registrations with a valid discovery token
 * (a generous bound on what a leaked token can do from one address), and `wrong`, requests
 * refused for a wrong token (past its limit they answer 429 instead of 401).
 */
export interface RegistrationThrottles {
  readonly valid: Limiter;
  readonly wrong: Limiter;
}

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
