import type { Config } from './config.js';
import type { AuthService } from './accounts/auth.service.js';
import type { PasswordResetService } from './accounts/password-reset.service.js';
import type { RoleService } from './accounts/role.service.js';
import type { UserService } from './accounts/user.service.js';
import type { Clock } from './ports.js';
import type { ClusterService } from './infrastructure/cluster.service.js';
import type { ServerService } from './infrastructure/server.service.js';
import type { PlaybookConfigurationService } from './executions/playbook-configuration.service.js';
import type { ExecutionService } from './executions/execution.service.js';
import type { ExecutionEngine } from './executions/execution-engine.js';
import type { FactsScheduler } from './infrastructure/facts.scheduler.js';
import type { StatusScheduler } from './infrastructure/status.scheduler.js';
import type { RunnerService } from './executions/runner.service.js';
import type { Limiter } from './accounts/throttle.js';
import type { CinderIntegrationService } from './infrastructure/cinder-integration.service.js';
import type { DiscoveryTokens } from './infrastructure/discovery-tokens.js';
import type { Metrics } from './services/metrics.js';
import type { Dispatch } from './executions/dispatch.js';

/**
 * Every service the container builds, with the configuration: what the transports (routes,
 * gRPC) receive. They never receive the container, nor a repository.
 */
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
  /** Cluster status collection, its storage and what the API serves of it (issue 30). */
  readonly status: StatusScheduler;
  /** Which runner gets which queued work: the gRPC gateway's half of the engine and the facts scheduler. */
  readonly dispatch: Dispatch;
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
