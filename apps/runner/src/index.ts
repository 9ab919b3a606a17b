export {
  backoffMs,
  fileRunRecords,
  RunnerAgent,
  type AgentOptions,
  type AgentPorts,
  type OrphanRun,
  type PreflightCheck,
  type PreflightTarget,
  type RunRecords,
  type RunRequest,
} from './agent/index.js';
export { loadRunnerConfig, nameOfToken, parseLabels, RunnerConfigError, RUNNER_ENV_KEYS, type RunnerConfig } from './config.js';
export { Outbox, type OutboxEvent } from './outbox.js';
export { gatherFacts, type GatherFactsOptions, type GatheredFacts, type SshTarget } from './ssh/index.js';
export { ensureKeyPair, main, realPorts } from './main.js';
export { VERSION } from './version.js';
