import type { ServerFacts } from '@carapace/models';
import { makeFacts } from '@carapace/test-support/facts';
import type { AgentPorts, OrphanRun, PreflightCheck, PreflightTarget, RunRecords, RunRequest, StatusOutcome, StatusRequest } from '../../src/agent/index.js';
import type { RunArtifact, RunHandle, RunOutcome, RunResult, RunSink, StepEvent } from '../../src/executor/index.js';
import { eventually } from '@carapace/test-support/eventually';

/** One run the agent started through the scripted `startRun` port, driven by the test. */
export class ScriptedRun {
  /** Reasons of the cancels the agent relayed, in order. */
  readonly cancels: string[] = [];
  /** All log text the run emitted, in order. */
  text = '';
  private steps = 0;
  private settle: ((result: RunResult) => void) | null = null;
  readonly result: Promise<RunResult>;

  constructor(
    readonly request: RunRequest,
    private readonly sink: RunSink,
  ) {
    this.result = new Promise((resolve) => (this.settle = resolve));
  }

  /** The run writes `text` to its log. */
  log(text: string): void {
    this.text += text;
    this.sink.log(text);
  }

  /** ansible-playbook started in process group `pgid`. */
  started(pgid: number): void {
    this.sink.started?.(pgid);
  }

  /** The run reports a finished step (host defaults to the first inventory host). */
  step(step: Partial<StepEvent> & { name: string }): void {
    this.steps += 1;
    const host = step.host ?? Object.keys(hostvarsOf(this.request))[0] ?? 'localhost';
    this.sink.step({
      host,
      address: step.address ?? host,
      changed: step.changed ?? false,
      ignored: step.ignored ?? false,
      role: step.role ?? 'hello',
      result: step.result ?? 'ok',
      error: step.error ?? {},
      time_started: step.time_started ?? 1_795_000_000 + this.steps * 10,
      time_finished: step.time_finished ?? 1_795_000_000 + this.steps * 10 + 5,
      name: step.name,
    });
  }

  /** The run ends (a completed one may hand files back). */
  finish(outcome: RunOutcome = 'completed', reason: string | null = null, artifacts?: readonly RunArtifact[]): void {
    this.settle?.({ outcome, exitCode: null, signal: null, reason, ...(artifacts ? { artifacts } : {}) });
    this.settle = null;
  }
}

function hostvarsOf(request: RunRequest): Record<string, unknown> {
  const meta = request.configuration.inventory._meta as { hostvars?: Record<string, unknown> } | undefined;
  return meta?.hostvars ?? {};
}

export const HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGathered0123456789abcdefghijklmnopqrstu';

/** Realistic facts of a Debian 12 host (the control plane's test fixture), named after its address. */
export function hostFacts(address: string): ServerFacts {
  return makeFacts(`ceph-node-${address.split('.').at(-1) ?? '0'}`, address);
}

/** Run records in memory: what the agent wrote of each run, and the orphans `recover()` reports. */
export class MemoryRunRecords implements RunRecords {
  readonly workRoot = '/nonexistent/carapace-runner-test/executions';
  readonly knownHosts = new Map<string, string>();
  readonly processGroups = new Map<string, number>();
  /** What the next `recover()` reports as killed. */
  orphans: OrphanRun[] = [];
  recovered = 0;

  recover(): OrphanRun[] {
    this.recovered += 1;
    return this.orphans.splice(0);
  }

  writeKnownHosts(executionId: string, lines: string): string {
    this.knownHosts.set(executionId, lines);
    return `${this.workRoot}/${executionId}.known_hosts`;
  }

  recordProcessGroup(executionId: string, pgid: number): void {
    this.processGroups.set(executionId, pgid);
  }

  forget(executionId: string): void {
    this.knownHosts.delete(executionId);
    this.processGroups.delete(executionId);
  }
}

/**
 * The agent's side effects, scripted: `startRun` hands each run to the test as a
 * `ScriptedRun`, `preflight` answers ok (optionally held until `releasePreflight()`),
 * `gatherFacts` answers fixed facts or throws for the addresses in `factsFailures`, and the
 * run records stay in memory.
 */
export class ScriptedPorts implements AgentPorts {
  readonly runs = new Map<string, ScriptedRun>();
  readonly preflightCalls: PreflightTarget[][] = [];
  readonly factsCalls: PreflightTarget[] = [];
  /** Error message by address: gatherFacts throws it. */
  readonly factsFailures = new Map<string, string>();
  readonly records = new MemoryRunRecords();
  private preflightGate: Promise<void> | null = null;
  private openGate: (() => void) | null = null;

  startRun(request: RunRequest, sink: RunSink): RunHandle {
    const run = new ScriptedRun(request, sink);
    this.runs.set(request.executionId, run);
    return { result: run.result, cancel: (reason) => run.cancels.push(reason ?? ''), pid: undefined };
  }

  async preflight(targets: PreflightTarget[]): Promise<PreflightCheck[]> {
    this.preflightCalls.push(targets);
    if (this.preflightGate) await this.preflightGate;
    return targets.map((t) => ({ address: t.address, ok: true, hostKey: t.expectedHostKey ?? HOST_KEY, reason: null }));
  }

  async gatherFacts(target: PreflightTarget): Promise<{ facts: unknown; hostKey: string }> {
    this.factsCalls.push(target);
    const failure = this.factsFailures.get(target.address);
    if (failure) throw new Error(failure);
    return { facts: hostFacts(target.address), hostKey: HOST_KEY };
  }

  /** Status collections asked for; each answers that no monitor answered. */
  readonly statusCalls: StatusRequest[] = [];

  async collectStatus(request: StatusRequest): Promise<StatusOutcome> {
    this.statusCalls.push(request);
    return { ok: false, error: 'scripted: no monitor answers', monitor: request.monitors.at(-1)?.address ?? '', durationMs: 0 };
  }

  /** Pre-flight checks wait from now on until `releasePreflight()`. */
  holdPreflight(): void {
    this.preflightGate = new Promise((resolve) => (this.openGate = resolve));
  }

  releasePreflight(): void {
    this.openGate?.();
    this.preflightGate = null;
  }

  /** The run of `executionId`, once the agent has started it. */
  async run(executionId: string, timeoutMs = 5000): Promise<ScriptedRun> {
    return eventually(`run of ${executionId} started`, () => this.runs.get(executionId), timeoutMs);
  }
}
