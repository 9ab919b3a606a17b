import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { grpc } from '@carapace/protocol';
import { RunnerAgent, type AgentPorts } from './agent/index.js';
import { RunnerConfigError, type RunnerConfig } from './config.js';
import { RunnerMetrics, startMetricsServer, type MetricsServer } from './metrics/index.js';
import { VERSION } from './version.js';

/** What a runner needs beyond its configuration. */
export interface RunnerDeps {
  /** The side effects: `realPorts(config)` in production. */
  readonly ports: AgentPorts;
  readonly log: Logger;
  /** The public key of the runner's SSH key, shown by the control plane. */
  readonly sshPublicKey: string;
}

/** A started runner. */
export interface StartedRunner {
  readonly agent: RunnerAgent;
  /** The metrics endpoint, when `metricsListen` is set; it closes when the agent stops. */
  readonly metrics: MetricsServer | null;
}

function channelCredentials(config: RunnerConfig): grpc.ChannelCredentials {
  if (!config.tls.enabled) return grpc.credentials.createInsecure();
  const read = (f: string | null) => (f ? readFileSync(f) : null);
  return grpc.credentials.createSsl(read(config.tls.caFile), read(config.tls.keyFile), read(config.tls.certFile));
}

/**
 * Starts a runner as its configuration says: the agent, connecting to the control plane (to
 * each address in turn until one answers), and, with `metricsListen`, its metrics endpoint,
 * listening before the agent starts. Throws a `RunnerConfigError` when the endpoint cannot
 * listen (nothing is started then).
 */
export async function startRunner(config: RunnerConfig & { name: string }, deps: RunnerDeps): Promise<StartedRunner> {
  const metrics = config.metricsListen ? new RunnerMetrics({ name: config.name, version: VERSION, controlPlanes: config.controlPlanes }) : null;
  const agent = new RunnerAgent(
    {
      controlPlanes: config.controlPlanes,
      credentials: channelCredentials(config),
      token: config.token,
      name: config.name,
      version: VERSION,
      labels: config.labels,
      slots: config.slots,
      sshPublicKey: deps.sshPublicKey,
      workDir: config.workDir,
      drainGraceMs: config.drainGraceMs,
      reconnect: config.reconnect,
      outboxMemoryBytes: config.outboxMemoryBytes,
    },
    deps.ports,
    deps.log,
    metrics ?? undefined,
  );
  let server: MetricsServer | null = null;
  if (metrics && config.metricsListen) {
    metrics.watch(agent);
    const { host, port } = config.metricsListen;
    try {
      server = await startMetricsServer(config.metricsListen, metrics.registry, deps.log);
    } catch (e) {
      throw new RunnerConfigError(`cannot serve metrics on ${host.includes(':') ? `[${host}]` : host}:${port}: ${(e as Error).message}`);
    }
    const endpoint = server;
    void agent.stopped.then(() => endpoint.close());
  }
  deps.log.info({ controlPlanes: config.controlPlanes, slots: config.slots, publicKey: deps.sshPublicKey }, 'runner starting');
  agent.start();
  return { agent, metrics: server };
}
