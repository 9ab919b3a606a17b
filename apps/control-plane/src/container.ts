import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ClusterData, ExecutionData, PlaybookConfigurationData, RoleData, ServerData, UserData } from '@carapace/models';
import { MAINTENANCE_STATE } from '@carapace/playbooks';
import type { Config } from './config.js';
import { AuthRepository } from './db/auth.repository.js';
import { openBus, type Bus } from './db/bus.js';
import { databaseProblem } from './db/client.js';
import type { Database } from './db/database.js';
import { StatsRepository } from './db/stats.repository.js';
import { Metrics } from './services/metrics.js';
import { clusters, executions, playbookConfigurations, roles, servers, users } from './db/schema/index.js';
import { ClusterFileRepository } from './db/cluster-file.repository.js';
import { ExecutionEventsRepository } from './db/execution-events.repository.js';
import { FactsRequestRepository } from './db/facts-request.repository.js';
import { LockRepository } from './db/lock.repository.js';
import { RunnerRepository } from './db/runner.repository.js';
import { RunnerSessionRepository } from './db/runner-session.repository.js';
import { FactsScheduler } from './infrastructure/facts.scheduler.js';
import { StatusScheduler } from './infrastructure/status.scheduler.js';
import { ClusterStatusRepository } from './db/cluster-status.repository.js';
import { RunEffects } from './executions/run-effects.js';
import { RunnerService } from './executions/runner.service.js';
import { CinderIntegrationService } from './infrastructure/cinder-integration.service.js';
import { ClusterService } from './infrastructure/cluster.service.js';
import { DiscoveryTokens } from './infrastructure/discovery-tokens.js';
import { ExecutionEngine } from './executions/execution-engine.js';
import { ExecutionService } from './executions/execution.service.js';
import { PlaybookConfigurationService } from './executions/playbook-configuration.service.js';
import { ServerService } from './infrastructure/server.service.js';
import { VersionedRepository } from './db/versioned.repository.js';
import type { AppServices } from './app-services.js';
import { Dispatch } from './executions/dispatch.js';
import { systemClock, type Clock, type Mailer } from './ports.js';
import { AuthService } from './accounts/auth.service.js';
import { bootstrap, type BootstrapResult } from './accounts/bootstrap.service.js';
import { SmtpTransport } from './adapters/mailer.js';
import { MailOutbox, type MailRetry } from './notifications/mail-outbox.service.js';
import { MailOutboxRepository } from './db/mail-outbox.repository.js';
import { NotificationRepository } from './db/notification.repository.js';
import { configuredSecret, ExecutionNotifier } from './notifications/notifier.service.js';
import { WebhookOutbox, type WebhookRetry } from './notifications/webhook-outbox.service.js';
import { AdministratorRepository } from './db/administrator.repository.js';
import { Administrators } from './accounts/administrators.js';
import { PasswordResetService } from './accounts/password-reset.service.js';
import { RoleService } from './accounts/role.service.js';
import { Backoff, SharedThrottle, Throttle, type Limiter } from './accounts/throttle.js';
import { ThrottleRepository } from './db/throttle.repository.js';
import { PasswordHashing } from './adapters/passwords.js';
import { TokenSigner } from './adapters/token-signer.js';
import { UserService } from './accounts/user.service.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { nowS } from './ports.js';
import { VERSION } from './version.js';
import { openSecrets } from './secrets/at-rest.js';
import type { SecretBox } from './secrets/secret-box.js';

/** The running services and what they hold open. */
export interface Container {
  readonly services: AppServices;
  readonly mailer: Mailer;
  /** The record of webhook deliveries and their attempts. */
  readonly notifications: NotificationRepository;
  readonly bootstrap: BootstrapResult;
  /** What this replica and the others sharing the database tell each other. */
  readonly bus: Bus;
  /** Opens and seals the secrets the database holds (the key is kept outside it). */
  readonly secretBox: SecretBox;
  /** Starts the periodic sweep of expired leases; returns its stop. */
  startBackground(): Promise<() => void>;
  /** Waits for the mails under way and closes the database. */
  close(): Promise<void>;
  /** Says the control plane is stopping: `/v1/health/ready` answers 503 from now on, so load balancers move away first. */
  stopping(): void;
}

/** Ports a test may swap. */
export interface ContainerPorts {
  readonly clock?: Clock;
  readonly mailer?: Mailer;
  /** When undelivered mail is tried again (default: `DEFAULT_MAIL_RETRY`). */
  readonly mailRetry?: MailRetry;
  /** When undelivered webhooks are tried again (default: `DEFAULT_WEBHOOK_RETRY`). */
  readonly webhookRetry?: WebhookRetry;
  /** How long a runner's lease lasts without a heartbeat (default: the configuration's). */
  readonly leaseTimeoutMs?: number;
  /** How long a runner asked for a server's facts has to answer before it is asked again (default: 120 s). */
  readonly factsAnswerTimeoutMs?: number;
  /** How long a runner asked for a cluster's status has to answer (default: what it may take on every monitor). */
  readonly statusAnswerTimeoutMs?: number;
}

/**
 * Wires repositories, services and ports over an open database; encrypts the database's
 * secrets if they are still in clear (`openSecrets`: throws SecretsError when the key is
 * missing or another one); runs the first-start bootstrap.
 */
export async function createContainer(config: Config, db: Database, logger: Logger, ports: ContainerPorts = {}): Promise<Container> {
  const clock = ports.clock ?? systemClock;
  const box = await openSecrets(config, db, logger.child({ component: 'secrets' }), nowS(clock));
  const bus = await openBus(db, logger.child({ component: 'bus' }));
  const mailLog = logger.child({ component: 'mailer' });
  const outbox = ports.mailer
    ? null
    : new MailOutbox(new MailOutboxRepository(db, box), new SmtpTransport(config.smtp, join(config.dataDir, 'mail'), mailLog), clock, mailLog, ports.mailRetry);
  const mailer: Mailer = ports.mailer ?? (outbox as MailOutbox);
  const authRepo = new AuthRepository(db, box);
  // A list query's time budget; a stored model's data at most what a PUT body can carry.
  const limits = { queryBudgetMs: config.list.queryBudgetMs, maxDataBytes: config.http.bodyLimitBytes };
  // Users and roles change seldom and are read on many requests: their latest versions are
  // cached (exactly: any write to the table empties the cache).
  const userRepo = new VersionedRepository<UserData>(
    db,
    users,
    { data: ['login', 'email', 'full_name', 'role_id'], defaultSort: [['full_name', 1]] },
    { cacheLatest: 10_000, limits },
  );
  const roleRepo = new VersionedRepository<RoleData>(
    db,
    roles,
    { data: ['name', 'permissions'], defaultSort: [['name', 1]] },
    { cacheLatest: 1_000, limits },
  );
  const administratorRepo = new AdministratorRepository(db);
  const administrators = new Administrators(administratorRepo);
  const roleService = new RoleService('role', roleRepo, clock, administrators, (roleId) => userRepo.countLive('role_id', roleId));
  // One per container: the scrypt threads and their bounds (passwordHashing) of this control plane.
  const passwords = new PasswordHashing(config.passwordHashing);
  const userService = new UserService(userRepo, clock, authRepo, roleService, mailer, administrators, passwords);
  const locks = new LockRepository(db);
  const clusterRepo = new VersionedRepository<ClusterData>(db, clusters, { data: ['name', 'configuration'], defaultSort: [['name', 1]] }, { limits });
  const serverRepo = new VersionedRepository<ServerData>(db, servers, {
    data: ['name', 'fqdn', 'ip', 'username', 'state', 'cluster_id', 'facts', 'facts_error', 'ssh_host_key'],
    defaultSort: [['name', 1]],
  }, { cacheLiveCount: true, limits });
  const configurationRepo = new VersionedRepository<PlaybookConfigurationData>(db, playbookConfigurations, {
    data: ['name', 'playbook_id', 'cluster_id', 'server_ids', 'hints', 'configuration'],
    defaultSort: [['time_updated', -1]],
  }, { cacheVersions: 10_000, limits });
  const executionRepo = new VersionedRepository<ExecutionData>(db, executions, {
    data: ['playbook_configuration', 'state', 'cluster_id', 'server_ids', 'time_created', 'time_started', 'time_finished', 'runner_id', 'reason', 'preview', 'relaunch_of', 'relaunched_by', 'limit_server_ids'],
    defaultSort: [['time_created', -1]],
  }, { limits });
  const factsRequests = new FactsRequestRepository(db);
  const serverService = new ServerService(serverRepo, clock, locks, bus, factsRequests);
  const clusterService = new ClusterService(clusterRepo, clock, (id) => serverService.countInCluster(id));
  const executionEvents = new ExecutionEventsRepository(db, box, config.list.queryBudgetMs);
  const clusterFiles = new ClusterFileRepository(db, box);
  const leaseTimeoutMs = ports.leaseTimeoutMs ?? config.grpc.leaseTimeoutMs;
  const engine = new ExecutionEngine(
    executionRepo,
    configurationRepo,
    serverService,
    locks,
    executionEvents,
    new RunEffects(clusterRepo, configurationRepo, serverService, clusterFiles),
    clock,
    leaseTimeoutMs,
    bus,
  );
  const notifications = new NotificationRepository(db);
  const webhookLog = logger.child({ component: 'webhooks' });
  const webhooks = new WebhookOutbox(notifications, (url) => configuredSecret(config, url), clock, webhookLog, `carapace/${VERSION}`, ports.webhookRetry);
  const notifier = new ExecutionNotifier(
    config,
    {
      cluster: (id) => clusterRepo.get(id),
      server: (id) => serverRepo.get(id),
      lastFailedStep: (id) => executionEvents.lastFailedStep(id),
      initiatorOf: async (id) => (await executionRepo.getVersion(id, 1))?.initiator_id ?? null,
      atomically: (fn) => db.transaction(fn),
    },
    mailer,
    webhooks,
    webhookLog,
  );
  engine.ended.on((execution) => notifier.executionEnded(execution));
  const status = new StatusScheduler(clusterRepo, serverService, new ClusterStatusRepository(db), notifier, clock, logger.child({ component: 'status' }), {
    intervalS: config.status.intervalS,
    connectTimeoutS: config.status.connectTimeoutS,
    answerTimeoutMs: ports.statusAnswerTimeoutMs,
  });
  engine.ended.on((execution) => status.executionEnded(execution.data.cluster_id));
  const key = Buffer.from(await authRepo.secret('token_signing_key', () => randomBytes(32).toString('base64'), nowS(clock)), 'base64');
  const windowMs = config.throttle.windowS * 1000;
  // Replicas share PostgreSQL: their throttles count together, in the database.
  const throttleRepo = new ThrottleRepository(db);
  const limiter = (scope: string, limit: number): Limiter =>
    db.sharedByReplicas ? new SharedThrottle(throttleRepo, scope, windowMs, limit) : new Throttle(windowMs, limit);
  const replica = randomUUID();
  const runners = new RunnerService(
    new RunnerRepository(db),
    clock,
    () => engine.runningByRunner(),
    bus,
    new RunnerSessionRepository(db),
    replica,
    leaseTimeoutMs,
  );
  const facts = new FactsScheduler(serverService, factsRequests, clock, logger.child({ component: 'facts' }), ports.factsAnswerTimeoutMs);
  const metrics = new Metrics(new StatsRepository(db), clock, {
    connectedRunners: () => runners.connected().length,
    factsPending: () => facts.count(),
    clusterStatus: async () => {
      const rows = await status.gauges();
      const names = await clusterRepo.getMany(rows.map((r) => r.clusterId));
      return rows.map((r) => ({ ...r, name: names.get(r.clusterId)?.data.name ?? '' }));
    },
    databaseConnections: () => db.connections(),
  });
  const executionService = new ExecutionService(executionRepo, clock, configurationRepo, clusterService, engine, executionEvents, {
    anyInMaintenance: (ids) => serverRepo.anyLiveAmong(ids, 'state', MAINTENANCE_STATE, 'servers_in_maintenance'),
    inMaintenance: async (ids) => (await serverService.liveMany(ids)).found.filter((s) => s.data.state === MAINTENANCE_STATE).map((s) => s.id),
  });
  let closing = false;
  const services: AppServices = {
    config,
    clock,
    version: VERSION,
    users: userService,
    roles: roleService,
    auth: new AuthService(authRepo, userService, new TokenSigner(key), clock, config.tokenTtlS, {
      perLoginAndAddress: limiter('login_pair', config.throttle.loginFailuresPerUser),
      perAddress: limiter('login_address', config.throttle.loginFailuresPerAddress),
      perLogin: new Backoff((n) => limiter('login_backoff', n), config.throttle.loginDelayBaseMs, config.throttle.loginDelayMaxMs),
    }, passwords),
    passwordReset: new PasswordResetService(authRepo, userService, mailer, clock, passwords, {
      ttlS: config.passwordResetTtlS,
      resetUrl: config.resetUrl,
      perLoginAndAddress: limiter('reset_pair', config.throttle.resetRequestsPerUser),
      perAddress: limiter('reset_address', config.throttle.resetRequestsPerAddress),
    }),
    clusters: clusterService,
    servers: serverService,
    playbookConfigurations: new PlaybookConfigurationService(configurationRepo, clock, clusterService, serverService, executionService),
    executions: executionService,
    engine,
    cinder: new CinderIntegrationService(clusterService, clusterFiles),
    discoveryTokens: new DiscoveryTokens(config.discoveryTokens),
    runners,
    registrations: {
      valid: limiter('registration_valid', config.throttle.registrationsPerAddress),
      wrong: limiter('registration_wrong', config.throttle.registrationFailuresPerAddress),
    },
    facts,
    status,
    dispatch: new Dispatch(engine, facts, status),
    operations: {
      problem: () => (closing ? Promise.resolve('the control plane is shutting down') : databaseProblem(db)),
      metrics,
    },
  };
  const boot = await bootstrap({ users: userRepo, roles: roleRepo, auth: authRepo, administrators: administratorRepo, clock, passwords }, config.admin);
  if (boot.bootstrapRoleUpdated) logger.info('the bootstrap role was given every permission of this release');
  return {
    services,
    mailer,
    notifications,
    bootstrap: boot,
    bus,
    secretBox: box,
    async startBackground() {
      await outbox?.resume();
      webhooks.resume();
      const extended = await engine.extendLeasesAtStart(replica, config.grpc.heartbeatIntervalMs);
      if (extended) logger.info({ leases: extended }, 'leases of running executions extended while their runners reconnect');
      let sweeping = false;
      const timer = setInterval(() => {
        if (sweeping) return;
        sweeping = true;
        engine
          .sweep()
          .catch((err: unknown) => logger.error({ err }, 'sweep of expired leases failed'))
          .finally(() => (sweeping = false));
      }, Math.max(1000, Math.floor(leaseTimeoutMs / 3)));
      timer.unref();
      // Throttle events of keys no longer hit (a shared database; in memory they go as keys are read).
      const prune =
        db.sharedByReplicas
          ? setInterval(() => {
              throttleRepo.prune(clock.nowMs() - windowMs).catch((err: unknown) => logger.error({ err }, 'prune of throttle events failed'));
            }, 60_000).unref()
          : undefined;
      await services.facts.resume();
      const stopFacts = services.facts.start();
      await status.resume();
      const stopStatus = status.start();
      return () => {
        clearInterval(timer);
        clearInterval(prune);
        stopFacts();
        stopStatus();
      };
    },
    stopping() {
      closing = true;
    },
    async close() {
      closing = true;
      services.facts.close();
      status.close();
      await Promise.all([mailer.close(), webhooks.close(), engine.storeHeartbeats(), runners.storeHeartbeats()]);
      await bus.close();
      await db.close();
    },
  };
}
