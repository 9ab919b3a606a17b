import type { ServerFacts } from '@carapace/models';
import { createRunnerClient, grpc, KEEPALIVE_OPTIONS, PROTOCOL_VERSION, startHeartbeats, type ControlMessage__Output, type Heartbeats, type RunnerMessage } from '@carapace/protocol';

/** One execution as a simulated runner saw it. */
export interface SimulatedRun {
  readonly executionId: string;
  readonly runner: string;
  /** The servers of the assignment (its inventory hosts' server ids). */
  readonly serverIds: readonly string[];
  /** When the assignment arrived and when the result was sent (performance.now()). */
  readonly assignedAt: number;
  finishedAt: number | null;
}

/** How a simulated runner behaves. */
export interface SimulatedRunnerOptions {
  readonly name: string;
  readonly token: string;
  /** Control-plane gRPC addresses (`host:port`), tried in turn when a stream fails. */
  readonly addresses: readonly string[];
  readonly slots?: number;
  /** How long a run takes before its result (ms); 0 ends it at once. */
  readonly runMs?: number | (() => number);
  /** Steps and log chunks each run reports before its result. */
  readonly steps?: number;
  readonly logChunks?: number;
  /** Log chunks go out one every `logEveryMs` while the run lasts (default: all at once). */
  readonly logEveryMs?: number;
  /** The facts of the host at `address`, sent when asked to gather them; without it, such a request is answered with an error. */
  readonly facts?: (address: string) => ServerFacts;
  /**
   * How long gathering facts takes before the answer (ms, default 0), sent on the stream open
   * then (another replica's, after a failover); `Infinity`: never answers.
   */
  readonly factsMs?: number;
  /** Heartbeat period (ms); the control plane's welcome says the real one. */
  readonly heartbeatMs?: number;
}

/**
 * A runner that speaks the real protocol (a gRPC client of `RunnerService.Connect`) and runs
 * nothing: each assignment reports a few steps and log lines and completes after `runMs`.
 * For tests and benchmarks of the control plane's side at scale (many runners, many
 * executions, several replicas). Events are numbered per execution as a real runner's are,
 * and resent after a reconnect until acknowledged.
 */
export class SimulatedRunner {
  readonly runs = new Map<string, SimulatedRun>();
  /** Executions assigned more than once to this runner (must stay empty). */
  readonly duplicates: string[] = [];
  /** The facts requests received, in order. */
  readonly factsRequests: { readonly requestId: string; readonly serverId: string; readonly at: number }[] = [];
  welcomed = false;
  connects = 0;
  private client: ReturnType<typeof createRunnerClient> | null = null;
  private call: grpc.ClientDuplexStream<RunnerMessage, ControlMessage__Output> | null = null;
  private heartbeats: Heartbeats | null = null;
  private next = 0;
  private closed = false;
  /** Events not acknowledged yet, by execution, in order. */
  private readonly unacked = new Map<string, { seq: number; message: RunnerMessage }[]>();
  private readonly seqs = new Map<string, number>();
  private readonly waiters = new Set<() => void>();
  /** Runs under way (not yet resulted). */
  private readonly active = new Set<string>();

  constructor(private readonly options: SimulatedRunnerOptions) {}

  get name(): string {
    return this.options.name;
  }

  /** Opens the stream and says hello; resolves once welcomed. */
  async start(timeoutMs = 10_000): Promise<void> {
    this.connect();
    await this.until(() => this.welcomed, timeoutMs, `${this.name} welcomed`);
  }

  /** The executions whose result was sent. */
  finished(): SimulatedRun[] {
    return [...this.runs.values()].filter((r) => r.finishedAt !== null);
  }

  /** Waits until `check` holds. */
  async until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const done = () => {
          this.waiters.delete(done);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(done, 50);
        this.waiters.add(done);
      });
    }
  }

  close(): void {
    this.closed = true;
    this.drop();
  }

  /** Whether every event was acknowledged. */
  settled(): boolean {
    return [...this.unacked.values()].every((list) => list.length === 0);
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  private connect(): void {
    if (this.closed) return;
    const address = this.options.addresses[this.next++ % this.options.addresses.length] ?? '';
    this.connects += 1;
    this.welcomed = false;
    // The real runner's keepalive (pings every 20 s): 1,000 of them cost the control plane
    // what real runners would.
    const client = createRunnerClient(address, grpc.credentials.createInsecure(), KEEPALIVE_OPTIONS);
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${this.options.token}`);
    const call = client.Connect(md);
    this.client = client;
    this.call = call;
    call.on('data', (m: ControlMessage__Output) => this.receive(m));
    const lost = () => {
      if (this.call !== call) return;
      this.drop();
      if (!this.closed) setTimeout(() => this.connect(), 100);
    };
    call.on('error', lost);
    call.on('end', lost);
    call.write({
      hello: {
        protocol_version: PROTOCOL_VERSION,
        name: this.name,
        version: 'simulated',
        labels: {},
        slots: this.options.slots ?? 1,
        running_execution_ids: [...this.active],
        ssh_public_key: 'ssh-ed25519 AAAAsimulated',
      },
    });
  }

  private drop(): void {
    this.heartbeats?.stop();
    this.heartbeats = null;
    const call = this.call;
    const client = this.client;
    this.call = null;
    this.client = null;
    call?.end();
    call?.cancel();
    client?.close();
    this.wake();
  }

  private receive(m: ControlMessage__Output): void {
    switch (m.body) {
      case 'welcome': {
        this.welcomed = true;
        const period = this.options.heartbeatMs ?? m.welcome?.heartbeat_interval_ms ?? 5000;
        this.heartbeats = startHeartbeats(() => this.call?.write({ heartbeat: { free_slots: 0 } }), period);
        for (const abandoned of m.welcome?.abandoned_execution_ids ?? []) {
          this.active.delete(abandoned);
          this.unacked.delete(abandoned);
        }
        // Whatever the previous stream did not acknowledge goes again, in order.
        for (const list of this.unacked.values()) for (const { message } of list) this.call?.write(message);
        break;
      }
      case 'assignment': {
        const a = m.assignment;
        if (!a) break;
        if (this.runs.has(a.execution_id)) {
          this.duplicates.push(a.execution_id);
          break;
        }
        const run: SimulatedRun = {
          executionId: a.execution_id,
          runner: this.name,
          serverIds: Object.values(a.server_ids ?? {}),
          assignedAt: performance.now(),
          finishedAt: null,
        };
        this.runs.set(a.execution_id, run);
        this.active.add(a.execution_id);
        const runMs = typeof this.options.runMs === 'function' ? this.options.runMs() : (this.options.runMs ?? 0);
        this.report(run, runMs);
        break;
      }
      case 'ack': {
        const ack = m.ack;
        if (!ack) break;
        const list = this.unacked.get(ack.execution_id);
        if (!list) break;
        const seq = Number(ack.seq);
        while (list.length > 0 && (list[0]?.seq ?? Infinity) <= seq) list.shift();
        if (list.length === 0 && !this.active.has(ack.execution_id)) this.unacked.delete(ack.execution_id);
        break;
      }
      case 'gather_facts': {
        const g = m.gather_facts;
        if (!g) break;
        this.factsRequests.push({ requestId: g.request_id, serverId: g.server_id, at: performance.now() });
        const facts = this.options.facts?.(g.address);
        const answer = () =>
          this.call?.write({
            facts: {
              request_id: g.request_id,
              server_id: g.server_id,
              facts_json: facts ? JSON.stringify(facts) : '',
              host_key: facts ? 'ssh-ed25519 AAAAsimulatedhost' : '',
              error: facts ? '' : 'this simulated runner gathers no facts',
            },
          });
        const delay = this.options.factsMs ?? 0;
        if (delay <= 0) answer();
        else if (Number.isFinite(delay)) setTimeout(answer, delay).unref();
        break;
      }
      case 'cancel': {
        const id = m.cancel?.execution_id;
        const run = id ? this.runs.get(id) : undefined;
        if (run && run.finishedAt === null) this.result(run, 'canceled');
        break;
      }
      default:
        break;
    }
    this.wake();
  }

  private send(executionId: string, build: (seq: number) => RunnerMessage): void {
    const seq = (this.seqs.get(executionId) ?? 0) + 1;
    this.seqs.set(executionId, seq);
    const message = build(seq);
    let list = this.unacked.get(executionId);
    if (!list) {
      list = [];
      this.unacked.set(executionId, list);
    }
    list.push({ seq, message });
    this.call?.write(message);
  }

  private report(run: SimulatedRun, runMs: number): void {
    const id = run.executionId;
    const host = run.serverIds[0] ?? '';
    let offset = 0;
    const chunks = this.options.logChunks ?? 1;
    const every = this.options.logEveryMs ?? 0;
    for (let i = 0; i < chunks; i++) {
      const text = `TASK [simulated : step ${i}] ok: [${host}]\n`;
      const at = offset;
      const chunk = () => this.send(id, (seq) => ({ log: { execution_id: id, seq, offset: at, text } }));
      if (every > 0) setTimeout(chunk, i * every);
      else chunk();
      offset += text.length;
    }
    if (every > 0) runMs = Math.max(runMs, chunks * every);
    const now = Date.now() / 1000;
    for (let i = 0; i < (this.options.steps ?? 1); i++) {
      this.send(id, (seq) => ({
        step: { execution_id: id, seq, host, role: 'simulated', name: `step ${i}`, result: 'ok', error_json: '{}', time_started: now, time_finished: now },
      }));
    }
    if (runMs <= 0) this.result(run, 'completed');
    else setTimeout(() => this.result(run, 'completed'), runMs);
  }

  private result(run: SimulatedRun, outcome: 'completed' | 'canceled'): void {
    if (run.finishedAt !== null) return;
    run.finishedAt = performance.now();
    this.active.delete(run.executionId);
    const id = run.executionId;
    this.send(id, (seq) => ({ result: { execution_id: id, seq, outcome, reason: '' } }));
    this.wake();
  }
}
