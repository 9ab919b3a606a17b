// The domain side of the agent: what its ports do and what the stream layer hands it. No
// protocol shapes here: the wire (proto messages, `*_json` fields) stays in wire-codec.ts.
import type { grpc } from '@carapace/protocol';
import type { AnsibleRunSpec, RunArtifact, RunHandle, RunOutcome, RunSink, StepEvent } from '../executor/index.js';

/** The inventory and variables of a configuration version. */
export type RunConfiguration = AnsibleRunSpec['configuration'];

/** What a run needs from the agent; the port adds the runner's own settings (key, executable). */
export interface RunRequest {
  readonly executionId: string;
  readonly playbookId: string;
  readonly configuration: RunConfiguration;
  /** known_hosts lines of every host, as the pre-flight saw them. */
  readonly knownHostsFile: string;
  readonly workRoot: string;
  /** A preview: check mode with diffs. */
  readonly checkMode?: boolean;
  /** Inventory hosts to limit the run to; empty: every host. */
  readonly limit?: readonly string[];
}

/** A host to check before a run, or to gather the facts of. */
export interface PreflightTarget {
  address: string;
  username: string;
  expectedHostKey: string | null;
}

/** The pre-flight answer for one host. */
export interface PreflightCheck {
  address: string;
  ok: boolean;
  hostKey: string | null;
  reason: string | null;
}

/** A process group a previous runner process left behind, killed at start. */
export interface OrphanRun {
  readonly executionId: string;
  readonly pgid: number;
}

/**
 * What the agent keeps on disk about its runs (HOUSE-STYLE 5): the known_hosts the pre-flight
 * saw and the process group of each run, so that a restarted runner can stop its orphans.
 */
export interface RunRecords {
  /** The directory the runs' work dirs are created in. */
  readonly workRoot: string;
  /** Creates `workRoot`; kills the runs a previous runner process left running and forgets them all. */
  recover(): OrphanRun[];
  /** Writes the known_hosts lines of a run; returns the file. */
  writeKnownHosts(executionId: string, lines: string): string;
  recordProcessGroup(executionId: string, pgid: number): void;
  /** Removes what was recorded of a run. */
  forget(executionId: string): void;
}

/** The side effects of the agent (HOUSE-STYLE 5): Ansible runs, SSH, and its run records. */
export interface AgentPorts {
  startRun(request: RunRequest, sink: RunSink): RunHandle;
  preflight(targets: PreflightTarget[]): Promise<PreflightCheck[]>;
  gatherFacts(target: PreflightTarget): Promise<{ facts: unknown; hostKey: string }>;
  /** Runs the `ceph` commands of a status collection on the first monitor host that answers. */
  collectStatus(request: StatusRequest): Promise<StatusOutcome>;
  readonly records: RunRecords;
}

/** Settings of the agent. */
export interface AgentOptions {
  /**
   * gRPC addresses of the control plane's replicas (one or more). The agent keeps one stream
   * to one of them and moves to the next, round robin, when that stream fails.
   */
  readonly controlPlanes: readonly string[];
  readonly credentials: grpc.ChannelCredentials;
  readonly token: string;
  readonly name: string;
  readonly version: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly slots: number;
  readonly sshPublicKey: string;
  /** Holds the outbox's spill files. */
  readonly workDir: string;
  readonly drainGraceMs: number;
  readonly reconnect: { readonly initialDelayMs: number; readonly maxDelayMs: number };
  readonly outboxMemoryBytes: number;
  /** Log text is sent in chunks of at most this many characters, at least every `logFlushMs`. */
  readonly logChunkChars?: number;
  readonly logFlushMs?: number;
}

/**
 * What the agent reports as it goes, for its metrics (`RunnerMetrics`). Calls are cheap and
 * synchronous; an observer must not throw.
 */
export interface AgentTelemetry {
  /** A stream to `address` was welcomed; `reconnect` when it is not the agent's first. */
  connected(address: string, reconnect: boolean): void;
  /** A stream to `address` was lost, or could not be opened. */
  streamFailed(address: string): void;
  /** Unacknowledged events sent again after a (re)connect. */
  resent(count: number): void;
  /** An execution was assigned to this runner. */
  runStarted(): void;
  /** An execution of this runner ended: its result is in the outbox. */
  runFinished(outcome: RunOutcome): void;
}

/** The agent at a glance, read when metrics are scraped. */
export interface AgentStatus {
  readonly slots: number;
  /** Executions under way. */
  readonly busySlots: number;
  readonly draining: boolean;
  /** The address the stream is connected to (welcomed), or null. */
  readonly controlPlane: string | null;
  /** Events not yet acknowledged, in memory and spilled to disk. */
  readonly outboxEvents: number;
  /** Bytes of the unacknowledged events kept in memory. */
  readonly outboxMemoryBytes: number;
}

/** An execution the control plane assigned, decoded. */
export interface ExecutionAssignment {
  readonly executionId: string;
  readonly playbookId: string;
  /** null when what the control plane sent is not a valid configuration. */
  readonly configuration: RunConfiguration | null;
  /** The address of every server of the execution. */
  readonly addresses: readonly string[];
  /** The host key recorded at facts time, by address. */
  readonly hostKeys: Readonly<Record<string, string>>;
  /** A preview: Ansible's check mode with diffs (`Assignment.check_mode`). */
  readonly checkMode: boolean;
  /** The addresses to limit the run to (`--limit`); empty: every host. */
  readonly limitHosts: readonly string[];
}

/** A request to gather the facts of a server. */
export interface FactsRequest {
  readonly requestId: string;
  readonly serverId: string;
  readonly target: PreflightTarget;
}

/** The answer to a `FactsRequest`. */
export type FactsAnswer = { readonly requestId: string; readonly serverId: string } & (
  | { readonly ok: true; readonly facts: unknown; readonly hostKey: string }
  | { readonly ok: false; readonly error: string }
);

/** A request to collect what Ceph says of a cluster. */
export interface StatusRequest {
  readonly requestId: string;
  readonly clusterId: string;
  /** The monitor hosts, tried in this order. */
  readonly monitors: readonly PreflightTarget[];
  readonly cephCluster: string;
  readonly connectTimeoutS: number;
}

/** What a status collection got: the JSON text of each `ceph` command, or why no monitor answered. */
export type StatusOutcome = { readonly monitor: string; readonly durationMs: number } & (
  | { readonly ok: true; readonly outputs: Readonly<Record<'status' | 'df' | 'osd_tree' | 'osd_dump' | 'mon_dump' | 'mgr_dump', string>> }
  | { readonly ok: false; readonly error: string }
);

/** The answer to a `StatusRequest`. */
export type StatusAnswer = { readonly requestId: string; readonly clusterId: string } & StatusOutcome;

/** What the control plane asks of the agent, decoded (acks and the welcome stay in the session). */
export type ControlCommand =
  | { readonly kind: 'assignment'; readonly assignment: ExecutionAssignment }
  | { readonly kind: 'cancel'; readonly executionId: string; readonly reason: string }
  | { readonly kind: 'drain'; readonly reason: string }
  | { readonly kind: 'gather_facts'; readonly request: FactsRequest }
  | { readonly kind: 'collect_status'; readonly request: StatusRequest };

/** A numbered event of an execution, before it is numbered and encoded. */
export type ExecutionEvent =
  | { readonly kind: 'step'; readonly step: StepEvent }
  | { readonly kind: 'log'; readonly offset: number; readonly text: string }
  | { readonly kind: 'artifact'; readonly artifact: RunArtifact }
  | { readonly kind: 'result'; readonly outcome: RunOutcome; readonly reason: string | null };
