import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createContainer } from './container.js';
import { withDiscoveryToken } from './discovery-token.js';
import { openDatabase } from './db/client.js';
import { CopyRefused, copyToPostgres } from './db/migrate-to.js';
import { buildApp } from './http/app.js';
import { createLogger, resolveLogFormat } from './logger.js';
import { EmbeddedRunner } from './embedded-runner.js';
import { startGrpcServer } from './grpc/grpc.server.js';
import { BackupError, restoreBackup, takeBackup } from './backup/backup.js';
import { liveProcess, markLive } from './backup/live.js';
import { BackupSchedule } from './backup/schedule.js';
import { rotateKey } from './secrets/at-rest.js';
import { keySource } from './secrets/key-file.js';
import { SecretsError } from './secrets/secret-box.js';
import { nowS, systemClock } from './ports.js';

const USAGE = `Usage: carapace-control-plane [--config FILE]
       carapace-control-plane migrate-to [postgres://USER:PASSWORD@HOST/DB] [--from FILE] [--config FILE]
       carapace-control-plane backup FILE [--config FILE]
       carapace-control-plane restore FILE [--config FILE]
       carapace-control-plane rotate-key [--new-key-file FILE] [--config FILE]

Starts the Carapace control plane. Configuration: the YAML file (--config or
CARAPACE_CONFIG), overridden by CARAPACE_* environment variables; see the README.

migrate-to copies this installation's SQLite database (<dataDir>/carapace.db, or --from)
into a new, empty PostgreSQL database (the URL, or database.url / CARAPACE_DATABASE_URL),
all or nothing; stop the control plane first, then start it with database.url set.

backup writes an online backup of the SQLite installation to FILE, while it runs: the
database (its secrets encrypted) and the data directory's files a restore needs. restore
makes the data directory (which must hold no installation) an installation restored from
FILE, all or nothing; it needs the secrets key the backup was made with. rotate-key
re-encrypts every secret under a new key, all or nothing (stop the control plane first).
See the README, "Backups and secrets".`;

/** The commands besides serving, and how many positional arguments each takes at most. */
const COMMANDS: Record<string, number> = { 'migrate-to': 1, backup: 1, restore: 1, 'rotate-key': 0 };

const SHUTDOWN_GRACE_MS = 20_000;

const PARENT_CHECK_MS = 1000;

const EXIT_LINGER_MS = 1000;

export interface MainOptions {
  /**
   * Stop (as on SIGTERM) when the parent process is no longer this one. The bin sets it under
   * npm: npm killed with SIGKILL cannot forward a signal, and the control plane must not live
   * on, re-parented, holding its ports.
   */
  parentPid?: number;
}

/**
 * Starts the control plane and runs until SIGINT, SIGTERM or SIGHUP (or its parent's end, see
 * MainOptions); returns the exit status: 0 stopped, 1 failed to stop, 2 bad usage or configuration.
 */
export async function main(argv: string[], options: MainOptions = {}): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string', short: 'c' },
        help: { type: 'boolean', short: 'h' },
        from: { type: 'string' },
        'new-key-file': { type: 'string' },
      },
    });
    const [command, ...rest] = args.positionals;
    const most = command === undefined ? 0 : COMMANDS[command];
    if (command !== undefined && (most === undefined || rest.length > most)) throw new Error(`unexpected arguments: ${args.positionals.join(' ')}`);
    if ((command === 'backup' || command === 'restore') && rest.length !== 1) throw new Error(`${command} needs the backup FILE`);
    if (args.values.from !== undefined && command !== 'migrate-to') throw new Error('--from goes with migrate-to');
    if (args.values['new-key-file'] !== undefined && command !== 'rotate-key') throw new Error('--new-key-file goes with rotate-key');
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let config;
  try {
    config = loadConfig({ file: args.values.config, env: process.env });
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`carapace-control-plane: ${e.message}\n`);
      return 2;
    }
    throw e;
  }

  // Decided once, here: the embedded runner writes to the same standard output and follows it.
  const logFormat = resolveLogFormat(config.logFormat, process.stdout);
  const log = createLogger(config.logLevel, { format: logFormat });
  if (args.positionals[0] === 'migrate-to') {
    // The URL holds a password: it may come from the configuration (CARAPACE_DATABASE_URL)
    // rather than the command line, where other users' `ps` would show it.
    const url = args.positionals[1] ?? config.database.url;
    if (!url) {
      process.stderr.write('carapace-control-plane migrate-to: name the PostgreSQL database: a postgres:// URL, or CARAPACE_DATABASE_URL\n');
      return 2;
    }
    return migrateTo(args.values.from ?? join(config.dataDir, 'carapace.db'), url);
  }
  const command = args.positionals[0];
  if (command === 'backup' || command === 'restore' || command === 'rotate-key') {
    return maintenance(command, config, args.positionals[1] ?? '', args.values['new-key-file']);
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  config = withDiscoveryToken(config, log);
  let db;
  try {
    db = await openDatabase(config.database.url ?? join(config.dataDir, 'carapace.db'), { poolSize: config.database.poolSize });
  } catch (err) {
    // Never the URL itself: it holds the password.
    log.fatal({ err: { message: (err as Error).message, code: (err as { code?: unknown }).code } }, 'cannot open the database');
    return 1;
  }
  let container;
  try {
    container = await createContainer(config, db, log);
  } catch (err) {
    await db.close();
    if (!(err instanceof SecretsError)) throw err;
    log.fatal({ err: { message: err.message } }, 'cannot open the secrets of the database');
    process.stderr.write(`carapace-control-plane: ${err.message}\n`);
    return 1;
  }
  const unmarkLive = markLive(config.dataDir);
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

  // The runners' side first: the embedded runner loads its code while the HTTP API is built.
  const grpcServer = await startGrpcServer(config, container.services, log);
  const stopBackground = await container.startBackground();
  const embedded = config.runner === 'embedded' ? new EmbeddedRunner(container.services.runners, config, { grpcPort: grpcServer.port, logFormat, env: process.env }, log.child({ component: 'embedded-runner' })) : null;
  if (embedded) {
    embedded.start().catch((err: unknown) => log.error({ err }, 'the embedded runner could not start'));
  }
  const app = await buildApp({ services: container.services, logger: log });
  await app.listen({ host: config.http.host, port: config.http.port });
  const stopBackups = new BackupSchedule(config, log.child({ component: 'backup' })).start();

  let stopping = false;
  let finish: (code: number) => void = () => undefined;
  const stopped = new Promise<number>((resolve) => (finish = resolve));
  const stop = (signal: string) => {
    if (stopping) {
      // npm forwards the terminal's SIGINT that the process group got too: one shutdown.
      log.info({ signal }, 'already shutting down');
      return;
    }
    stopping = true;
    clearInterval(parentCheck);
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error('shutdown grace period over: exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    container.stopping();
    stopBackground();
    Promise.resolve(embedded?.stop())
      .then(() => stopBackups())
      .then(() => grpcServer.close())
      .then(() => app.close())
      .then(() => container.close())
      .then(() => {
        unmarkLive();
        log.info('stopped');
        finish(0);
      })
      .catch((err: unknown) => {
        log.error({ err }, 'shutdown failed');
        finish(1);
      });
  };
  // `on`, not `once`: a repeated signal must not fall back to the default action (an
  // immediate exit without the drain).
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => stop(signal));
  // Linux has no parent-death event a Node program can ask for: a re-parented process sees
  // its ppid change.
  const { parentPid } = options;
  const parentCheck = parentPid
    ? setInterval(() => {
        if (process.ppid === parentPid) return;
        log.warn({ parentPid }, 'the parent process is gone');
        stop('parent exited');
      }, PARENT_CHECK_MS).unref()
    : undefined;
  const code = await stopped;
  // Everything the control plane opened is closed: a handle a dependency left open must not
  // keep a stopped control plane alive.
  setTimeout(() => process.exit(code), EXIT_LINGER_MS).unref();
  return code;
}

/** `backup FILE`, `restore FILE`, `rotate-key`: 0 done, 1 refused or failed (one line says why). */
async function maintenance(command: 'backup' | 'restore' | 'rotate-key', config: Config, file: string, newKeyFile: string | undefined): Promise<number> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  try {
    if (command === 'backup') {
      const r = await takeBackup(config, file);
      say(`backup written: ${r.file} (${r.bytes} bytes, ${r.files} files of the data directory, in ${r.ms} ms)`);
      say(`its secrets are encrypted with the key ${r.keyId}: it restores only with that key (${keySource(config)}); keep a copy of the key apart from the backups`);
    } else if (command === 'restore') {
      const r = await restoreBackup(config, file);
      say(`restored the backup of ${r.createdAt} (release ${r.version}) into ${r.dataDir}: ${r.secrets} secrets opened with the key ${r.keyId}, ${r.files} files; start the control plane on it`);
    } else {
      if (!config.database.url) {
        const pid = liveProcess(config.dataDir);
        if (pid) throw new BackupError(`the control plane of ${config.dataDir} runs (process ${pid}): stop it, then rotate the key`);
      }
      const db = await openDatabase(config.database.url ?? join(config.dataDir, 'carapace.db'), { poolSize: 2 });
      try {
        const r = await rotateKey(config, db, nowS(systemClock), newKeyFile === undefined ? {} : { newKeyFile });
        say(`re-encrypted ${r.values} secrets under the new key ${r.newKeyId} (${r.newKeyFile}); the old key ${r.oldKeyId} opens nothing of this database any more`);
        if (r.retiredKeyFile) say(`the old key is in ${r.retiredKeyFile}: backups taken before now need it; keep it apart while you keep them, then delete it`);
        else say(`set CARAPACE_SECRETS_KEY to the content of ${r.newKeyFile} before the next start; backups taken before now need the old key`);
      } finally {
        await db.close();
      }
    }
    return 0;
  } catch (err) {
    if (err instanceof BackupError || err instanceof SecretsError) {
      say(`carapace-control-plane ${command}: ${err.message}`);
      return 1;
    }
    say(`carapace-control-plane ${command}: failed: ${(err as Error).message}`);
    return 1;
  }
}

/** `migrate-to URL`: copies the SQLite database into PostgreSQL; 0 done, 1 refused or failed. */
async function migrateTo(from: string, url: string): Promise<number> {
  // The URL carries a password: only its host and database are ever printed.
  let shown = 'the PostgreSQL database';
  try {
    const parsed = new URL(url);
    shown = `${parsed.host}${parsed.pathname}`;
  } catch {
    // not a URL: copyToPostgres says so
  }
  process.stderr.write(`copying ${from} into ${shown}...\n`);
  try {
    const report = await copyToPostgres(from, url, (name, rows) => process.stderr.write(`  ${name}: ${rows} rows\n`));
    const total = report.tables.reduce((n, t) => n + t.rows, 0);
    process.stderr.write(`copied ${total} rows in ${report.tables.length} tables; now start the control plane with CARAPACE_DATABASE_URL set to the URL\n`);
    return 0;
  } catch (e) {
    const message = e instanceof CopyRefused ? e.message : `the copy failed, nothing was committed: ${(e as Error).message}`;
    process.stderr.write(`carapace-control-plane migrate-to: ${message.split(url).join(shown)}\n`);
    return 1;
  }
}
