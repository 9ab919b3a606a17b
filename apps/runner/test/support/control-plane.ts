import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
// The control plane's test harness and its gRPC server: a real in-memory SQLite control
// plane, in this process, that the real agent talks to over a real gRPC stream.
import { createLogger, startGrpcServer, type GrpcServer } from '@carapace/control-plane';
import { grpc } from '@carapace/protocol';
import { addServer } from '@carapace/test-support/facts';
import { eventually } from '@carapace/test-support/eventually';
import { Harness } from '@carapace/test-support/harness';
import { RunnerAgent, type AgentOptions, type AgentPorts } from '../../src/agent/index.js';
import { loadRunnerConfig } from '../../src/config.js';
import type { MetricsServer } from '../../src/metrics/index.js';
import { startRunner } from '../../src/start-runner.js';

const TEST_PUBLIC_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIRunnerKeyForAgentTests carapace-runner';

/** Log lines of an agent, parsed. */
export class RecordedLog {
  readonly lines: { level: number; msg: string; [key: string]: unknown }[] = [];
  readonly logger = pino({ level: 'debug' }, { write: (line: string) => this.lines.push(JSON.parse(line)) });

  count(msg: string): number {
    return this.lines.filter((l) => l.msg === msg).length;
  }
}

/** An agent under test with its log. */
export interface TestAgent {
  readonly agent: RunnerAgent;
  readonly name: string;
  readonly log: RecordedLog;
}

/** A runner started from its configuration (`startRunner`), with its metrics endpoint if configured. */
export interface TestRunner extends TestAgent {
  readonly metrics: MetricsServer | null;
}

/** An execution created through the API, on a server of its own. */
export interface TestExecution {
  readonly id: string;
  readonly serverId: string;
  readonly ip: string;
}

/**
 * A control plane (the control plane's test `Harness`) with its gRPC server on 127.0.0.1
 * port 0, and helpers to issue runner tokens, start real agents against it, create
 * executions and read what the control plane stored.
 */
export class ControlPlaneBed {
  h!: Harness;
  grpc: GrpcServer | null = null;
  port = 0;
  root = '';
  clusterId = '';
  private readonly agents: RunnerAgent[] = [];
  private readonly replicas: GrpcServer[] = [];
  private readonly dirs: string[] = [];
  private readonly grpcLog = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');

  /** `env`: more of the control plane's settings (environment variables). */
  static async start(env: Record<string, string> = {}): Promise<ControlPlaneBed> {
    const bed = new ControlPlaneBed();
    bed.h = await Harness.start({ CARAPACE_GRPC_PORT: '0', ...env });
    bed.root = await bed.h.rootToken();
    const cluster = await bed.h.request('POST', '/v1/cluster/', { token: bed.root, body: { name: 'agent-tests' } });
    if (cluster.status !== 200) throw new Error(`cluster: ${cluster.status} ${cluster.body}`);
    bed.clusterId = cluster.json.id;
    await bed.openGrpc();
    return bed;
  }

  /** Starts the gRPC server: on a free port the first time, then on the same port again. */
  async openGrpc(): Promise<void> {
    if (this.grpc) throw new Error('the gRPC server is open already');
    const config = { ...this.h.config, grpc: { ...this.h.config.grpc, port: this.port } };
    this.grpc = await startGrpcServer(config, this.h.container.services, this.grpcLog);
    this.port = this.grpc.port;
  }

  /**
   * Starts another gRPC server on a free port over the same container and database: a second
   * control-plane replica, as far as runners can tell. Closed by `stop()`.
   */
  async openReplica(): Promise<GrpcServer> {
    const config = { ...this.h.config, grpc: { ...this.h.config.grpc, port: 0 } };
    const replica = await startGrpcServer(config, this.h.container.services, this.grpcLog);
    this.replicas.push(replica);
    return replica;
  }

  /** Stops the gRPC server (its streams end), as a control-plane restart does. */
  async closeGrpc(): Promise<void> {
    const server = this.grpc;
    this.grpc = null;
    await server?.close();
  }

  async stop(): Promise<void> {
    for (const agent of this.agents.splice(0)) agent.stop();
    await Promise.all(this.replicas.splice(0).map((replica) => replica.close()));
    await this.closeGrpc();
    await this.h.stop();
    for (const dir of this.dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  }

  /** `127.0.0.1:<port>` of the gRPC server. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Issues a runner token (POST /v1/runner/). */
  private async issueToken(name: string): Promise<string> {
    const issued = await this.h.request('POST', '/v1/runner/', { token: this.root, body: { name, labels: { site: 'test' } } });
    if (issued.status !== 200) throw new Error(`runner ${name}: ${issued.status} ${issued.body}`);
    return issued.json.token;
  }

  private workDir(): string {
    const workDir = mkdtempSync(join(tmpdir(), 'carapace-agent-'));
    this.dirs.push(workDir);
    return workDir;
  }

  /**
   * Issues a runner token and starts a runner the way `carapace-runner` does: its
   * configuration read by `loadRunnerConfig` from `CARAPACE_RUNNER_*` variables (`env` over
   * this bed's defaults: its gRPC address, a fresh work dir, quick reconnects), then
   * `startRunner` with the given ports.
   */
  async startRunner(name: string, ports: AgentPorts, env: Record<string, string> = {}): Promise<TestRunner> {
    const token = await this.issueToken(name);
    const workDir = this.workDir();
    const config = loadRunnerConfig({
      env: {
        CARAPACE_RUNNER_URL: this.address,
        CARAPACE_RUNNER_TOKEN: token,
        CARAPACE_RUNNER_WORK_DIR: workDir,
        CARAPACE_RUNNER_SSH_KEY: join(workDir, 'id_ed25519'),
        CARAPACE_RUNNER_RECONNECT_INITIAL_MS: '20',
        CARAPACE_RUNNER_RECONNECT_MAX_MS: '200',
        ...env,
      },
    });
    const log = new RecordedLog();
    const { agent, metrics } = await startRunner(config, { ports, log: log.logger, sshPublicKey: TEST_PUBLIC_KEY });
    this.agents.push(agent);
    return { agent, name, log, metrics };
  }

  /** Issues a runner token (POST /v1/runner/) and starts a real agent with it. */
  async agent(name: string, ports: AgentPorts, options: Partial<AgentOptions> = {}): Promise<TestAgent> {
    const token = await this.issueToken(name);
    const workDir = this.workDir();
    const log = new RecordedLog();
    const agent = new RunnerAgent(
      {
        controlPlanes: [this.address],
        credentials: grpc.credentials.createInsecure(),
        token,
        name,
        version: '0.1.0-test',
        labels: { zone: 'a' },
        slots: 2,
        sshPublicKey: TEST_PUBLIC_KEY,
        workDir,
        drainGraceMs: 30_000,
        reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
        outboxMemoryBytes: 1024 * 1024,
        logFlushMs: 10,
        ...options,
      },
      ports,
      log.logger,
    );
    this.agents.push(agent);
    agent.start();
    return { agent, name, log };
  }

  /** Creates a hello_world execution on a newly registered server (POST /v1/execution/). */
  async execution(): Promise<TestExecution> {
    const server = await addServer(this.h);
    const config = await this.h.request('POST', '/v1/playbook_configuration/', {
      token: this.root,
      body: { name: `hello-${server.id.slice(-4)}`, cluster_id: this.clusterId, playbook_id: 'hello_world', server_ids: [server.id] },
    });
    if (config.status !== 200) throw new Error(`configuration: ${config.status} ${config.body}`);
    const created = await this.h.request('POST', '/v1/execution/', {
      token: this.root,
      body: { playbook_configuration: { id: config.json.id, version: config.json.version } },
    });
    if (created.status !== 200) throw new Error(`execution: ${created.status} ${created.body}`);
    return { id: created.json.id, serverId: server.id, ip: server.data.ip };
  }

  /** GET /v1/execution/{id}/. */
  async getExecution(id: string): Promise<any> {
    const res = await this.h.request('GET', `/v1/execution/${id}/`, { token: this.root });
    if (res.status !== 200) throw new Error(`execution ${id}: ${res.status} ${res.body}`);
    return res.json;
  }

  async state(id: string): Promise<string> {
    return (await this.getExecution(id)).data.state;
  }

  /** Waits until the execution is in `state`. */
  async until(id: string, state: string, timeoutMs = 5000): Promise<void> {
    let last = '';
    await eventually(`execution ${id} to be ${state}`, async () => (last = await this.state(id)) === state, timeoutMs).catch((err: Error) => {
      throw new Error(`${err.message} (it is ${last})`);
    });
  }

  /** The stored log, as plain text. */
  async log(id: string): Promise<string> {
    return (await this.h.request('GET', `/v1/execution/${id}/log/`, { token: this.root })).body;
  }

  /** The stored steps, in the order they ran. */
  async steps(id: string): Promise<any[]> {
    const res = await this.h.request('GET', `/v1/execution/${id}/steps/?all=true`, { token: this.root });
    if (res.status !== 200) throw new Error(`steps of ${id}: ${res.status} ${res.body}`);
    return res.json.items.map((s: any) => s.data);
  }

  /** The runner as GET /v1/runner/ lists it. */
  async runner(name: string): Promise<any> {
    const res = await this.h.request('GET', '/v1/runner/', { token: this.root });
    return res.json.items.find((r: { name: string }) => r.name === name);
  }

  async server(id: string): Promise<any> {
    return (await this.h.request('GET', `/v1/server/${id}/`, { token: this.root })).json;
  }
}
