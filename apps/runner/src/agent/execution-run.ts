import type { Logger } from 'pino';
import type { RunHandle, RunResult, StepEvent } from '../executor/index.js';
import { StateMachine } from '../state-machine.js';
import type { AgentPorts, PreflightTarget, RunConfiguration } from './agent.types.js';
import { LogChunker, LOG_CHUNK_DEFAULTS } from './log-chunker.js';

/** Where an execution's output goes: steps, and its log cut into chunks. */
export interface ExecutionSink {
  step(event: StepEvent): void;
  log(offset: number, text: string): void;
}

/** What an execution run needs to know beyond its assignment. */
export interface ExecutionRunSettings {
  readonly runnerName: string;
  readonly logChunkChars?: number | undefined;
  readonly logFlushMs?: number | undefined;
}

/** An assignment with a valid configuration. */
export interface RunnableAssignment {
  readonly executionId: string;
  readonly playbookId: string;
  readonly configuration: RunConfiguration;
  readonly addresses: readonly string[];
  readonly hostKeys: Readonly<Record<string, string>>;
  /** A preview: check mode with diffs. */
  readonly checkMode: boolean;
  /** The addresses to limit the run to; empty: every host. */
  readonly limitHosts: readonly string[];
}

type Phase = 'checking' | 'running' | 'ended';

const PHASES: Readonly<Record<Phase, readonly Phase[]>> = {
  // ended straight away: pre-flight failed or the run was canceled during it
  checking: ['running', 'ended'],
  running: ['ended'],
  ended: [],
};

/**
 * One execution on this runner: the SSH pre-flight of its hosts, then the playbook run
 * through the `startRun` port, its log cut into chunks. Reports through an `ExecutionSink`
 * and ends with a `RunResult` (its log flushed before), which never rejects.
 */
export class ExecutionRun {
  readonly result: Promise<RunResult>;
  private readonly phase: StateMachine<Phase>;
  private readonly chunker: LogChunker;
  private handle: RunHandle | null = null;
  private canceled: string | null = null;

  constructor(
    private readonly assignment: RunnableAssignment,
    private readonly ports: Pick<AgentPorts, 'preflight' | 'startRun' | 'records'>,
    private readonly settings: ExecutionRunSettings,
    private readonly sink: ExecutionSink,
    private readonly log: Logger,
  ) {
    const executionId = assignment.executionId;
    this.phase = new StateMachine<Phase>('execution', 'checking', PHASES, log, { executionId });
    this.chunker = new LogChunker(
      settings.logChunkChars ?? LOG_CHUNK_DEFAULTS.chars,
      settings.logFlushMs ?? LOG_CHUNK_DEFAULTS.flushMs,
      (offset, text) => sink.log(offset, text),
    );
    this.result = this.run()
      .catch((err: unknown): RunResult => {
        log.error({ err, executionId }, 'execution crashed in the runner');
        return ended('failed', `runner error: ${(err as Error).message}`);
      })
      .then((result) => {
        this.chunker.flush();
        this.phase.transition('ended');
        return result;
      });
  }

  /** Cancels the run (once): before the playbook starts, it never starts. */
  cancel(reason: string): void {
    if (this.canceled !== null || this.phase.state === 'ended') return;
    this.canceled = reason;
    this.log.info({ executionId: this.assignment.executionId, reason }, 'canceling execution');
    this.handle?.cancel(reason);
  }

  /** Drops the pending log flush (the agent stops). */
  stopTimers(): void {
    this.chunker.cancelTimer();
  }

  // So that a restarted runner can stop what this run left (`RunRecords.recover`); a run
  // goes on without it.
  private recordProcessGroup(pgid: number): void {
    try {
      this.ports.records.recordProcessGroup(this.assignment.executionId, pgid);
    } catch (err) {
      this.log.warn({ err, executionId: this.assignment.executionId, pgid }, 'cannot record the process group of a run');
    }
  }

  private async run(): Promise<RunResult> {
    const { executionId, playbookId, configuration } = this.assignment;
    const hostvars = hostVars(configuration.inventory);
    const { checkMode, limitHosts } = this.assignment;
    // A run limited to some hosts (a relaunch of failed hosts) checks only those.
    const addresses = limitHosts.length > 0 ? this.assignment.addresses.filter((a) => limitHosts.includes(a)) : this.assignment.addresses;
    const targets: PreflightTarget[] = addresses.map((address) => ({
      address,
      username: userOf(hostvars[address]),
      expectedHostKey: this.assignment.hostKeys[address] ?? null,
    }));
    this.chunker.append(`Carapace runner ${this.settings.runnerName}: pre-flight SSH check of ${targets.length} host(s)\n`);
    const checks = await this.ports.preflight(targets);
    for (const c of checks) this.chunker.append(`  ${c.address}: ${c.ok ? 'ok' : (c.reason ?? 'failed')}\n`);
    if (this.canceled !== null) return ended('canceled', this.canceled);
    const failed = checks.filter((c) => !c.ok);
    // Each host that failed the check is an unreachable step, to show which. The run ends
    // before Ansible on every host: the control plane knows it by the reason ("pre-flight
    // failed: ..."), and a relaunch of its failed hosts runs on all of them.
    const now = Date.now() / 1000;
    for (const c of failed) {
      const why = c.reason ?? 'pre-flight SSH check failed';
      this.chunker.flush();
      this.sink.step({
        host: c.address,
        address: c.address,
        role: '',
        name: 'pre-flight SSH check',
        result: 'unreachable',
        changed: false,
        ignored: false,
        error: { msg: why, unreachable: true },
        time_started: now,
        time_finished: now,
        ...(checkMode ? { preview: { status: 'would_fail' as const, why: `unreachable: ${why}` } } : {}),
      });
    }
    if (failed.length) return ended('failed', `pre-flight failed: ${failed.map((c) => c.reason ?? c.address).join('; ')}`);

    const records = this.ports.records;
    const knownHostsFile = records.writeKnownHosts(executionId, checks.map((c) => `${c.address} ${c.hostKey ?? ''}\n`).join(''));
    this.chunker.append('\n');
    this.phase.transition('running');
    const handle = this.ports.startRun(
      { executionId, playbookId, configuration, knownHostsFile, workRoot: records.workRoot, checkMode, limit: limitHosts },
      {
        step: (event) => {
          // the log written before a step is stored before it
          this.chunker.flush();
          this.sink.step(event);
        },
        log: (text) => this.chunker.append(text),
        started: (pgid) => this.recordProcessGroup(pgid),
      },
    );
    this.handle = handle;
    if (this.canceled !== null) handle.cancel(this.canceled);
    const result = await handle.result;
    records.forget(executionId);
    return this.canceled !== null && result.outcome !== 'completed' ? { ...result, outcome: 'canceled', reason: this.canceled } : result;
  }
}

/** The end of a run that did not get to start ansible-playbook. */
export function ended(outcome: RunResult['outcome'], reason: string): RunResult {
  return { outcome, exitCode: null, signal: null, reason };
}

function hostVars(inventory: Record<string, unknown>): Record<string, Record<string, unknown> | undefined> {
  const meta = inventory._meta;
  if (typeof meta !== 'object' || meta === null) return {};
  const hv = (meta as Record<string, unknown>).hostvars;
  return typeof hv === 'object' && hv !== null ? (hv as Record<string, Record<string, unknown> | undefined>) : {};
}

function userOf(vars: Record<string, unknown> | undefined): string {
  const user = vars?.ansible_user;
  return typeof user === 'string' && user ? user : 'root';
}
