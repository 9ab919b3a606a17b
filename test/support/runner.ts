import type { TestControlPlane } from './control-plane.js';
import type { Harness } from './harness.js';

/** A step as a runner reports it. */
export interface StepReport {
  readonly role: string;
  readonly name: string;
  readonly result: 'ok' | 'error' | 'skipped' | 'unreachable' | 'unknown';
  readonly serverId: string | null;
}

/**
 * Plays the runner's part against the control plane's execution engine, as the gRPC gateway
 * does for a real runner: claims queued executions, reports steps and log chunks, and ends
 * runs. The control plane itself is real; only the Ansible side is scripted.
 */
export class ScriptedRunner {
  private seq = 0;
  private readonly logLength = new Map<string, number>();

  constructor(
    private readonly cp: TestControlPlane,
    readonly name = 'scripted-runner',
  ) {}

  private get engine() {
    return this.cp.services.engine;
  }

  /** Claims the queued executions (there must be exactly `expected` among them, `expected` first). */
  async claim(expected: string): Promise<void> {
    const claimed = (await this.engine.claim(this.name, 100)).map((a) => a.execution.id);
    if (!claimed.includes(expected)) throw new Error(`execution ${expected} was not handed out (got ${claimed.join(', ') || 'none'})`);
  }

  /** Reports one finished step. */
  async step(executionId: string, step: StepReport): Promise<void> {
    const now = Math.floor(Date.now() / 1000);
    await this.engine.recordStep(executionId, this.seq++, {
      role: step.role,
      name: step.name,
      result: step.result,
      error: step.result === 'error' ? { msg: `${step.name} failed` } : {},
      host: step.serverId ?? '',
      timeStarted: now,
      timeFinished: now,
    });
  }

  /** Appends text to the log. */
  async log(executionId: string, text: string): Promise<void> {
    const offset = this.logLength.get(executionId) ?? 0;
    await this.engine.appendLog(executionId, offset, text);
    this.logLength.set(executionId, offset + text.length);
  }

  /** Ends the run. */
  async finish(executionId: string, outcome: 'completed' | 'failed' | 'canceled', reason: string | null = null): Promise<void> {
    if (!(await this.engine.finish(executionId, outcome, reason))) throw new Error(`execution ${executionId} was over already`);
  }
}

/** What {@link completedHelloWorld} made. */
export interface CompletedRun {
  readonly configurationId: string;
  readonly executionId: string;
}

/**
 * A hello_world configuration of `serverIds` in `clusterId`, and an execution of it that a
 * {@link ScriptedRunner} named `runnerName` claimed, reported one step and one log chunk of,
 * and completed: a history with every model kind, for tests that compare what two stores answer.
 */
export async function completedHelloWorld(
  h: Harness,
  options: { token: string; clusterId: string; serverIds: readonly string[]; runnerName: string },
): Promise<CompletedRun> {
  const { token, clusterId, serverIds, runnerName } = options;
  const config = await h.request('POST', '/v1/playbook_configuration/', {
    token,
    body: { name: 'hello', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [...serverIds] },
  });
  const execution = await h.request('POST', '/v1/execution/', { token, body: { playbook_configuration: { id: config.json.id, version: config.json.version } } });
  const executionId = execution.json.id as string;
  const runner = new ScriptedRunner({ services: h.container.services } as never, runnerName);
  await runner.claim(executionId);
  await runner.step(executionId, { role: 'hello', name: 'say hello', result: 'ok', serverId: serverIds[0] ?? null });
  await runner.log(executionId, 'PLAY [hello]\nok: [10.0.0.1]\n');
  await runner.finish(executionId, 'completed');
  return { configurationId: config.json.id as string, executionId };
}
