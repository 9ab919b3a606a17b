import type { ExecutionData, ExecutionState } from '@carapace/models';
import type { PlaybookConfiguration } from '@carapace/playbooks';
import type { LogChunkInput, StepInput } from '../db/execution-events.repository.js';
import type { Stored } from '../domain/list-types.js';

// The types that the execution engine, its parts (claims, ends, reports) and the gRPC transport
// share: one module that imports none of them, so no part imports another back for a type.

export type { LogChunkInput } from '../db/execution-events.repository.js';

/** An execution handed to a runner, with what it needs to run. */
export interface Assignment {
  readonly execution: Stored<ExecutionData>;
  readonly playbookId: string;
  readonly configuration: PlaybookConfiguration;
  /** Server id by inventory host (the server's IP), to turn step hosts into server ids. */
  readonly serverIds: Readonly<Record<string, string>>;
  /** The recorded SSH host key of each server that has one, by IP: the runner enforces them. */
  readonly hostKeys: Readonly<Record<string, string>>;
  /** A preview: Ansible's check mode with diffs. */
  readonly checkMode: boolean;
  /** The inventory hosts (IPs) to limit the run to; empty: every host. */
  readonly limitHosts: readonly string[];
}

/** A step as a runner reports it: the stored step, with the inventory host it ran on. */
export type StepReport = Omit<StepInput, 'serverId'> & { readonly host: string };

/** What a runner that reconnects must be told about the runs it claims to hold. */
export interface Reconciliation {
  /** Runs it claims that the control plane does not give it: it should drop them. */
  readonly abandoned: string[];
  /** Runs being canceled: it should stop them. */
  readonly cancel: string[];
}

/** How a run ended, as a runner reports it. */
export type Outcome = 'completed' | 'failed' | 'canceled';

/** A run's end to store (`RunEnds.finish`). */
export interface EndReport {
  readonly executionId: string;
  readonly outcome: Outcome;
  readonly reason: string | null;
}

/** A new state of an execution, with what changes with it (`ExecutionEngine.appendMany`). */
export interface StateChange {
  readonly latest: Stored<ExecutionData>;
  readonly to: ExecutionState;
  readonly patch: Partial<ExecutionData>;
}

/** What a runner reported of its runs' progress (`RunReports.record`). */
export interface EventReport {
  readonly steps: readonly { executionId: string; seq: number; report: StepReport }[];
  readonly logs: readonly LogChunkInput[];
}

/** How many of the steps and log chunks reported were new, and the bytes of the new chunks. */
export interface EventCounts {
  readonly steps: number;
  readonly logs: number;
  readonly logBytes: number;
}
