// Runs ansible-playbook for one execution: work dir, process group, live log and steps,
// cancel with escalating signals, and a result that never comes before the last byte.
import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { ansibleContentDir, CLEANUP_ENTRY_POINT, PLAYBOOK_ENTRY_POINT, SHARED_ANSIBLE_CONTENT } from '@carapace/playbooks';
import { assertNever } from '../state-machine.js';
import { collectArtifacts } from './artifacts.js';
import type { AnsibleRunOptions, AnsibleRunSpec, RunHandle, RunResult, RunSink } from './executor.types.js';
import { groupExists, signalGroup, waitForGroupExit } from './process-group.js';
import { RunOutput } from './run-output.js';
import { closeSshMasters } from './ssh-masters.js';
import { prepareWorkDir, removeWorkDir, type WorkDir } from './work-dir.js';

/** The grace periods of a cancel when none are given: SIGINT → SIGTERM → SIGKILL. */
export const DEFAULT_GRACE_MS = { interrupt: 10_000, terminate: 10_000 } as const;

/** The carapace callback plugin shipped with the runner (`apps/runner/ansible/callback_plugins`). */
// src/executor/ and dist/executor/ are both two levels below the package root.
export const CALLBACK_PLUGIN_DIR = fileURLToPath(new URL('../../ansible/callback_plugins', import.meta.url));

const DEFAULT_MAX_FORKS = 20;
// The clean-up playbook of a run that failed or was canceled: bounded, then killed.
const CLEANUP_TIMEOUT_MS = 300_000;
// After SIGKILL the kernel needs moments, unless a process is stuck in the kernel (D state).
const KILL_WAIT_MS = 10_000;
// Once the group is gone, its pipes close at once unless a process outside it holds them.
const PIPE_CLOSE_WAIT_MS = 5_000;
const NOTE_PREFIX = '[carapace runner]';

/**
 * Starts `ansible-playbook` for one execution and returns at once.
 *
 * It creates the private work dir `<workRoot>/<executionId>` (mode 0700) with the
 * inventory, `vars.json` (`global_vars`, passed as `-e @vars.json`), an `ansible.cfg` and a
 * known_hosts of its own, then runs `ansible-playbook` there in a process group of its own,
 * with the carapace callback plugin writing steps to file descriptor 3. Log text and steps
 * reach `sink` as they come. The work dir is removed at the end unless `keepWorkDir`.
 *
 * Every string of the configuration's variables reaches Ansible marked unsafe (never
 * templated), and a configuration setting a connection variable that would act on the
 * runner itself (`ansible_connection: local`, ssh options or executables, another key, no
 * host key check) is refused before anything is created (see `inventory-vars.ts`).
 *
 * Never throws: whatever keeps the run from starting (unknown playbook, unwritable work
 * root, ansible-playbook missing, a refused configuration) ends it `failed` with the reason.
 */
export function startAnsibleRun(spec: AnsibleRunSpec, sink: RunSink, options: AnsibleRunOptions = {}): RunHandle {
  return new AnsibleRun(spec, sink, options);
}

type RunState = 'preparing' | 'running' | 'stopping' | 'reaping' | 'finished';

const TRANSITIONS: Readonly<Record<RunState, readonly RunState[]>> = {
  // finished straight away: it could not start, or was canceled first
  preparing: ['running', 'finished'],
  // finished straight away: the spawn failed
  running: ['stopping', 'reaping', 'finished'],
  stopping: ['reaping'],
  reaping: ['finished'],
  finished: [],
};

type Exit = { readonly code: number | null; readonly signal: NodeJS.Signals | null } | { readonly error: Error };

class AnsibleRun implements RunHandle {
  readonly result: Promise<RunResult>;
  private state: RunState = 'preparing';
  private child: ChildProcess | undefined;
  private cancelReason: string | null = null;
  private escalation: NodeJS.Timeout | undefined;
  private killSentAt: number | null = null;
  private readonly output: RunOutput;
  private readonly graceMs: { readonly interrupt: number; readonly terminate: number };

  constructor(
    private readonly spec: AnsibleRunSpec,
    private readonly sink: RunSink,
    private readonly options: AnsibleRunOptions,
  ) {
    this.graceMs = {
      interrupt: options.graceMs?.interrupt ?? DEFAULT_GRACE_MS.interrupt,
      terminate: options.graceMs?.terminate ?? DEFAULT_GRACE_MS.terminate,
    };
    this.output = new RunOutput(sink, (text) => this.note(text));
    this.result = this.run();
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  cancel(reason?: string): void {
    const why = reason ?? 'canceled';
    switch (this.state) {
      case 'preparing':
        // run() checks this before it spawns
        this.cancelReason ??= why;
        return;
      case 'running': {
        const pgid = this.child?.pid;
        if (pgid === undefined) return;
        this.cancelReason = why;
        this.transition('stopping');
        this.note(`cancel requested (${why}): SIGINT sent to ansible-playbook`);
        this.escalate(pgid);
        return;
      }
      case 'stopping':
      case 'reaping':
      case 'finished':
        return;
      default:
        assertNever(this.state);
    }
  }

  private transition(to: RunState): void {
    if (!TRANSITIONS[this.state].includes(to)) {
      throw new Error(`ansible run ${this.spec.executionId}: illegal transition ${this.state} → ${to}`);
    }
    this.state = to;
  }

  private async run(): Promise<RunResult> {
    let workDir: WorkDir | undefined;
    try {
      let playbook: string;
      let contentDir: string;
      try {
        contentDir = resolve(this.options.contentDir ?? ansibleContentDir(this.spec.playbookId));
        playbook = join(contentDir, PLAYBOOK_ENTRY_POINT);
        workDir = await prepareWorkDir({
          workRoot: this.spec.workRoot,
          executionId: this.spec.executionId,
          globalVars: this.spec.configuration.global_vars,
          inventory: this.spec.configuration.inventory,
          knownHostsFile: this.spec.knownHostsFile,
          callbackPluginDir: this.options.callbackPluginDir ?? CALLBACK_PLUGIN_DIR,
          shared: SHARED_ANSIBLE_CONTENT,
          maxForks: this.options.maxForks ?? DEFAULT_MAX_FORKS,
          policy: { allowLocalConnection: this.spec.allowLocalConnection === true },
        });
      } catch (err) {
        return this.finish('failed', null, null, `cannot prepare the run: ${errorMessage(err)}`);
      }
      if (this.cancelReason !== null) return this.finish('canceled', null, null, this.cancelReason);
      const result = await this.execute(workDir, playbook);
      // A preview set nothing to clean up, and hands back no files.
      if (this.spec.checkMode === true) return result;
      if (result.outcome !== 'completed') {
        await this.cleanUp(workDir, join(contentDir, CLEANUP_ENTRY_POINT), result.outcome);
        return result;
      }
      const collected = await collectArtifacts(workDir.artifactsDir);
      if ('problem' in collected) {
        this.note(`the files the run left for the control plane are refused: ${collected.problem}`);
        return { ...result, outcome: 'failed', reason: `the files the run left for the control plane are refused: ${collected.problem}` };
      }
      return collected.artifacts.length > 0 ? { ...result, artifacts: collected.artifacts } : result;
    } catch (err) {
      // a bug here must neither leave processes behind nor reject the result
      const pgid = this.child?.pid;
      if (pgid !== undefined) this.signal(pgid, 'SIGKILL');
      this.state = 'finished';
      return { outcome: 'failed', exitCode: null, signal: null, reason: `internal error of the runner: ${errorMessage(err)}` };
    } finally {
      clearTimeout(this.escalation);
      if (workDir) {
        await closeSshMasters(workDir.controlDir);
        if (!this.options.keepWorkDir) await removeWorkDir(workDir).catch(() => undefined);
      }
    }
  }

  private async execute(workDir: WorkDir, playbook: string): Promise<RunResult> {
    const executable = this.spec.ansiblePlaybookPath ?? 'ansible-playbook';
    let child: ChildProcess;
    try {
      child = this.spawnPlaybook(workDir, playbook);
    } catch (err) {
      return this.finish('failed', null, null, `cannot start ${executable}: ${errorMessage(err)}`);
    }
    this.child = child;
    const { exited, closed, flushers } = this.follow(child);
    this.transition('running');
    if (child.pid !== undefined) this.sink.started?.(child.pid);

    const exit = await exited;
    if ('error' in exit) {
      for (const stream of child.stdio) stream?.destroy();
      this.transition('finished');
      return { outcome: 'failed', exitCode: null, signal: null, reason: spawnFailure(executable, exit.error) };
    }
    this.transition('reaping');
    const pgid = child.pid;
    if (pgid !== undefined) await this.reap(pgid);
    const drained = await Promise.race([closed.then(() => true), sleep(PIPE_CLOSE_WAIT_MS, false)]);
    if (!drained) {
      for (const stream of child.stdio) stream?.destroy();
      this.note(`the output pipes stayed open ${PIPE_CLOSE_WAIT_MS / 1000} s after the end of ansible-playbook; closed them`);
    }
    for (const flush of flushers) flush();
    return this.conclude(exit.code, exit.signal);
  }

  private spawnPlaybook(workDir: WorkDir, playbook: string): ChildProcess {
    const executable = this.spec.ansiblePlaybookPath ?? 'ansible-playbook';
    // runner-vars.json after vars.json: the runner's own variables win over the configuration's
    const args = ['-i', 'inventory.sh', '-e', '@vars.json', '-e', '@runner-vars.json', '--private-key', this.spec.privateKeyPath];
    if (this.spec.checkMode === true) args.push('--check', '--diff');
    if (this.spec.limit && this.spec.limit.length > 0) args.push('--limit', this.spec.limit.join(','));
    args.push(playbook);
    return spawn(executable, args, {
      cwd: workDir.dir,
      env: this.environment(workDir),
      // its own process group, so that a cancel reaches every worker and task
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
  }

  /** The end of a spawned ansible-playbook, the close of its pipes, and its output followed (log and steps). */
  private follow(child: ChildProcess): { exited: Promise<Exit>; closed: Promise<void>; flushers: (() => void)[] } {
    const exited = new Promise<Exit>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      // after a successful spawn, 'error' only reports failed kill() calls, which we do not make
      child.on('error', (error) => {
        if (child.pid === undefined) resolve({ error });
      });
    });
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const events = child.stdio[3];
    const flushers = [
      this.output.pipeLog(child.stdout),
      this.output.pipeLog(child.stderr),
      this.output.pipeEvents(events instanceof Readable ? events : null),
    ];
    return { exited, closed, flushers };
  }

  /**
   * A run that failed or was canceled may leave the cluster in a state of its own making (a
   * flag set for a restart): the playbook's clean-up entry point, when it has one, undoes it.
   * Its log and steps follow the run's; it cannot be canceled, and is killed after
   * CLEANUP_TIMEOUT_MS. The run's outcome stays what it was.
   */
  private async cleanUp(workDir: WorkDir, playbook: string, outcome: RunResult['outcome']): Promise<void> {
    if (!existsSync(playbook)) return;
    this.note(`the run ${outcome === 'canceled' ? 'was canceled' : 'failed'}: ${CLEANUP_ENTRY_POINT} undoes what it must not leave behind`);
    let child: ChildProcess;
    try {
      child = this.spawnPlaybook(workDir, playbook);
    } catch (err) {
      this.note(`cannot start ${CLEANUP_ENTRY_POINT}: ${errorMessage(err)}`);
      return;
    }
    const { exited, closed, flushers } = this.follow(child);
    const pgid = child.pid;
    let killedAt: number | null = null;
    const deadline = setTimeout(() => {
      if (pgid === undefined) return;
      this.note(`${CLEANUP_ENTRY_POINT} still running after ${seconds(CLEANUP_TIMEOUT_MS)}: SIGKILL sent`);
      killedAt = Date.now();
      this.signal(pgid, 'SIGKILL');
    }, CLEANUP_TIMEOUT_MS);
    const exit = await exited;
    clearTimeout(deadline);
    if (pgid !== undefined) {
      if (groupExists(pgid)) {
        killedAt ??= Date.now();
        this.signal(pgid, 'SIGKILL');
      }
      await waitForGroupExit(pgid, () => killedAt !== null && Date.now() - killedAt > KILL_WAIT_MS);
    }
    if (!(await Promise.race([closed.then(() => true), sleep(PIPE_CLOSE_WAIT_MS, false)]))) for (const stream of child.stdio) stream?.destroy();
    for (const flush of flushers) flush();
    this.note(
      'error' in exit
        ? `${CLEANUP_ENTRY_POINT} could not start: ${exit.error.message}`
        : exit.code === 0
          ? `${CLEANUP_ENTRY_POINT} completed`
          : `${CLEANUP_ENTRY_POINT} failed (exit ${exit.code ?? exit.signal ?? '?'})`,
    );
  }

  // Nothing of the group may outlive the run: a canceled run keeps its escalation going;
  // processes left behind by a run that ended on its own are killed.
  private async reap(pgid: number): Promise<void> {
    if (groupExists(pgid) && this.cancelReason === null) {
      this.note('ansible-playbook ended but left processes behind in its group: SIGKILL sent to them');
      this.kill(pgid);
    }
    const gone = await waitForGroupExit(pgid, () => this.killSentAt !== null && Date.now() - this.killSentAt > KILL_WAIT_MS);
    clearTimeout(this.escalation);
    if (!gone) this.note(`processes of group ${pgid} were still there ${KILL_WAIT_MS / 1000} s after SIGKILL`);
  }

  private escalate(pgid: number): void {
    this.signal(pgid, 'SIGINT');
    this.escalation = setTimeout(() => {
      if (!this.signal(pgid, 'SIGTERM')) return;
      this.note(`still running ${seconds(this.graceMs.interrupt)} after SIGINT: SIGTERM sent`);
      this.escalation = setTimeout(() => {
        if (!groupExists(pgid)) return;
        this.note(`still running ${seconds(this.graceMs.terminate)} after SIGTERM: SIGKILL sent`);
        this.kill(pgid);
      }, this.graceMs.terminate);
    }, this.graceMs.interrupt);
  }

  private kill(pgid: number): void {
    this.killSentAt = Date.now();
    this.signal(pgid, 'SIGKILL');
  }

  // False when the group is gone (or cannot be signalled, which is noted).
  private signal(pgid: number, signal: NodeJS.Signals): boolean {
    try {
      return signalGroup(pgid, signal);
    } catch (err) {
      this.note(`cannot send ${signal} to process group ${pgid}: ${errorMessage(err)}`);
      return false;
    }
  }

  private conclude(code: number | null, signal: NodeJS.Signals | null): RunResult {
    if (code === 0) return this.finish('completed', code, signal, null);
    if (this.cancelReason !== null) return this.finish('canceled', code, signal, this.cancelReason);
    if (code === null) return this.finish('failed', code, signal, `ansible-playbook was killed by ${signal ?? 'a signal'}`);
    const detail = this.output.failureDetail(code);
    return this.finish('failed', code, signal, `ansible-playbook exited with ${code}: ${detail}`);
  }

  private finish(outcome: RunResult['outcome'], exitCode: number | null, signal: string | null, reason: string | null): RunResult {
    this.transition('finished');
    return { outcome, exitCode, signal, reason };
  }

  private environment(workDir: WorkDir): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(this.options.baseEnv ?? process.env)) {
      if (value !== undefined && !key.startsWith('ANSIBLE_') && !key.startsWith('CARAPACE_EVENTS_')) env[key] = value;
    }
    return {
      ...env,
      ANSIBLE_CONFIG: workDir.ansibleCfg,
      CARAPACE_EVENTS_FD: '3',
      PYTHONUNBUFFERED: '1',
      // no __pycache__ next to the callback plugin, which may be read-only
      PYTHONDONTWRITEBYTECODE: '1',
      ...this.spec.extraEnv,
    };
  }

  private note(text: string): void {
    this.sink.log(`${NOTE_PREFIX} ${text}\n`);
  }
}

function spawnFailure(executable: string, error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return `ansible-playbook not found: ${executable} does not exist or is not on PATH`;
  if (code === 'EACCES') return `ansible-playbook cannot be run: ${executable} is not executable`;
  return `cannot start ${executable}: ${error.message}`;
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
