import { join } from 'node:path';
import type { Logger } from 'pino';
import { createRunnerClient, grpc, KEEPALIVE_OPTIONS, PROTOCOL_VERSION, startHeartbeats, type ControlMessage__Output, type Heartbeats, type RunnerMessage } from '@carapace/protocol';
import { Outbox } from '../outbox.js';
import { assertNever, StateMachine } from '../state-machine.js';
import type { AgentOptions, AgentTelemetry, ControlCommand, ExecutionEvent, FactsAnswer, StatusAnswer } from './agent.types.js';
import { backoffMs, LONGEST_ATTEMPT } from './backoff.js';
import { decodeControl, encodeEvent, encodeFacts, encodeStatus } from './wire-codec.js';

/**
 * Refusals: a revoked token, a wrong name, an unknown protocol will not heal in
 * milliseconds, so they are retried at the longest delay instead of hammering the control
 * plane. Every other status is retried with the growing backoff.
 */
export const REFUSAL_CODES: ReadonlySet<grpc.status> = new Set([
  grpc.status.UNAUTHENTICATED,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.FAILED_PRECONDITION,
]);

/** What the session asks of, and hands to, the agent. */
export interface SessionOwner {
  /** What the hello says: slots offered (0 while draining) and the executions under way. */
  hello(): { readonly slots: number; readonly runningExecutionIds: readonly string[] };
  /** Free slots, for the heartbeat. */
  freeSlots(): number;
  /** Whether the agent drains: said again after every reconnect. */
  readonly draining: boolean;
  /** The control plane no longer wants these executions (it failed them while we were away). */
  abandoned(executionId: string): void;
  command(command: ControlCommand): void;
}

type Link = 'idle' | 'connecting' | 'connected' | 'backoff' | 'closed';

const LINKS: Readonly<Record<Link, readonly Link[]>> = {
  idle: ['connecting', 'closed'],
  connecting: ['connected', 'backoff', 'closed'],
  connected: ['backoff', 'closed'],
  backoff: ['connecting', 'closed'],
  closed: [],
};

type Call = grpc.ClientDuplexStream<RunnerMessage, ControlMessage__Output>;
type Client = ReturnType<typeof createRunnerClient>;

/**
 * The agent's one `RunnerService.Connect` stream: hello and welcome, numbered events kept in
 * the outbox until acknowledged and resent after a reconnect, heartbeats, writes that wait
 * for `drain`, and reconnection with capped exponential backoff and jitter. With several
 * control-plane addresses (replicas on one database), a stream that fails or cannot be opened
 * moves the next attempt to the next address, round robin; the hello there names the runs
 * this runner holds and every unacknowledged event is resent, as after any reconnect. The
 * only part of the agent that sees proto messages (through wire-codec.ts).
 */
export class StreamSession {
  readonly stats = { connects: 0, resent: 0 };
  private readonly link: StateMachine<Link>;
  private readonly outbox: Outbox;
  private readonly addresses: readonly string[];
  /** The address of the current attempt or stream: `addresses[next]`. */
  private next = 0;
  /** The channel to `clientAddress`; replaced when the session moves to another address. */
  private client: Client | null = null;
  private clientAddress: string | null = null;
  /** The address of the welcomed stream, or null. */
  private connectedTo: string | null = null;
  private call: Call | null = null;
  private attempt = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private heartbeats: Heartbeats | null = null;
  private writeQueue: RunnerMessage[] = [];
  private writable = true;

  constructor(
    private readonly options: AgentOptions,
    private readonly owner: SessionOwner,
    private readonly log: Logger,
    private readonly telemetry: AgentTelemetry,
  ) {
    if (options.controlPlanes.length === 0) throw new Error('the agent needs at least one control-plane address');
    this.addresses = [...options.controlPlanes];
    this.link = new StateMachine<Link>('stream', 'idle', LINKS, log);
    this.outbox = new Outbox(join(options.workDir, 'outbox'), options.outboxMemoryBytes);
  }

  /** Unacknowledged events. */
  get pendingEvents(): number {
    return this.outbox.pending;
  }

  /** Bytes of the unacknowledged events kept in memory. */
  get pendingMemoryBytes(): number {
    return this.outbox.bytesInMemory;
  }

  /** The control-plane address the stream is connected to (welcomed), or null. */
  get controlPlane(): string | null {
    return this.connectedTo;
  }

  /** Resolves once every event is acknowledged. */
  delivered(): Promise<void> {
    return this.outbox.drained();
  }

  open(): void {
    this.connect();
  }

  close(): void {
    if (this.link.state === 'closed') return;
    this.link.transition('closed');
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.stopHeartbeat();
    this.connectedTo = null;
    this.call?.end();
    this.call?.cancel();
    this.call = null;
    this.client?.close();
    this.client = null;
  }

  /** Drops the stream as a network failure would (tests of reconnection). */
  interrupt(): void {
    this.call?.cancel();
  }

  /** Numbers an event of an execution, keeps it until acknowledged, and sends it when connected. */
  emit(executionId: string, event: ExecutionEvent): void {
    this.send(this.outbox.push(executionId, (seq) => encodeEvent(executionId, seq, event)));
  }

  answerFacts(answer: FactsAnswer): void {
    this.send(encodeFacts(answer));
  }

  answerStatus(answer: StatusAnswer): void {
    this.send(encodeStatus(answer));
  }

  /** Tells the control plane this runner takes no new work. */
  announceDraining(reason: string): void {
    this.send({ draining: { reason } });
  }

  /**
   * The channel to `address`. One address keeps one channel for good; moving to another
   * address closes the channel to the previous one, so that no idle channel keeps
   * reconnecting (and pinging) a replica the runner does not use.
   */
  private clientFor(address: string): Client {
    if (this.client && this.clientAddress === address) return this.client;
    this.client?.close();
    this.client = createRunnerClient(address, this.options.credentials, {
      ...KEEPALIVE_OPTIONS,
      // The channel has a reconnect backoff of its own (1 s growing to 120 s): while it waits,
      // every Connect fails at once, so after an outage of a minute the runner would come back
      // up to two minutes after the control plane did, whatever `reconnect` says. Bound it alike.
      'grpc.initial_reconnect_backoff_ms': this.options.reconnect.initialDelayMs,
      'grpc.max_reconnect_backoff_ms': this.options.reconnect.maxDelayMs,
    });
    this.clientAddress = address;
    return this.client;
  }

  private get address(): string {
    return this.addresses[this.next] ?? '';
  }

  private connect(): void {
    if (this.link.state === 'closed') return;
    const address = this.address;
    const client = this.clientFor(address);
    this.link.transition('connecting');
    this.log.debug({ controlPlane: address }, 'connecting to the control plane');
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${this.options.token}`);
    const call = client.Connect(metadata);
    this.call = call;
    this.writable = true;
    this.writeQueue = [];
    call.on('data', (message: ControlMessage__Output) => {
      if (this.call !== call) return;
      try {
        this.receive(message);
      } catch (err) {
        this.log.error({ err }, 'failed to handle a control-plane message');
      }
    });
    call.on('drain', () => {
      if (this.call !== call) return;
      this.writable = true;
      this.flushWrites();
    });
    call.on('error', (err: grpc.ServiceError) => this.lost(call, err.details || err.message, err.code));
    call.on('end', () => this.lost(call, 'stream ended by the control plane'));
    call.on('status', (status: grpc.StatusObject) => {
      if (status.code !== grpc.status.OK) this.lost(call, status.details, status.code);
    });
    const hello = this.owner.hello();
    this.write({
      hello: {
        protocol_version: PROTOCOL_VERSION,
        name: this.options.name,
        version: this.options.version,
        labels: { ...this.options.labels },
        slots: hello.slots,
        // Also the runs that ended while the stream was down: their results are still to be
        // resent, and the control plane fails every run of this runner that is not named here.
        running_execution_ids: [...new Set([...hello.runningExecutionIds, ...this.outbox.executionIds])],
        ssh_public_key: this.options.sshPublicKey,
        // honours Assignment.check_mode (previews) and limit_hosts (relaunches of failed hosts)
        capabilities: ['preview'],
      },
    });
  }

  private lost(call: Call, why: string, code?: number): void {
    if (this.call !== call) return;
    this.call = null;
    this.connectedTo = null;
    this.stopHeartbeat();
    if (this.link.state === 'closed') return;
    const failed = this.address;
    this.telemetry.streamFailed(failed);
    // The next attempt goes to the next replica; with one address, to the same one.
    this.next = (this.next + 1) % this.addresses.length;
    const refused = code !== undefined && REFUSAL_CODES.has(code);
    const delayMs = backoffMs(refused ? LONGEST_ATTEMPT : this.attempt++, this.options.reconnect.initialDelayMs, this.options.reconnect.maxDelayMs);
    (refused ? this.log.error.bind(this.log) : this.log.warn.bind(this.log))(
      { controlPlane: failed, why, code, retryInMs: delayMs, ...(this.addresses.length > 1 ? { next: this.address } : {}) },
      'stream to the control plane lost',
    );
    this.link.transition('backoff');
    this.reconnectTimer = setTimeout(() => this.connect(), delayMs);
  }

  private receive(message: ControlMessage__Output): void {
    const decoded = decodeControl(message);
    // Nothing but the welcome counts before the welcome.
    if (this.link.state === 'connecting') {
      if (decoded.kind === 'welcome') this.welcome(decoded.heartbeatIntervalMs, decoded.abandoned);
      return;
    }
    if (this.link.state !== 'connected') return;
    switch (decoded.kind) {
      case 'command':
        this.owner.command(decoded.command);
        return;
      case 'ack':
        this.outbox.ack(decoded.executionId, decoded.seq);
        return;
      case 'welcome':
      case 'none':
        return;
      case 'unknown':
        this.log.warn('ignored a control-plane message of a kind this runner does not know');
        return;
      default:
        assertNever(decoded);
    }
  }

  private welcome(heartbeatIntervalMs: number, abandoned: readonly string[]): void {
    this.attempt = 0;
    this.stats.connects += 1;
    this.link.transition('connected');
    this.connectedTo = this.address;
    this.telemetry.connected(this.connectedTo, this.stats.connects > 1);
    if (this.owner.draining) this.announceDraining('runner shutting down');
    this.log.info({ controlPlane: this.connectedTo, running: this.owner.hello().runningExecutionIds }, 'connected to the control plane');
    for (const id of abandoned) {
      this.owner.abandoned(id);
      this.outbox.drop(id);
    }
    let resent = 0;
    for (const event of this.outbox.unacked()) {
      this.write(event);
      resent += 1;
    }
    this.stats.resent += resent;
    if (resent) {
      this.telemetry.resent(resent);
      this.log.info({ controlPlane: this.connectedTo, resent }, 'resent unacknowledged events');
    }
    this.stopHeartbeat();
    const interval = Math.max(100, heartbeatIntervalMs || 5000);
    this.heartbeats = startHeartbeats(() => this.send({ heartbeat: { free_slots: this.owner.freeSlots() } }), interval);
  }

  private stopHeartbeat(): void {
    this.heartbeats?.stop();
    this.heartbeats = null;
  }

  /** Sends when connected; events stay in the outbox otherwise and go after reconnecting. */
  private send(message: RunnerMessage): void {
    if (this.link.state !== 'connected') return;
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
