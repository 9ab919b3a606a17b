export { RunnerAgent, backoffMs, type AgentOptions, type AgentPorts, type RunControl, type RunOutcome, type RunRequest, type RunStep, type PreflightTarget } from './agent.js';
export { loadRunnerConfig, nameOfToken, parseLabels, RunnerConfigError, RUNNER_ENV_KEYS, type RunnerConfig } from './config.js';
export { Outbox, type OutboxEvent } from './outbox.js';
export { ensureKeyPair, main, realPorts } from './main.js';
export { VERSION } from './version.js';
