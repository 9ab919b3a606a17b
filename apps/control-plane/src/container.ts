import { join } from 'node:path';
import type { Logger } from 'pino';
import type { RoleData, UserData } from '@carapace/models';
import type { Config } from './config.js';
import { AuthRepository } from './db/auth.repository.js';
import type { Db } from './db/client.js';
import { roles, users } from './db/schema/index.js';
import { VersionedRepository } from './db/versioned.repository.js';
import type { AppServices } from './http/context.js';
import { systemClock, type Clock, type Mailer } from './ports.js';
import { AuthService } from './services/auth.service.js';
import { bootstrap, type BootstrapResult } from './services/bootstrap.service.js';
import { SmtpMailer } from './services/mailer.js';
import { PasswordResetService } from './services/password-reset.service.js';
import { RoleService } from './services/role.service.js';
import { Throttle } from './services/throttle.js';
import { TokenSigner } from './services/token-signer.js';
import { UserService } from './services/user.service.js';
import { randomBytes } from 'node:crypto';
import { nowS } from './ports.js';
import { VERSION } from './version.js';

/** The running services and what they hold open. */
export interface Container {
  readonly services: AppServices;
  readonly mailer: Mailer;
  readonly bootstrap: BootstrapResult;
  /** Waits for the mails under way and closes the database. */
  close(): Promise<void>;
}

/** Ports a test may swap. */
export interface ContainerPorts {
  readonly clock?: Clock;
  readonly mailer?: Mailer;
}

/** Wires repositories, services and ports over an open database; runs the first-start bootstrap. */
export async function createContainer(config: Config, db: Db, logger: Logger, ports: ContainerPorts = {}): Promise<Container> {
  const clock = ports.clock ?? systemClock;
  const mailer = ports.mailer ?? new SmtpMailer(config.smtp, join(config.dataDir, 'mail'), logger.child({ component: 'mailer' }));
  const authRepo = new AuthRepository(db);
  const userRepo = new VersionedRepository<UserData>(db, users, {
    data: ['login', 'email', 'full_name', 'role_id'],
    defaultSort: [['full_name', 1]],
  });
  const roleRepo = new VersionedRepository<RoleData>(db, roles, { data: ['name', 'permissions'], defaultSort: [['name', 1]] });
  const roleService = new RoleService('role', roleRepo, clock);
  const userService = new UserService(userRepo, clock, authRepo, roleService, mailer);
  roleService.attach(userService);
  const key = Buffer.from(authRepo.secret('token_signing_key', () => randomBytes(32).toString('base64'), nowS(clock)), 'base64');
  const windowMs = config.throttle.windowS * 1000;
  const services: AppServices = {
    config,
    clock,
    version: VERSION,
    users: userService,
    roles: roleService,
    auth: new AuthService(authRepo, userService, new TokenSigner(key), clock, config.tokenTtlS, {
      perUser: new Throttle(windowMs, config.throttle.loginFailuresPerUser),
      perAddress: new Throttle(windowMs, config.throttle.loginFailuresPerAddress),
    }),
    passwordReset: new PasswordResetService(authRepo, userService, mailer, clock, {
      ttlS: config.passwordResetTtlS,
      resetUrl: config.resetUrl,
      perUser: new Throttle(windowMs, config.throttle.resetRequestsPerUser),
      perAddress: new Throttle(windowMs, config.throttle.resetRequestsPerAddress),
    }),
  };
  const boot = await bootstrap({ users: userRepo, roles: roleRepo, auth: authRepo, clock }, config.admin);
  return {
    services,
    mailer,
    bootstrap: boot,
    async close() {
      await mailer.close();
      db.$client.close();
    },
  };
}
