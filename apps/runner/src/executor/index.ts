// The runner's Ansible executor: one ansible-playbook run per execution.
export { CALLBACK_PLUGIN_DIR, DEFAULT_GRACE_MS, startAnsibleRun } from './ansible.executor.js';
export { parseEventLine, StepEventSchema, StepResultSchema, type StepEvent, type StepResult } from './events.schema.js';
export type { AnsibleRunOptions, AnsibleRunSpec, RunHandle, RunOutcome, RunResult, RunSink } from './executor.types.js';
export { collectArtifacts, type CollectedArtifacts, type RunArtifact } from './artifacts.js';
