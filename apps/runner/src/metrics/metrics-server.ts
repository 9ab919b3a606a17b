import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ListenAddress } from '../config.js';

/** The path Prometheus scrapes. */
export const METRICS_PATH = '/metrics';

/** A listening metrics endpoint. */
export interface MetricsServer {
  /** Where it listens (the port the system chose when asked for port 0). */
  readonly address: ListenAddress;
  /** Stops listening and closes open connections (a scraper's keep-alive ones too). */
  close(): Promise<void>;
}

/**
 * Serves `registry` as Prometheus text at `GET /metrics` (and `HEAD`) on `listen`, with
 * node:http alone: any other path answers 404, another method on `/metrics` 405. Rejects
 * when it cannot listen (address in use, no such address).
 */
export async function startMetricsServer(listen: ListenAddress, registry: Registry, log: Logger): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    serve(req, res, registry).catch((err: unknown) => {
      log.error({ err }, 'cannot answer a metrics request');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('cannot collect the metrics\n');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: listen.host, port: listen.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => log.error({ err }, 'metrics server error'));
  const bound = server.address() as AddressInfo;
  const address = { host: listen.host, port: bound.port };
  log.info({ host: address.host, port: address.port, path: METRICS_PATH }, 'metrics endpoint listening');
  let closing: Promise<void> | null = null;
  return {
    address,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

async function serve(req: IncomingMessage, res: ServerResponse, registry: Registry): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== METRICS_PATH) {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
    return;
  }
  const body = await registry.metrics();
  res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : body);
}
