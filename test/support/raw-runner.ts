import { createLogger, startGrpcServer, type GrpcServer } from '@carapace/control-plane';
import { createRunnerClient, grpc, type ControlMessage__Output, type RunnerMessage } from '@carapace/protocol';
import { Harness } from './harness.js';

/**
 * A runner spoken by hand: a raw stream to the real gRPC server. What the control plane sends
 * is kept in `received`, the stream's end in `status`; tests add the messages they write.
 */
export class RawRunnerStream {
  readonly received: ControlMessage__Output[] = [];
  status: grpc.StatusObject | null = null;
  readonly call: grpc.ClientDuplexStream<RunnerMessage, ControlMessage__Output>;
  private readonly client: ReturnType<typeof createRunnerClient>;

  constructor(port: number, token: string) {
    this.client = createRunnerClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${token}`);
    this.call = this.client.Connect(md);
    this.call.on('data', (m: ControlMessage__Output) => this.received.push(m));
    this.call.on('status', (s: grpc.StatusObject) => (this.status = s));
    this.call.on('error', () => undefined);
  }

  close(): void {
    this.call.end();
    this.client.close();
  }
}

/** A control plane with its gRPC server on a free port, a root token and one cluster named `clusterName`. */
export interface GrpcHarness {
  readonly h: Harness;
  readonly grpcServer: GrpcServer;
  readonly root: string;
  readonly clusterId: string;
}

export async function startGrpcHarness(clusterName: string): Promise<GrpcHarness> {
  const h = await Harness.start({ CARAPACE_GRPC_PORT: '0' });
  const root = await h.rootToken();
  const clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: clusterName } })).json.id;
  const grpcServer = await startGrpcServer(h.config, h.container.services, createLogger(h.config.logLevel));
  return { h, grpcServer, root, clusterId };
}

/** Issues a runner token through the API. */
export async function runnerToken(h: Harness, root: string, name: string): Promise<string> {
  return (await h.request('POST', '/v1/runner/', { token: root, body: { name } })).json.token;
}
