export {
  backoffMs,
  fileRunRecords,
  RunnerAgent,
  type AgentOptions,
  type AgentPorts,
  type AgentStatus,
  type AgentTelemetry,
  type OrphanRun,
  type PreflightCheck,
  type PreflightTarget,
  type RunRecords,
  type RunRequest,
  type StatusOutcome,
  type StatusRequest,
} from './agent/index.js';
export {
  loadRunnerConfig,
  nameOfToken,
  parseControlPlanes,
  parseLabels,
  parseListenAddress,
  RunnerConfigError,
  RUNNER_ENV_KEYS,
  type ListenAddress,
  type RunnerConfig,
} from './config.js';
export { METRICS_PATH, RunnerMetrics, startMetricsServer, type MetricsServer, type RunnerMetricsOptions } from './metrics/index.js';
export { Outbox, type OutboxEvent } from './outbox.js';
export {
  collectStatus,
  gatherFacts,
  type CollectStatusOptions,
  type CollectedStatus,
  type GatherFactsOptions,
  type GatheredFacts,
  type SshTarget,
} from './ssh/index.js';
export { ensureKeyPair, type RunnerKey } from './key-file.js';
export { enroll, type EnrollIo } from './enroll.js';
export { main, realPorts } from './main.js';
export { startRunner, type RunnerDeps, type StartedRunner } from './start-runner.js';
export { VERSION } from './version.js';
