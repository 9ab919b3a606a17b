import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP relay on 127.0.0.1 in front of a real server, to fail that server the hard way as a
 * peer sees it: `freeze()` stops relaying in both directions (what the client sends is never
 * read: a hung replica), `kill()` resets every connection and stops listening (a replica
 * killed with SIGKILL: connections reset, new ones refused).
 */
export class TcpProxy {
  private readonly pairs = new Set<readonly [Socket, Socket]>();
  private frozen = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Listens on a free port of 127.0.0.1 and relays each connection to `127.0.0.1:targetPort`. */
  static async start(targetPort: number): Promise<TcpProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const proxy = new TcpProxy(server, (server.address() as AddressInfo).port);
    server.on('connection', (client) => proxy.relay(client, targetPort));
    return proxy;
  }

  /** `127.0.0.1:<port>`. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Stops relaying: bytes stay unread on both sides, as with a process that hangs. */
  freeze(): void {
    this.frozen = true;
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** Resets every connection (RST) and stops listening: later connections are refused. */
  async kill(): Promise<void> {
    for (const [client, upstream] of this.pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    this.pairs.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: Socket, targetPort: number): void {
    if (this.frozen) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    const pair = [client, upstream] as const;
    this.pairs.add(pair);
    const drop = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}

/** A port of 127.0.0.1 where nothing listens: connections to it are refused. */
export async function refusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
