import type { ServerFacts } from '@carapace/models';
import { makeFacts } from '../../../control-plane/test/fixtures.js';
import type { AgentPorts, PreflightTarget, RunOutcome, RunRequest, RunStep } from '../../src/agent.js';

type Sink = Parameters<AgentPorts['startRun']>[1];

/** Polls `check` until it returns something other than undefined/false; fails after `timeoutMs`. */
export async function eventually<T>(check: () => T | undefined | false | Promise<T | undefined | false>, what: string, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** One run the agent started through the scripted `startRun` port, driven by the test. */
export class ScriptedRun {
  /** Reasons of the cancels the agent relayed, in order. */
  readonly cancels: string[] = [];
  /** All log text the run emitted, in order. */
  text = '';
  private steps = 0;
  private settle: ((outcome: RunOutcome) => void) | null = null;
  readonly result: Promise<RunOutcome>;

  constructor(
    readonly request: RunRequest,
    private readonly sink: Sink,
  ) {
    this.result = new Promise((resolve) => (this.settle = resolve));
  }

  /** The run writes `text` to its log. */
  log(text: string): void {
    this.text += text;
    this.sink.log(text);
  }

  /** The run reports a finished step (host defaults to the first inventory host). */
  step(step: Partial<RunStep> & { name: string }): void {
    this.steps += 1;
    const host = step.host ?? Object.keys(hostvarsOf(this.request))[0] ?? 'localhost';
    this.sink.step({
      host,
      role: step.role ?? 'hello',
      result: step.result ?? 'ok',
      error: step.error ?? {},
      time_started: step.time_started ?? 1_795_000_000 + this.steps * 10,
      time_finished: step.time_finished ?? 1_795_000_000 + this.steps * 10 + 5,
      name: step.name,
    });
  }

  /** The run ends (a completed one may hand files back). */
  finish(outcome: RunOutcome['outcome'] = 'completed', reason: string | null = null, artifacts?: RunOutcome['artifacts']): void {
    this.settle?.({ outcome, reason, ...(artifacts ? { artifacts } : {}) });
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

/**
 * The agent's side effects, scripted: `startRun` hands each run to the test as a
 * `ScriptedRun`, `preflight` answers ok (optionally held until `releasePreflight()`), and
 * `gatherFacts` answers fixed facts or throws for the addresses in `factsFailures`.
 */
export class ScriptedPorts implements AgentPorts {
  readonly runs = new Map<string, ScriptedRun>();
  readonly preflightCalls: PreflightTarget[][] = [];
  readonly factsCalls: PreflightTarget[] = [];
  /** Error message by address: gatherFacts throws it. */
  readonly factsFailures = new Map<string, string>();
  private preflightGate: Promise<void> | null = null;
  private openGate: (() => void) | null = null;

  startRun(request: RunRequest, sink: Sink): { result: Promise<RunOutcome>; cancel(reason?: string): void } {
    const run = new ScriptedRun(request, sink);
    this.runs.set(request.executionId, run);
    return { result: run.result, cancel: (reason) => run.cancels.push(reason ?? '') };
  }

  async preflight(targets: PreflightTarget[]): Promise<{ address: string; ok: boolean; hostKey: string | null; reason: string | null }[]> {
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
    return eventually(() => this.runs.get(executionId), `run of ${executionId} started`, timeoutMs);
  }
}
