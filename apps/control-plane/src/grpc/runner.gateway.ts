import type { Logger } from 'pino';
import { ARTIFACT_LIMITS, grpc, type ControlMessage, type Hello, type RunArtifact, type RunnerMessage__Output, type RunResult } from '@carapace/protocol';
import type { Dispatch } from '../executions/dispatch.js';
import type { ExecutionEngine } from '../executions/execution-engine.js';
import type { LogChunkInput, StepReport } from '../executions/execution.types.js';
import { assertNever } from '../executions/execution-state.js';
import type { FactsScheduler } from '../infrastructure/facts.scheduler.js';
import type { StatusScheduler } from '../infrastructure/status.scheduler.js';
import type { RunnerService, RunnerSession } from '../executions/runner.service.js';
import {
  assignmentMessage,
  decodeArtifact,
  decodeFactsResult,
  decodeStatusResult,
  collectStatusMessage,
  decodeHello,
  decodeLogChunk,
  decodeResult,
  decodeStep,
  gatherFactsMessage,
  ProtocolError,
} from './runner.codec.js';
import { StreamWriter } from './stream.writer.js';
import type { Metrics } from '../services/metrics.js';
import { DispatchPasses } from './dispatch-passes.js';

type Call = grpc.ServerDuplexStream<RunnerMessage__Output, ControlMessage>;

/** Settings of the gateway. */
export interface GatewayOptions {
  readonly heartbeatIntervalMs: number;
  readonly leaseTimeoutMs: number;
  /** Counts log bytes, facts answers and dispatched executions, when given. */
  readonly metrics?: Pick<Metrics, 'logBytes' | 'factsResults' | 'dispatched'>;
  /** Records the status answers, when given (`status` messages are dropped otherwise). */
  readonly status?: StatusScheduler;
}

/** The capability (`Hello.capabilities`) of a runner that honours `Assignment.check_mode` and `limit_hosts`. */
export const PREVIEW_CAPABILITY = 'preview';

/** One runner's open stream. */
interface Stream {
  readonly call: Call;
  readonly writer: StreamWriter<ControlMessage>;
  readonly session: RunnerSession;
  readonly pendingAcks: Map<string, number>;
  ackScheduled: boolean;
  /** What the runner said it can do beyond the first release of protocol version 1 (`Hello.capabilities`). */
  readonly capabilities: ReadonlySet<string>;
}

/**
 * Messages of a stream waiting to be handled, one after the other (an event is acknowledged
 * only once stored, and in the order sent). Past `INBOX_HIGH` the stream is paused, so a
 * runner cannot outrun the database.
 */
const INBOX_HIGH = 256;

/** The most steps and log chunks stored together, and about the most bytes of log text. */
const EVENT_BATCH_MAX = 256;
const EVENT_BATCH_BYTES = 4 * 1024 * 1024;

/** Takes the steps and log chunks at the head of `inbox` (at least one message, whatever it is). */
function takeEvents(inbox: RunnerMessage__Output[]): RunnerMessage__Output[] {
  let n = 0;
  let bytes = 0;
  while (n < inbox.length && n < EVENT_BATCH_MAX) {
    const message = inbox[n] as RunnerMessage__Output;
    if (message.body !== 'step' && message.body !== 'log') break;
    bytes += message.log?.text.length ?? 0;
    if (n > 0 && bytes > EVENT_BATCH_BYTES) break;
    n += 1;
  }
  return inbox.splice(0, Math.max(1, n));
}

/**
 * The control plane's side of `RunnerService.Connect`: authenticates runners, keeps one
 * stream per runner, decodes what runners send into calls of the services (runner sessions,
 * the execution engine, fact gathering), acknowledges events, and writes what the services
 * hand out (assignments, fact requests, cancels) as protocol messages, honouring backpressure.
 */
export class RunnerGateway {
  private readonly streams = new Map<string, Stream>();
  /** Sends what dispatch hands out to the runners with an open stream, a pass at a time. */
  private readonly passes = new DispatchPasses(
    () => this.dispatchOnce(),
    (err) => this.log.error({ err }, 'dispatch failed'),
  );
  private readonly unsubscribe: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly runners: RunnerService,
    private readonly engine: ExecutionEngine,
    private readonly work: Dispatch,
    private readonly facts: FactsScheduler,
    private readonly log: Logger,
    private readonly options: GatewayOptions,
  ) {
    this.unsubscribe.push(
      work.onWork(() => this.scheduleDispatch()),
      engine.cancelRequested.on(({ executionId, runnerId }) => this.sendCancel(runnerId, executionId, 'canceled by a user')),
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
    this.passes.close();
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
    // The stream stays paused (no 'data' listener) until the token is checked.
    this.runners.authenticate(raw).then(
      (name) => this.accept(call, peer, name),
      (err: unknown) => {
        this.log.error({ err, peer }, 'runner authentication failed');
        call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'the control plane could not check the runner token' });
      },
    );
  }

  private accept(call: Call, peer: string, name: string | null): void {
    if (this.closed) {
      call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'the control plane is shutting down' });
      return;
    }
    if (call.cancelled) return;
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

    const inbox: RunnerMessage__Output[] = [];
    let draining = false;
    let paused = false;
    let failed = false;
    const receive = async (messages: readonly RunnerMessage__Output[]) => {
      if (failed) return;
      try {
        if (!session) {
          const message = messages[0];
          if (messages.length !== 1 || message?.body !== 'hello' || !message.hello) throw new ProtocolError('the first message must be hello');
          session = await this.hello(call, name, message.hello, peer);
          return;
        }
        if (messages.length === 1) await this.handle(name, session, messages[0] as RunnerMessage__Output);
        else await this.events(name, session, messages);
      } catch (err) {
        failed = true;
        if (err instanceof ProtocolError) fail(grpc.status.INVALID_ARGUMENT, err.message);
        else {
          this.log.error({ err, runner: name }, 'runner message failed');
          fail(grpc.status.INTERNAL, 'the control plane could not handle a message');
        }
      }
    };
    // One message after the other; steps and log chunks waiting together are stored together.
    const drain = async () => {
      draining = true;
      while (inbox.length > 0) {
        const batch = session ? takeEvents(inbox) : inbox.splice(0, 1);
        await receive(batch);
        if (paused && inbox.length <= INBOX_HIGH / 2) {
          paused = false;
          call.resume();
        }
      }
      draining = false;
    };
    call.on('data', (message: RunnerMessage__Output) => {
      inbox.push(message);
      if (inbox.length >= INBOX_HIGH && !paused) {
        paused = true;
        call.pause();
      }
      if (!draining) void drain();
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

  private async hello(call: Call, name: string, message: Hello, peer: string): Promise<RunnerSession> {
    const { hello, running } = decodeHello(message, name, peer);
    const { session, replaced } = await this.runners.open(hello);
    const old = this.streams.get(name);
    const writer = new StreamWriter<ControlMessage>(call, (err) => this.log.warn({ err, runner: name }, 'write to runner failed'));
    this.streams.set(name, { call, writer, session, pendingAcks: new Map(), ackScheduled: false, capabilities: new Set(message.capabilities) });
    if (old && old.call !== call) old.call.end();

    const { abandoned, cancel } = await this.engine.reconcile(name, running);
    this.write(name, {
      welcome: {
        session_id: session.sessionId,
        heartbeat_interval_ms: this.options.heartbeatIntervalMs,
        lease_timeout_ms: this.options.leaseTimeoutMs,
        abandoned_execution_ids: abandoned,
      },
    });
    for (const id of cancel) this.sendCancel(name, id, 'canceled by a user');
    this.log.info({ runner: name, sessionId: session.sessionId, slots: session.slots, version: session.version, peer, replaced, abandoned }, 'runner connected');
    this.scheduleDispatch();
    return session;
  }

  private async handle(name: string, session: RunnerSession, message: RunnerMessage__Output): Promise<void> {
    if (!this.runners.isCurrent(name, session.sessionId)) return; // an older stream still talking
    switch (message.body) {
      case 'heartbeat':
        // Stored with the heartbeats of the next 200 ms (`HEARTBEAT_BATCHING`): the stream's
        // next messages do not wait for it. One that cannot be stored is logged; the next renews.
        Promise.all([this.runners.heartbeat(session), this.engine.heartbeat(name)]).catch((err: unknown) =>
          this.log.error({ err, runner: name }, 'a heartbeat could not be stored'),
        );
        return;
      case 'step':
      case 'log':
        await this.events(name, session, [message]);
        return;
      case 'artifact':
        if (message.artifact) await this.artifact(name, message.artifact);
        return;
      case 'result':
        if (message.result) await this.result(name, message.result);
        return;
      case 'draining':
        await this.runners.drain(session);
        this.log.info({ runner: name, reason: message.draining?.reason }, 'runner draining: no new work for it');
        return;
      case 'facts':
        if (message.facts) {
          const answer = decodeFactsResult(name, message.facts);
          this.options.metrics?.factsResults.inc({ result: answer.ok ? 'ok' : 'failed' });
          await this.facts.complete(name, answer);
        }
        return;
      case 'status':
        if (message.status && this.options.status) {
          const answer = decodeStatusResult(name, message.status);
          // Parsed and stored off the stream's queue: the events behind it do not wait.
          this.options.status.complete(name, answer).catch((err: unknown) => this.log.error({ err, runner: name, clusterId: answer.clusterId }, 'a status answer could not be recorded'));
        }
        return;
      case 'hello':
        throw new ProtocolError('hello may only be sent once');
      case undefined:
        this.log.warn({ runner: name }, 'ignored a runner message of a kind this control plane does not know');
        return;
    }
  }

  /**
   * Steps and log chunks, stored in one statement each and then acknowledged. A message that
   * does not decode ends the stream (ProtocolError) after those before it are stored.
   */
  private async events(name: string, session: RunnerSession, messages: readonly RunnerMessage__Output[]): Promise<void> {
    if (!this.runners.isCurrent(name, session.sessionId)) return;
    const steps: { executionId: string; seq: number; report: StepReport }[] = [];
    const logs: LogChunkInput[] = [];
    const acks: [executionId: string, seq: number][] = [];
    let refused: Error | null = null;
    for (const message of messages) {
      try {
        if (message.body === 'step' && message.step) {
          const { executionId, seq, report } = decodeStep(message.step);
          if (await this.holds(name, executionId)) steps.push({ executionId, seq, report });
          acks.push([executionId, seq]);
        } else if (message.body === 'log' && message.log) {
          const { executionId, seq, offset, text } = decodeLogChunk(message.log);
          if ((await this.holds(name, executionId)) && text.length > 0) logs.push({ executionId, offset, text });
          acks.push([executionId, seq]);
        }
      } catch (err) {
        refused = err instanceof Error ? err : new Error(String(err));
        break;
      }
    }
    const { logBytes } = await this.engine.recordEvents(steps, logs);
    if (logBytes > 0) this.options.metrics?.logBytes.inc(logBytes);
    for (const [executionId, seq] of acks) this.ack(name, executionId, seq);
    if (refused) throw refused;
  }

  // A file of the run, stored (never logged) until the result says whether it is used.
  private async artifact(name: string, message: RunArtifact): Promise<void> {
    const { executionId, seq, name: file, content } = decodeArtifact(message);
    if (await this.holds(name, executionId)) {
      const stored = await this.engine.recordArtifact(executionId, seq, file, content, ARTIFACT_LIMITS.maxFiles);
      if (stored === 'too_many') throw new ProtocolError(`an execution may hand back at most ${ARTIFACT_LIMITS.maxFiles} files`);
      if (stored === 'late') this.log.warn({ runner: name, executionId, artifact: file }, 'dropped a file of an execution that is over');
    }
    this.ack(name, executionId, seq);
  }

  private async result(name: string, message: RunResult): Promise<void> {
    const { executionId, seq, outcome, reason } = decodeResult(message);
    if (await this.holds(name, executionId)) {
      const done = await this.engine.finish(executionId, outcome, reason);
      if (done) this.log.info({ runner: name, executionId, state: done.data.state, reason: done.data.reason }, 'execution finished');
    }
    this.ack(name, executionId, seq);
    this.scheduleDispatch();
  }

  /** Whether the execution was handed to this runner; the events of others are dropped. */
  private async holds(name: string, executionId: string): Promise<boolean> {
    if (await this.engine.holds(name, executionId)) return true;
    this.log.warn({ runner: name, executionId }, 'dropped an event of an execution this runner does not hold');
    return false;
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

  /** Writes to a runner's stream, in order, waiting for `drain` when it is full; false when the runner has no stream. */
  private write(name: string, message: ControlMessage): boolean {
    return this.streams.get(name)?.writer.write(message) ?? false;
  }

  private scheduleDispatch(): void {
    this.passes.schedule();
  }

  private async dispatchOnce(): Promise<void> {
    const sessions = this.runners.connected().filter((s) => this.streams.has(s.name));
    for (const item of await this.work.take(sessions)) {
      switch (item.kind) {
        case 'assignment': {
          // A runner that does not know previews would ignore check_mode (and run for real) and limit_hosts.
          if ((item.assignment.checkMode || item.assignment.limitHosts.length > 0) && !this.streams.get(item.runner)?.capabilities.has(PREVIEW_CAPABILITY)) {
            const reason = `runner ${item.runner} cannot run previews nor relaunches of failed hosts (it is older than this control plane): upgrade it`;
            this.log.warn({ runner: item.runner, executionId: item.assignment.execution.id }, 'preview refused by an older runner');
            await this.engine.finish(item.assignment.execution.id, 'failed', reason);
            break;
          }
          const sent = this.write(item.runner, assignmentMessage(item.assignment));
          this.options.metrics?.dispatched.inc();
          this.log.info({ runner: item.runner, executionId: item.assignment.execution.id, sent }, 'execution assigned');
          break;
        }
        case 'facts':
          this.write(item.runner, gatherFactsMessage(item.request));
          break;
        case 'status':
          this.write(item.runner, collectStatusMessage(item.request));
          break;
        default:
          assertNever(item);
      }
    }
    // After the executions are sent: collections never delay one.
    for (const item of await this.work.takeStatus(sessions)) {
      if (item.kind === 'status') this.write(item.runner, collectStatusMessage(item.request));
    }
  }
}
