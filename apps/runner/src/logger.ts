import type { Logger } from 'pino';
import { createLogger, type LoggerOptions } from '@carapace/logging';
import type { RunnerConfig } from './config.js';

/** The runner's logger: the shared factory (and so the control plane's redaction list), named by the runner. */
export function createRunnerLogger(config: Pick<RunnerConfig, 'logLevel' | 'logFormat'> & { name: string }, destination?: LoggerOptions['destination']): Logger {
  return createLogger(config.logLevel, { format: config.logFormat, ...(destination ? { destination } : {}) }).child({ runner: config.name });
}
