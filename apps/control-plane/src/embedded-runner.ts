import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { LogFormat } from './logger.js';
import type { RunnerService } from './executions/runner.service.js';

/** The name of the runner the control plane starts itself. */
export const EMBEDDED_RUNNER = 'embedded';

/** Where the `carapace-runner` program of the installed `@carapace/runner` package is, or null. */
export function findRunnerBin(): string | null {
  try {
    const pkg = createRequire(import.meta.url).resolve('@carapace/runner/package.json');
    const bin = join(dirname(pkg), 'bin', 'carapace-runner.js');
    return existsSync(bin) ? bin : null;
  } catch {
    return null;
  }
}

/** What the embedded runner needs besides the configuration. */
export interface EmbeddedRunnerOptions {
  /** The port of the control plane's gRPC server (the runner connects on loopback). */
  readonly grpcPort: number;
  /** The control plane's log format, decided once for the standard output the child shares. */
  readonly logFormat: LogFormat;
  /** The environment the child starts from: the control plane's own. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/**
 * Runs one local runner as a child process (`CARAPACE_RUNNER=embedded`), so that one machine
 * is a complete installation. The two talk only over gRPC on loopback, like any runner; the
 * child gets a fresh token at every start and its SSH key lives in `<dataDir>/runner/`.
 * A crashed runner is restarted with backoff; stop() drains it.
 *
 * The child never outlives the control plane: it runs in its own process group (a terminal's
 * Ctrl-C reaches only the control plane, which drains the runner once, instead of the runner
 * seeing two signals and stopping at once), and it drains and exits when its stdin, a pipe
 * from the control plane, closes, which happens however the control plane ends, SIGKILL
 * included. The control plane builds the runner with itself: the child does not build.
 */
export class EmbeddedRunner {
  private child: ChildProcess | null = null;
  private stopping = false;
  private restarts = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly runners: RunnerService,
    private readonly config: Pick<Config, 'dataDir' | 'logLevel' | 'embeddedRunner'>,
    private readonly options: EmbeddedRunnerOptions,
    private readonly log: Logger,
  ) {}

  async start(): Promise<boolean> {
    const bin = findRunnerBin();
    if (!bin) {
      this.log.error('CARAPACE_RUNNER=embedded but @carapace/runner is not installed beside the control plane: no local runner');
      return false;
    }
    const dir = join(this.config.dataDir, 'runner');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const { token } = await this.runners.rotate(EMBEDDED_RUNNER, { embedded: 'true' });
    const settings = this.config.embeddedRunner;
    const env: NodeJS.ProcessEnv = {
      ...runnerEnvironment(this.options.env),
      CARAPACE_RUNNER_URL: `127.0.0.1:${this.options.grpcPort}`,
      CARAPACE_RUNNER_TOKEN: token,
      CARAPACE_RUNNER_NAME: EMBEDDED_RUNNER,
      CARAPACE_RUNNER_WORK_DIR: dir,
      CARAPACE_RUNNER_SSH_KEY: join(dir, 'id_ed25519'),
      CARAPACE_RUNNER_DRAIN_GRACE_MS: String(settings.drainGraceMs),
      CARAPACE_RUNNER_CANCEL_GRACE_MS: String(settings.cancelGraceMs),
      CARAPACE_RUNNER_LOG_LEVEL: settings.logLevel ?? this.config.logLevel,
      // The child's standard output is the control plane's: the same format, decided by the control plane.
      CARAPACE_RUNNER_LOG_FORMAT: settings.logFormat ?? this.options.logFormat,
      CARAPACE_SKIP_BUILD: '1',
    };
    const child = spawn(process.execPath, [bin, '--exit-with-stdin'], { env, stdio: ['pipe', 'inherit', 'inherit'], detached: true });
    // Never written to: it is the lifeline the child watches.
    child.stdin?.on('error', () => undefined);
    this.child = child;
    const startedAt = Date.now();
    child.on('exit', (code, signal) => {
      this.child = null;
      if (this.stopping) return;
      if (Date.now() - startedAt > 60_000) this.restarts = 0;
      const delayMs = Math.min(30_000, 1000 * 2 ** this.restarts++);
      this.log.error({ code, signal, retryInMs: delayMs }, 'embedded runner exited; restarting it');
      this.timer = setTimeout(() => void this.restart(), delayMs);
      this.timer.unref();
    });
    this.log.info({ pid: child.pid }, 'embedded runner started');
    return true;
  }

  private async restart(): Promise<void> {
    try {
      await this.start();
    } catch (err) {
      this.log.error({ err }, 'embedded runner could not be restarted');
    }
  }

  /** SIGTERM (the runner drains), then SIGKILL after `graceMs`. */
  async stop(graceMs = 8000): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }
}

/**
 * The environment the embedded runner inherits: the control plane's, less its own settings
 * (`CARAPACE_*` but `CARAPACE_RUNNER_*`). The runner reads none of them, and some are
 * secrets (the database URL and its password, the admin and SMTP passwords, the metrics
 * token) that would otherwise reach every Ansible process it starts.
 */
export function runnerEnvironment(env: Readonly<Record<string, string | undefined>>): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([key]) => !key.startsWith('CARAPACE_') || key.startsWith('CARAPACE_RUNNER_')));
}
