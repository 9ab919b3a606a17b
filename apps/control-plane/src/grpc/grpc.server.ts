import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { grpc, runnerServiceDefinition, SERVER_KEEPALIVE_OPTIONS } from '@carapace/protocol';
import type { Config } from '../config.js';
import type { AppServices } from '../app-services.js';
import { RunnerGateway } from './runner.gateway.js';

/** A listening gRPC server and its gateway. */
export interface GrpcServer {
  readonly port: number;
  readonly gateway: RunnerGateway;
  /** Stops taking streams, closes the open ones and waits for the server to stop. */
  close(): Promise<void>;
  /** Cuts every stream at once, as a dying process would. */
  kill(): void;
}

function credentials(config: Config['grpc']): grpc.ServerCredentials {
  if (!config.tlsCertFile || !config.tlsKeyFile) return grpc.ServerCredentials.createInsecure();
  const ca = config.tlsClientCaFile ? readFileSync(config.tlsClientCaFile) : null;
  return grpc.ServerCredentials.createSsl(
    ca,
    [{ cert_chain: readFileSync(config.tlsCertFile), private_key: readFileSync(config.tlsKeyFile) }],
    ca !== null,
  );
}

/** Starts `RunnerService` on the configured address (port 0 picks a free one). */
export async function startGrpcServer(config: Config, services: AppServices, log: Logger): Promise<GrpcServer> {
  const gateway = new RunnerGateway(services.runners, services.engine, services.dispatch, services.facts, log.child({ component: 'runners' }), {
    heartbeatIntervalMs: config.grpc.heartbeatIntervalMs,
    leaseTimeoutMs: config.grpc.leaseTimeoutMs,
    metrics: services.operations.metrics,
    status: services.status,
  });
  const server = new grpc.Server(SERVER_KEEPALIVE_OPTIONS);
  server.addService(runnerServiceDefinition(), gateway.handlers());
  const host = config.grpc.host.includes(':') ? `[${config.grpc.host}]` : config.grpc.host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${config.grpc.port}`, credentials(config.grpc), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  log.info({ host: config.grpc.host, port, tls: Boolean(config.grpc.tlsCertFile) }, 'gRPC server listening for runners');
  return {
    port,
    gateway,
    kill: () => {
      gateway.close();
      server.forceShutdown();
    },
    close: () =>
      new Promise<void>((resolve) => {
        gateway.close();
        const force = setTimeout(() => server.forceShutdown(), 5000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}
