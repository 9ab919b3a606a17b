import pino, { type Logger } from 'pino';

/** Paths pino masks in every log line: credentials, tokens and keys never reach the log. */
export const REDACT = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
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

/** The service logger: JSON lines on stdout. */
export function createLogger(level: string): Logger {
  return pino({ level, redact: { paths: REDACT, censor: '[redacted]' } });
}
