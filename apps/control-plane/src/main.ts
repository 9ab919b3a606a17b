import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from './config.js';
import { createContainer } from './container.js';
import { withDiscoveryToken } from './discovery-token.js';
import { openDatabase } from './db/client.js';
import { buildApp } from './http/app.js';
import { createLogger } from './logger.js';
import { EmbeddedRunner } from './embedded-runner.js';
import { startGrpcServer } from './grpc/grpc.server.js';

const USAGE = `Usage: carapace-control-plane [--config FILE]

Starts the Carapace control plane. Configuration: the YAML file (--config or
CARAPACE_CONFIG), overridden by CARAPACE_* environment variables; see the README.`;

const SHUTDOWN_GRACE_MS = 20_000;

/** Starts the control plane and runs until SIGINT or SIGTERM. */
export async function main(argv: string[]): Promise<void> {
  let args;
  try {
    args = parseArgs({ args: argv, options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } });
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (args.values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let config;
  try {
    config = loadConfig({ file: args.values.config, env: process.env });
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`carapace-control-plane: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }

  const log = createLogger(config.logLevel);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  config = withDiscoveryToken(config, log);
  const db = openDatabase(join(config.dataDir, 'carapace.db'));
  const container = await createContainer(config, db, log);
  if (container.bootstrap.generatedPassword) {
    const file = join(config.dataDir, 'initial-admin-password');
    writeFileSync(file, `${container.bootstrap.generatedPassword}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    process.stderr.write(
      `\nCreated the user "root" with the role "wheel". Its password, shown only this once,\n` +
        `is also in ${file} (readable only by this user):\n\n    ${container.bootstrap.generatedPassword}\n\n`,
    );
  } else if (container.bootstrap.created) {
    log.info('created the user root with the configured password');
  }

  const app = await buildApp({ services: container.services, logger: log });
  await app.listen({ host: config.http.host, port: config.http.port });
  const grpcServer = await startGrpcServer(config, container, log);
  const stopBackground = container.startBackground();
  const embedded = config.runner === 'embedded' ? new EmbeddedRunner(container.services.runners, { dataDir: config.dataDir, grpcPort: grpcServer.port, logLevel: config.logLevel }, log.child({ component: 'embedded-runner' })) : null;
  embedded?.start();

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error('shutdown grace period over: exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    stopBackground();
    Promise.resolve(embedded?.stop())
      .then(() => grpcServer.close())
      .then(() => app.close())
      .then(() => container.close())
      .then(() => {
        log.info('stopped');
        process.exit(0);
      })
      .catch((err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}
