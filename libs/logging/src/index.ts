import pino, { type DestinationStream, type Logger } from 'pino';
import { build as prettyStream } from 'pino-pretty';

/**
 * Paths pino masks in every log line of the control plane and the runner: credentials, tokens
 * and keys never reach the log, whatever its format.
 */
export const REDACT: readonly string[] = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'password',
  'new_password',
  '*.password',
  '*.new_password',
  'token',
  '*.token',
  'privateKey',
  '*.privateKey',
  'secret',
  '*.secret',
];

/** What the redacted values read in the log. */
export const CENSOR = '[redacted]';

/** The settings of the log format: `auto` is `pretty` on a terminal, `json` elsewhere. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;
/** A log format setting (configuration key `logFormat`). */
export type LogFormatSetting = (typeof LOG_FORMATS)[number];
/** The format lines are written in: JSON lines for machines, coloured text for a person. */
export type LogFormat = Exclude<LogFormatSetting, 'auto'>;

/** The format a setting gives on `output`: `auto` is `pretty` only when `output` is a terminal. */
export function resolveLogFormat(setting: LogFormatSetting, output: { isTTY?: boolean }): LogFormat {
  if (setting !== 'auto') return setting;
  return output.isTTY === true ? 'pretty' : 'json';
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** `auto` (the default) decides by whether the destination is a terminal. */
  format?: LogFormatSetting;
  /** Where lines go; standard output by default. */
  destination?: DestinationStream & { isTTY?: boolean };
}

/**
 * The logger of the control plane and the runner: pino with {@link REDACT}, writing JSON lines,
 * or with `pretty` one coloured line per entry (pino-pretty used as a synchronous stream in this
 * thread, not a worker transport, so no line is lost when the process exits).
 */
export function createLogger(level: string, options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? process.stdout;
  const format = resolveLogFormat(options.format ?? 'auto', destination);
  const settings = { level, redact: { paths: [...REDACT], censor: CENSOR } };
  if (format === 'json') return options.destination ? pino(settings, options.destination) : pino(settings);
  const stream = prettyStream({
    destination: options.destination ?? 1,
    sync: true,
    colorize: true,
    singleLine: true,
    ignore: 'pid,hostname',
    translateTime: 'SYS:HH:MM:ss.l',
  });
  return pino(settings, stream);
}
