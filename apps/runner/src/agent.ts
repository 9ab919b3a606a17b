import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import {
  createRunnerClient,
  grpc,
  KEEPALIVE_OPTIONS,
  PROTOCOL_VERSION,
  type Assignment,
  type ControlMessage__Output,
  type GatherFacts,
  type RunnerMessage,
} from '@carapace/protocol';
import { Outbox, type OutboxEvent } from './outbox.js';

/** A step as the executor reports it. */
export interface RunStep {
  host: string;
  role: string;
  name: string;
  result: string;
  error: Record<string, unknown>;
  time_started: number;
  time_finished: number;
}

/** How a run ended. */
export interface RunOutcome {
  outcome: 'completed' | 'failed' | 'canceled';
  reason: string | null;
  /**
   * The files a completed run hands back (name and text), sent as `RunArtifact` events
   * before the result; ignored unless the outcome is `completed`.
   */
  artifacts?: readonly { readonly name: string; readonly content: string }[];
}

/** A run under way. */
export interface RunControl {
  readonly result: Promise<RunOutcome>;
  cancel(reason?: string): void;
  /** Process group of the run, recorded so that a restarted runner can stop its orphans. */
  readonly pid?: number | undefined;
}

/** What a run needs. */
export interface RunRequest {
  executionId: string;
  playbookId: string;
  configuration: { global_vars: Record<string, unknown>; inventory: Record<string, unknown> };
  /** known_hosts lines of every host, as the pre-flight saw them. */
  knownHostsFile: string;
  workRoot: string;
}

/** A host to check before a run. */
export interface PreflightTarget {
  address: string;
  username: string;
  expectedHostKey: string | null;
}

/** The side effects of the agent (HOUSE-STYLE 5): Ansible runs and SSH. */
export interface AgentPorts {
  startRun(request: RunRequest, sink: { step(step: RunStep): void; log(text: string): void }): RunControl;
  preflight(targets: PreflightTarget[]): Promise<{ address: string; ok: boolean; hostKey: string | null; reason: string | null }[]>;
  gatherFacts(target: PreflightTarget): Promise<{ facts: unknown; hostKey: string }>;
}

/** Settings of the agent. */
export interface AgentOptions {
  readonly controlPlane: string;
  readonly credentials: grpc.ChannelCredentials;
  readonly token: string;
  readonly name: string;
  readonly version: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly slots: number;
  readonly sshPublicKey: string;
  readonly workDir: string;
  readonly drainGraceMs: number;
  readonly reconnect: { readonly initialDelayMs: number; readonly maxDelayMs: number };
  readonly outboxMemoryBytes: number;
  /** Log text is sent in chunks of at most this many characters, at least every `logFlushMs`. */
  readonly logChunkChars?: number;
  readonly logFlushMs?: number;
}

const ConfigurationSchema = Type.Object({
  global_vars: Type.Record(Type.String(), Type.Unknown()),
  inventory: Type.Record(Type.String(), Type.Unknown()),
});

/** Capped exponential backoff with full jitter over the upper half: attempt 0 → ~initial. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number, random: () => number = Math.random): number {
  const cap = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(cap / 2 + (cap / 2) * random());
}

type AgentState = 'idle' | 'connecting' | 'connected' | 'backoff' | 'draining' | 'stopped';

interface Running {
  control: RunControl | null;
  canceled: string | null;
  logBuffer: string;
  logOffset: number;
  flushTimer: NodeJS.Timeout | null;
  /** Resolves when the run's result is in the outbox. */
  done: Promise<void>;
  resolveDone: () => void;
}

/**
 * The runner agent: keeps one `RunnerService.Connect` stream to the control plane open
 * (reconnecting with capped exponential backoff and jitter), runs the executions it is
 * assigned against its free slots, numbers every event and resends what was not
 * acknowledged, relays cancels, gathers facts, and drains on shutdown.
 */
export class RunnerAgent {
  private state: AgentState = 'idle';
  private client: ReturnType<typeof createRunnerClient> | null = null;
  private call: grpc.ClientDuplexStream<RunnerMessage, ControlMessage__Output> | null = null;
  private readonly outbox: Outbox;
  private readonly running = new Map<string, Running>();
  private attempt = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private writeQueue: RunnerMessage[] = [];
  private writable = true;
  private stopResolve: (() => void) | null = null;
  /** Resolves when the agent has stopped (after `stop()` or `drain()`). */
  readonly stopped: Promise<void>;
  /** Counters for tests and the log. */
  readonly stats = { connects: 0, assignments: 0, resent: 0 };

  constructor(
    private readonly options: AgentOptions,
    private readonly ports: AgentPorts,
    private readonly log: Logger,
  ) {
    this.outbox = new Outbox(join(options.workDir, 'outbox'), options.outboxMemoryBytes);
    this.stopped = new Promise((resolve) => (this.stopResolve = resolve));
  }

  /** Opens the stream (and keeps it open). */
  start(): void {
    if (this.state !== 'idle') return;
    mkdirSync(join(this.options.workDir, 'executions'), { recursive: true, mode: 0o700 });
    this.killOrphans();
    this.client = createRunnerClient(this.options.controlPlane, this.options.credentials, {
      ...KEEPALIVE_OPTIONS,
      // The channel has a reconnect backoff of its own (1 s growing to 120 s): while it waits,
      // every Connect fails at once, so after an outage of a minute the runner would come back
      // up to two minutes after the control plane did, whatever `reconnect` says. Bound it alike.
      'grpc.initial_reconnect_backoff_ms': this.options.reconnect.initialDelayMs,
      'grpc.max_reconnect_backoff_ms': this.options.reconnect.maxDelayMs,
    });
    this.connect();
  }

  /**
   * A runner that died (SIGKILL, power loss) leaves its ansible-playbook process groups
   * behind; the control plane fails those executions, so their processes must not go on
   * changing servers. Each run records its process group in `<id>.pgid`.
   */
  private killOrphans(): void {
    const dir = join(this.options.workDir, 'executions');
    for (const file of readdirSync(dir)) {
      if (!file.endsWith('.pgid')) continue;
      const pgid = Number(readFileSync(join(dir, file), 'utf8').trim());
      if (Number.isInteger(pgid) && pgid > 1 && isAnsible(pgid)) {
        try {
          process.kill(-pgid, 'SIGKILL');
          this.log.warn({ pgid, executionId: file.slice(0, -5) }, 'killed the processes of a run left by a previous runner process');
        } catch {
          // Already gone.
        }
      }
      rmSync(join(dir, file), { force: true });
    }
  }

  /** Executions under way. */
  get runningIds(): string[] {
    return [...this.running.keys()];
  }

  /** Unacknowledged events. */
  get pendingEvents(): number {
    return this.outbox.pending;
  }

  /**
   * Graceful shutdown: tells the control plane it takes no new work, lets running executions
   * finish within the grace period, cancels the rest, waits for their results to be
   * acknowledged (bounded), then closes.
   */
  async drain(reason = 'runner shutting down'): Promise<void> {
    if (this.state === 'stopped') return;
    const wasConnected = this.state === 'connected';
    this.state = 'draining';
    if (wasConnected) this.send({ draining: { reason } });
    this.log.info({ running: this.runningIds, graceMs: this.options.drainGraceMs }, 'draining');
    const all = () => Promise.all([...this.running.values()].map((r) => r.done));
    const graceOver = await Promise.race([all().then(() => false), delay(this.options.drainGraceMs).then(() => true)]);
    if (graceOver) {
      for (const [id, r] of this.running) this.cancelRun(id, r, 'the runner shut down before the run ended');
      await all();
    }
    // Give the control plane a moment to acknowledge the last events.
    const deadline = Date.now() + 5000;
    // Also while the stream is down: it may come back in time (the agent keeps reconnecting).
    const stoppedMeanwhile = () => this.state === 'stopped';
    while (this.outbox.pending > 0 && Date.now() < deadline && !stoppedMeanwhile()) await delay(50);
    this.stop();
  }

  /** Closes at once (running executions are left to their leases). */
  stop(): void {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    for (const r of this.running.values()) if (r.flushTimer) clearTimeout(r.flushTimer);
    this.call?.end();
    this.call?.cancel();
    this.call = null;
    this.client?.close();
    this.stopResolve?.();
  }

  /** Drops the stream as a network failure would (tests of reconnection). */
  interrupt(): void {
    this.call?.cancel();
  }

  private connect(): void {
    if (this.state === 'stopped') return;
    if (this.state !== 'draining') this.state = 'connecting';
    const client = this.client;
    if (!client) return;
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${this.options.token}`);
    const call = client.Connect(metadata);
    this.call = call;
    this.writable = true;
    this.writeQueue = [];
    let welcomed = false;
    call.on('data', (message: ControlMessage__Output) => {
      if (this.call !== call) return;
      try {
        if (message.body === 'welcome' && message.welcome) {
          welcomed = true;
          this.welcome(message.welcome.heartbeat_interval_ms, message.welcome.abandoned_execution_ids);
          return;
        }
        if (!welcomed) return;
        this.handle(message);
      } catch (err) {
        this.log.error({ err }, 'failed to handle a control-plane message');
      }
    });
    call.on('drain', () => {
      if (this.call !== call) return;
      this.writable = true;
      this.flushWrites();
    });
    const lost = (why: string, code?: number) => {
      if (this.call !== call) return;
      this.call = null;
      if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
      this.heartbeatTimer = null;
      if (this.state === 'stopped') return;
      const fatal = code === grpc.status.UNAUTHENTICATED || code === grpc.status.INVALID_ARGUMENT || code === grpc.status.FAILED_PRECONDITION;
      // A refusal (revoked token, wrong name, unknown protocol) will not heal in milliseconds:
      // retry it at the longest delay instead of hammering the control plane.
      const delayMs = backoffMs(fatal ? 30 : this.attempt++, this.options.reconnect.initialDelayMs, this.options.reconnect.maxDelayMs);
      (fatal ? this.log.error.bind(this.log) : this.log.warn.bind(this.log))({ why, code, retryInMs: delayMs }, 'stream to the control plane lost');
      if (this.state !== 'draining') this.state = 'backoff';
      this.reconnectTimer = setTimeout(() => this.connect(), delayMs);
    };
    call.on('error', (err: grpc.ServiceError) => lost(err.details || err.message, err.code));
    call.on('end', () => lost('stream ended by the control plane'));
    call.on('status', (status: grpc.StatusObject) => {
      if (status.code !== grpc.status.OK) lost(status.details, status.code);
    });
    this.write({
      hello: {
        protocol_version: PROTOCOL_VERSION,
        name: this.options.name,
        version: this.options.version,
        labels: { ...this.options.labels },
        slots: this.state === 'draining' ? 0 : this.options.slots,
        // Also the runs that ended while the stream was down: their results are still to be
        // resent, and the control plane fails every run of this runner that is not named here.
        running_execution_ids: [...new Set([...this.runningIds, ...this.outbox.executionIds])],
        ssh_public_key: this.options.sshPublicKey,
      },
    });
  }

  private welcome(heartbeatIntervalMs: number, abandoned: string[]): void {
    this.attempt = 0;
    this.stats.connects += 1;
    if (this.state !== 'draining') this.state = 'connected';
    else this.send({ draining: { reason: 'runner shutting down' } });
    this.log.info({ controlPlane: this.options.controlPlane, running: this.runningIds }, 'connected to the control plane');
    for (const id of abandoned) {
      const r = this.running.get(id);
      if (r) this.cancelRun(id, r, 'the control plane gave the execution up');
      this.outbox.drop(id);
    }
    let resent = 0;
    for (const event of this.outbox.unacked()) {
      this.write(event);
      resent += 1;
    }
    this.stats.resent += resent;
    if (resent) this.log.info({ resent }, 'resent unacknowledged events');
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    const interval = Math.max(100, heartbeatIntervalMs || 5000);
    this.heartbeatTimer = setInterval(() => this.send({ heartbeat: { free_slots: Math.max(0, this.options.slots - this.running.size) } }), interval);
    this.heartbeatTimer.unref();
  }

  private handle(message: ControlMessage__Output): void {
    switch (message.body) {
      case 'assignment':
        if (message.assignment) this.assign(message.assignment);
        return;
      case 'cancel': {
        const id = message.cancel?.execution_id ?? '';
        const r = this.running.get(id);
        if (r) this.cancelRun(id, r, message.cancel?.reason || 'canceled');
        return;
      }
      case 'ack':
        if (message.ack) this.outbox.ack(message.ack.execution_id, message.ack.seq);
        return;
      case 'drain':
        void this.drain(message.drain?.reason || 'drain asked by the control plane');
        return;
      case 'gather_facts':
        if (message.gather_facts) void this.facts(message.gather_facts);
        return;
      case 'welcome':
        return;
      case undefined:
        this.log.warn('ignored a control-plane message of a kind this runner does not know');
        return;
    }
  }

  private assign(assignment: Assignment): void {
    const id = assignment.execution_id;
    if (this.running.has(id)) return; // a repeat after a reconnect
    this.stats.assignments += 1;
    let resolveDone = () => {};
    const done = new Promise<void>((resolve) => (resolveDone = resolve));
    const r: Running = { control: null, canceled: null, logBuffer: '', logOffset: 0, flushTimer: null, done, resolveDone };
    this.running.set(id, r);
    this.log.info({ executionId: id, playbook: assignment.playbook_id }, 'execution assigned');
    void this.run(id, r, assignment).catch((err: unknown) => {
      this.log.error({ err, executionId: id }, 'execution crashed in the runner');
      this.finish(id, r, { outcome: 'failed', reason: `runner error: ${(err as Error).message}` });
    });
  }

  private async run(id: string, r: Running, assignment: Assignment): Promise<void> {
    if (this.state === 'draining') {
      this.finish(id, r, { outcome: 'failed', reason: `runner ${this.options.name} was shutting down` });
      return;
    }
    let configuration: unknown;
    try {
      configuration = JSON.parse(assignment.configuration_json);
    } catch {
      configuration = undefined;
    }
    if (!Value.Check(ConfigurationSchema, configuration)) {
      this.finish(id, r, { outcome: 'failed', reason: 'the configuration sent by the control plane is not valid' });
      return;
    }
    const hostvars = hostVars(configuration.inventory);
    const targets: PreflightTarget[] = Object.keys(assignment.server_ids).map((address) => ({
      address,
      username: userOf(hostvars[address]),
      expectedHostKey: assignment.host_keys[address] ?? null,
    }));
    this.appendLog(id, r, `Carapace runner ${this.options.name}: pre-flight SSH check of ${targets.length} host(s)\n`);
    const checks = await this.ports.preflight(targets);
    const failed = checks.filter((c) => !c.ok);
    for (const c of checks) this.appendLog(id, r, `  ${c.address}: ${c.ok ? 'ok' : (c.reason ?? 'failed')}\n`);
    if (r.canceled) {
      this.finish(id, r, { outcome: 'canceled', reason: r.canceled });
      return;
    }
    if (failed.length) {
      this.finish(id, r, { outcome: 'failed', reason: `pre-flight failed: ${failed.map((c) => c.reason ?? c.address).join('; ')}` });
      return;
    }
    const workRoot = join(this.options.workDir, 'executions');
    const knownHostsFile = join(workRoot, `${id}.known_hosts`);
    writeFileSync(knownHostsFile, checks.map((c) => `${c.address} ${c.hostKey ?? ''}\n`).join(''), { mode: 0o600 });
    this.appendLog(id, r, '\n');
    const control = this.ports.startRun(
      { executionId: id, playbookId: assignment.playbook_id, configuration, knownHostsFile, workRoot },
      {
        step: (step) => {
          this.flushLog(id, r);
          this.emit(id, (seq) => ({
            step: {
              execution_id: id,
              seq,
              host: step.host,
              role: step.role,
              name: step.name,
              result: step.result,
              error_json: JSON.stringify(step.error ?? {}),
              time_started: step.time_started,
              time_finished: step.time_finished,
            },
          }));
        },
        log: (text) => this.appendLog(id, r, text),
      },
    );
    r.control = control;
    const pgidFile = join(workRoot, `${id}.pgid`);
    if (control.pid) writeFileSync(pgidFile, `${control.pid}\n`, { mode: 0o600 });
    if (r.canceled) control.cancel(r.canceled);
    const outcome = await control.result;
    rmSync(knownHostsFile, { force: true });
    rmSync(pgidFile, { force: true });
    this.finish(id, r, r.canceled && outcome.outcome !== 'completed' ? { outcome: 'canceled', reason: r.canceled } : outcome);
  }

  private cancelRun(id: string, r: Running, reason: string): void {
    if (r.canceled) return;
    r.canceled = reason;
    this.log.info({ executionId: id, reason }, 'canceling execution');
    r.control?.cancel(reason);
  }

  private finish(id: string, r: Running, outcome: RunOutcome): void {
    if (!this.running.has(id)) return;
    this.flushLog(id, r);
    this.running.delete(id);
    // Before the result, in the same sequence: acknowledged and resent like every event, and
    // stored by the control plane by the time the result makes it apply them.
    if (outcome.outcome === 'completed') {
      for (const artifact of outcome.artifacts ?? []) {
        this.emit(id, (seq) => ({ artifact: { execution_id: id, seq, name: artifact.name, content: artifact.content } }));
      }
    }
    this.emit(id, (seq) => ({ result: { execution_id: id, seq, outcome: outcome.outcome, reason: outcome.reason ?? '' } }));
    r.resolveDone();
    this.log.info({ executionId: id, outcome: outcome.outcome, reason: outcome.reason }, 'execution ended');
  }

  private appendLog(id: string, r: Running, text: string): void {
    if (!text) return;
    r.logBuffer += text;
    if (r.logBuffer.length >= (this.options.logChunkChars ?? 32 * 1024)) this.flushLog(id, r);
    else r.flushTimer ??= setTimeout(() => this.flushLog(id, r), this.options.logFlushMs ?? 100);
  }

  private flushLog(id: string, r: Running): void {
    if (r.flushTimer) clearTimeout(r.flushTimer);
    r.flushTimer = null;
    const max = this.options.logChunkChars ?? 32 * 1024;
    while (r.logBuffer) {
      let text = r.logBuffer.slice(0, max);
      // Never split a surrogate pair between two chunks.
      const last = text.charCodeAt(text.length - 1);
      if (text.length === max && last >= 0xd800 && last <= 0xdbff) text = text.slice(0, -1);
      r.logBuffer = r.logBuffer.slice(text.length);
      const offset = r.logOffset;
      r.logOffset += text.length;
      this.emit(id, (seq) => ({ log: { execution_id: id, seq, offset, text } }));
    }
  }

  private emit(id: string, make: (seq: number) => OutboxEvent): void {
    const event = this.outbox.push(id, make);
    this.send(event);
  }

  private async facts(request: GatherFacts): Promise<void> {
    let answer: RunnerMessage['facts'];
    try {
      const { facts, hostKey } = await this.ports.gatherFacts({
        address: request.address,
        username: request.username,
        expectedHostKey: request.expected_host_key || null,
      });
      answer = { request_id: request.request_id, server_id: request.server_id, facts_json: JSON.stringify(facts), host_key: hostKey, error: '' };
    } catch (err) {
      answer = { request_id: request.request_id, server_id: request.server_id, facts_json: '', host_key: '', error: (err as Error).message };
    }
    this.send({ facts: answer });
  }

  /** Sends when connected; events stay in the outbox otherwise and go after reconnecting. */
  private send(message: RunnerMessage): void {
    if (this.state !== 'connected' && this.state !== 'draining') return;
    this.write(message);
  }

  private write(message: RunnerMessage): void {
    const call = this.call;
    if (!call) return;
    if (!this.writable) {
      this.writeQueue.push(message);
      return;
    }
    this.writable = call.write(message);
  }

  private flushWrites(): void {
    while (this.writable && this.writeQueue.length && this.call) {
      const next = this.writeQueue.shift();
      if (next) this.writable = this.call.write(next);
    }
  }
}

function hostVars(inventory: Record<string, unknown>): Record<string, Record<string, unknown> | undefined> {
  const meta = inventory._meta;
  if (typeof meta !== 'object' || meta === null) return {};
  const hv = (meta as Record<string, unknown>).hostvars;
  return typeof hv === 'object' && hv !== null ? (hv as Record<string, Record<string, unknown> | undefined>) : {};
}

/** Whether the process is still an ansible-playbook (the pid was not reused since). */
function isAnsible(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('ansible');
  } catch {
    return false;
  }
}

function userOf(vars: Record<string, unknown> | undefined): string {
  const user = vars?.ansible_user;
  return typeof user === 'string' && user ? user : 'root';
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
