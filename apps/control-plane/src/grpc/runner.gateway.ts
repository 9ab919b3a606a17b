import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { MAX_DATA_DEPTH, nestsDeeper } from '@carapace/models';
import {
  ARTIFACT_LIMITS,
  grpc,
  PROTOCOL_VERSION,
  type ControlMessage,
  type FactsResult,
  type Hello,
  type LogChunk,
  type RunArtifact,
  type RunnerMessage__Output,
  type RunResult,
  type StepEvent,
} from '@carapace/protocol';
import type { ExecutionEngine, Outcome } from '../services/execution-engine.js';
import type { RunnerService, RunnerSession } from '../services/runner.service.js';
import type { ServerService } from '../services/server.service.js';
import type { Clock } from '../ports.js';
import type { FactsScheduler } from '../services/facts.scheduler.js';

type Call = grpc.ServerDuplexStream<RunnerMessage__Output, ControlMessage>;

const OUTCOMES: readonly Outcome[] = ['completed', 'failed', 'canceled'];
const STEP_RESULTS = new Set(['ok', 'error', 'skipped', 'unreachable']);
const MAX_TEXT = 4 * 1024 * 1024;
/** A step's error object: the runner's callback plugin keeps it under 64 KiB; this bounds a rogue runner. */
const MAX_STEP_ERROR_CHARS = 1024 * 1024;

/** Settings of the gateway. */
export interface GatewayOptions {
  readonly heartbeatIntervalMs: number;
  readonly leaseTimeoutMs: number;
}

class ProtocolError extends Error {}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The control plane's side of `RunnerService.Connect`: authenticates runners, keeps one
 * session per runner, hands executions out against free slots, stores numbered events once
 * and acknowledges them, relays cancels, and serves fact gathering.
 */
export class RunnerGateway {
  private readonly streams = new Map<string, { call: Call; session: RunnerSession; pendingAcks: Map<string, number>; ackScheduled: boolean }>();
  private dispatchScheduled = false;
  private readonly unsubscribe: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly runners: RunnerService,
    private readonly engine: ExecutionEngine,
    private readonly servers: ServerService,
    private readonly facts: FactsScheduler,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly options: GatewayOptions,
  ) {
    this.unsubscribe.push(
      engine.workAvailable.on(() => this.scheduleDispatch()),
      engine.cancelRequested.on(({ executionId, runnerId }) => this.sendCancel(runnerId, executionId, 'canceled by a user')),
      facts.requested.on(() => this.scheduleDispatch()),
      runners.revoked.on((name) => this.disconnect(name)),
    );
  }

  /** The handlers for `server.addService`. */
  handlers(): grpc.UntypedServiceImplementation {
    return { Connect: (call: Call) => this.connect(call) };
  }

  /** Closes every stream (shutdown) and stops listening to the engine. */
  close(): void {
    this.closed = true;
    for (const off of this.unsubscribe) off();
    for (const { call } of this.streams.values()) call.end();
    this.streams.clear();
  }

  /** Closes the stream of a runner whose token was revoked. */
  disconnect(name: string): void {
    const entry = this.streams.get(name);
    if (!entry) return;
    this.streams.delete(name);
    this.runners.close(name, entry.session.sessionId);
    entry.call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: 'the runner token was revoked' });
  }

  private connect(call: Call): void {
    const peer = call.getPeer();
    const auth = call.metadata.get('authorization')[0];
    const raw = typeof auth === 'string' ? auth.replace(/^Bearer\s+/i, '') : undefined;
    if (this.closed) {
      // shutting down: the runner should come back soon, not back off as if refused
      call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'the control plane is shutting down' });
      return;
    }
    const name = this.runners.authenticate(raw);
    if (!name) {
      this.log.warn({ peer }, 'runner stream refused: missing or invalid runner token');
      call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: 'a valid runner token is required' });
      return;
    }
    let session: RunnerSession | null = null;
    const fail = (code: grpc.status, details: string) => {
      this.log.warn({ runner: name, peer, details }, 'runner stream closed with an error');
      if (session && this.runners.close(name, session.sessionId)) this.streams.delete(name);
      call.emit('error', { code, details });
    };

    call.on('data', (message: RunnerMessage__Output) => {
      try {
        if (!session) {
          if (message.body !== 'hello' || !message.hello) throw new ProtocolError('the first message must be hello');
          session = this.hello(call, name, message.hello, peer);
          return;
        }
        this.handle(name, session, message);
      } catch (err) {
        if (err instanceof ProtocolError) fail(grpc.status.INVALID_ARGUMENT, err.message);
        else {
          this.log.error({ err, runner: name }, 'runner message failed');
          fail(grpc.status.INTERNAL, 'the control plane could not handle a message');
        }
      }
    });
    const gone = (why: string) => {
      if (!session) return;
      const s: RunnerSession = session;
      session = null;
      if (this.runners.close(name, s.sessionId)) {
        this.streams.delete(name);
        this.log.info({ runner: name, sessionId: s.sessionId, why }, 'runner disconnected; its leases run until they expire');
      }
    };
    call.on('end', () => {
      gone('stream ended');
      call.end();
    });
    call.on('error', (err: Error) => gone(err.message));
    call.on('cancelled', () => gone('stream cancelled'));
  }

  private hello(call: Call, name: string, hello: Hello, peer: string): RunnerSession {
    if (hello.protocol_version !== PROTOCOL_VERSION) {
      throw new ProtocolError(`protocol version ${hello.protocol_version} is not supported (this control plane speaks ${PROTOCOL_VERSION})`);
    }
    if (hello.name !== name) throw new ProtocolError(`the token belongs to runner ${name}, not ${hello.name}`);
    if (!Number.isInteger(hello.slots) || hello.slots < 0 || hello.slots > 1024) throw new ProtocolError('slots must be between 0 and 1024');
    const nowMs = this.clock.nowMs();
    const session: RunnerSession = {
      sessionId: randomUUID(),
      name,
      version: hello.version.slice(0, 64),
      labels: { ...this.runners.labelsOf(name), ...hello.labels },
      slots: hello.slots,
      connectedAtMs: nowMs,
      peer,
      sshPublicKey: hello.ssh_public_key.slice(0, 16 * 1024),
      lastHeartbeatMs: nowMs,
      draining: false,
    };
    const previous = this.runners.open(session);
    const old = this.streams.get(name);
    this.streams.set(name, { call, session, pendingAcks: new Map(), ackScheduled: false });
    if (old && old.call !== call) old.call.end();

    // Reconcile what the runner still runs with what the control plane thinks it runs.
    const claimed = new Set(hello.running_execution_ids);
    const abandoned: string[] = [];
    const cancel: string[] = [];
    for (const execution of this.engine.runningOn(name)) {
      if (!claimed.has(execution.id)) {
        this.engine.finish(execution.id, 'failed', `runner ${name} reconnected without the run (it restarted)`);
      } else if (execution.data.state === 'canceling') cancel.push(execution.id);
      claimed.delete(execution.id);
    }
    abandoned.push(...claimed);
    this.engine.heartbeat(name);
    this.write(name, {
      welcome: {
        session_id: session.sessionId,
        heartbeat_interval_ms: this.options.heartbeatIntervalMs,
        lease_timeout_ms: this.options.leaseTimeoutMs,
        abandoned_execution_ids: abandoned,
      },
    });
    for (const id of cancel) this.sendCancel(name, id, 'canceled by a user');
    this.log.info(
      { runner: name, sessionId: session.sessionId, slots: session.slots, version: session.version, peer, replaced: Boolean(previous), abandoned },
      'runner connected',
    );
    this.scheduleDispatch();
    return session;
  }

  private handle(name: string, session: RunnerSession, message: RunnerMessage__Output): void {
    if (!this.runners.isCurrent(name, session.sessionId)) return; // an older stream still talking
    switch (message.body) {
      case 'heartbeat':
        session.lastHeartbeatMs = this.clock.nowMs();
        this.engine.heartbeat(name);
        return;
      case 'step':
        if (message.step) this.step(name, message.step);
        return;
      case 'log':
        if (message.log) this.logChunk(name, message.log);
        return;
      case 'artifact':
        if (message.artifact) this.artifact(name, message.artifact);
        return;
      case 'result':
        if (message.result) this.result(name, message.result);
        return;
      case 'draining':
        session.draining = true;
        this.log.info({ runner: name, reason: message.draining?.reason }, 'runner draining: no new work for it');
        return;
      case 'facts':
        if (message.facts) this.factsResult(name, message.facts);
        return;
      case 'hello':
        throw new ProtocolError('hello may only be sent once');
      case undefined:
        this.log.warn({ runner: name }, 'ignored a runner message of a kind this control plane does not know');
        return;
    }
  }

  private checkEvent(executionId: string, seq: number): void {
    if (!executionId || executionId.length > 64) throw new ProtocolError('execution_id is missing or too long');
    if (!Number.isSafeInteger(seq) || seq < 1) throw new ProtocolError('seq must be a positive integer');
  }

  private step(name: string, step: StepEvent): void {
    this.checkEvent(step.execution_id, step.seq);
    if (!STEP_RESULTS.has(step.result)) throw new ProtocolError(`step result ${JSON.stringify(step.result)} is not one of ok, error, skipped, unreachable`);
    if (step.error_json.length > MAX_STEP_ERROR_CHARS) throw new ProtocolError(`error_json may hold at most ${MAX_STEP_ERROR_CHARS} characters`);
    let error: unknown = {};
    try {
      error = step.error_json ? JSON.parse(step.error_json) : {};
    } catch {
      throw new ProtocolError('error_json is not JSON');
    }
    if (!isObject(error)) throw new ProtocolError('error_json must hold a JSON object');
    if (nestsDeeper(error, MAX_DATA_DEPTH)) throw new ProtocolError(`error_json may nest at most ${MAX_DATA_DEPTH} levels`);
    if (this.known(name, step.execution_id)) {
      const serverId = this.serverIdOf(step.execution_id, step.host);
      this.engine.recordStep(step.execution_id, step.seq, {
        role: step.role.slice(0, 255),
        name: step.name.slice(0, 1024),
        result: step.result,
        error,
        serverId,
        timeStarted: Math.floor(step.time_started),
        timeFinished: Math.floor(step.time_finished),
      });
    }
    this.ack(name, step.execution_id, step.seq);
  }

  private logChunk(name: string, chunk: LogChunk): void {
    this.checkEvent(chunk.execution_id, chunk.seq);
    if (!Number.isSafeInteger(chunk.offset) || chunk.offset < 0) throw new ProtocolError('offset must be a non-negative integer');
    if (chunk.text.length > MAX_TEXT) throw new ProtocolError('a log chunk may hold at most 4 MiB');
    if (this.known(name, chunk.execution_id) && chunk.text.length > 0) this.engine.appendLog(chunk.execution_id, chunk.offset, chunk.text);
    this.ack(name, chunk.execution_id, chunk.seq);
  }

  // A file of the run, stored (never logged) until the result says whether it is used.
  private artifact(name: string, artifact: RunArtifact): void {
    this.checkEvent(artifact.execution_id, artifact.seq);
    if (!ARTIFACT_LIMITS.name.test(artifact.name)) throw new ProtocolError('an artifact name must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$');
    if (Buffer.byteLength(artifact.content, 'utf8') > ARTIFACT_LIMITS.maxBytes) {
      throw new ProtocolError(`an artifact may hold at most ${ARTIFACT_LIMITS.maxBytes} bytes`);
    }
    if (this.known(name, artifact.execution_id)) {
      const stored = this.engine.recordArtifact(artifact.execution_id, artifact.seq, artifact.name, artifact.content, ARTIFACT_LIMITS.maxFiles);
      if (stored === 'too_many') throw new ProtocolError(`an execution may hand back at most ${ARTIFACT_LIMITS.maxFiles} files`);
      if (stored === 'late') this.log.warn({ runner: name, executionId: artifact.execution_id, artifact: artifact.name }, 'dropped a file of an execution that is over');
    }
    this.ack(name, artifact.execution_id, artifact.seq);
  }

  private result(name: string, result: RunResult): void {
    this.checkEvent(result.execution_id, result.seq);
    const outcome = OUTCOMES.find((o) => o === result.outcome);
    if (!outcome) throw new ProtocolError(`outcome ${JSON.stringify(result.outcome)} is not one of completed, failed, canceled`);
    if (this.known(name, result.execution_id)) {
      const done = this.engine.finish(result.execution_id, outcome, result.reason ? result.reason.slice(0, 4096) : null);
      if (done) this.log.info({ runner: name, executionId: result.execution_id, state: done.data.state, reason: done.data.reason }, 'execution finished');
    }
    this.ack(name, result.execution_id, result.seq);
    this.scheduleDispatch();
  }

  private factsResult(name: string, result: FactsResult): void {
    this.facts.complete(name, result);
  }

  /** Whether the execution was handed to this runner (events of others are dropped). */
  private known(name: string, executionId: string): boolean {
    const execution = this.engine.get(executionId);
    if (execution?.data.runner_id === name) return true;
    this.log.warn({ runner: name, executionId }, 'dropped an event of an execution this runner does not hold');
    return false;
  }

  private serverIdOf(executionId: string, host: string): string | null {
    const execution = this.engine.get(executionId);
    if (!execution) return null;
    for (const server of this.servers.liveMany(execution.data.server_ids).found) {
      if (server.data.ip === host || server.id === host) return server.id;
    }
    return null;
  }

  /** Acknowledges events in batches: one ack per execution per turn of the event loop. */
  private ack(name: string, executionId: string, seq: number): void {
    const entry = this.streams.get(name);
    if (!entry) return;
    entry.pendingAcks.set(executionId, Math.max(seq, entry.pendingAcks.get(executionId) ?? 0));
    if (entry.ackScheduled) return;
    entry.ackScheduled = true;
    setImmediate(() => {
      entry.ackScheduled = false;
      const acks = [...entry.pendingAcks];
      entry.pendingAcks.clear();
      for (const [execution_id, s] of acks) this.write(name, { ack: { execution_id, seq: s } });
    });
  }

  private sendCancel(name: string, executionId: string, reason: string): void {
    if (!this.write(name, { cancel: { execution_id: executionId, reason } })) {
      this.log.info({ runner: name, executionId }, 'cancel waits for the runner to reconnect');
    }
  }

  private write(name: string, message: ControlMessage): boolean {
    const entry = this.streams.get(name);
    if (!entry) return false;
    try {
      entry.call.write(message);
      return true;
    } catch (err) {
      this.log.warn({ err, runner: name }, 'write to runner failed');
      return false;
    }
  }

  private scheduleDispatch(): void {
    if (this.dispatchScheduled || this.closed) return;
    this.dispatchScheduled = true;
    setImmediate(() => {
      this.dispatchScheduled = false;
      try {
        this.dispatch();
      } catch (err) {
        this.log.error({ err }, 'dispatch failed');
      }
    });
  }

  /** Hands queued executions and fact requests to runners with free slots, oldest first. */
  private dispatch(): void {
    const sessions = this.runners.connected().filter((s) => !s.draining && this.streams.has(s.name));
    // Least loaded first, so that work spreads over runners.
    const load = new Map(sessions.map((s) => [s.name, this.engine.runningOn(s.name).length]));
    sessions.sort((a, b) => (load.get(a.name) ?? 0) - (load.get(b.name) ?? 0));
    for (const session of sessions) {
      const free = session.slots - (load.get(session.name) ?? 0);
      if (free <= 0) continue;
      for (const assignment of this.engine.claim(session.name, free)) {
        const hostKeys: Record<string, string> = {};
        for (const server of this.servers.liveMany(assignment.execution.data.server_ids).found) {
          if (server.data.ssh_host_key && server.data.ip) hostKeys[server.data.ip] = server.data.ssh_host_key;
        }
        const sent = this.write(session.name, {
          assignment: {
            execution_id: assignment.execution.id,
            playbook_id: assignment.playbookId,
            configuration_json: JSON.stringify(assignment.configuration),
            server_ids: { ...assignment.serverIds },
            host_keys: hostKeys,
          },
        });
        this.log.info({ runner: session.name, executionId: assignment.execution.id, sent }, 'execution assigned');
      }
    }
    for (const request of this.facts.take(sessions.map((s) => ({ name: s.name, labels: s.labels })))) {
      this.write(request.runner, { gather_facts: request.message });
    }
  }
}
