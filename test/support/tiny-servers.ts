import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';

/** A local HTTP server with a handler of the test's own; closes its connections on stop. */
export class TinyServer {
  private readonly sockets = new Set<Socket>();
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  /** Starts a server on 127.0.0.1, port 0. */
  static async start(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<TinyServer> {
    const server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const tiny = new TinyServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return tiny;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A URL where nothing listens: a port that was just bound and released. */
export async function closedPortUrl(): Promise<string> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
