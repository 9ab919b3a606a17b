// One logger factory and one redaction list for the control plane and the runner.
export { createLogger, REDACT, resolveLogFormat, type LogFormat } from '@carapace/logging';
