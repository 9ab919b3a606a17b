// The runner agent: the stream session to the control plane and the execution runs.
export { NO_TELEMETRY, RunnerAgent } from './runner-agent.js';
export { backoffMs } from './backoff.js';
export { fileRunRecords } from './run-records.js';
export type {
  AgentOptions,
  AgentPorts,
  AgentStatus,
  AgentTelemetry,
  ExecutionAssignment,
  OrphanRun,
  PreflightCheck,
  PreflightTarget,
  RunConfiguration,
  RunRecords,
  RunRequest,
  StatusAnswer,
  StatusOutcome,
  StatusRequest,
} from './agent.types.js';
