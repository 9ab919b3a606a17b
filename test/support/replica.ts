import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import {
  buildApp,
  createContainer,
  createLogger,
  loadConfig,
  openDatabase,
  startGrpcServer,
  type Config,
  type Container,
  type ContainerPorts,
  type Database,
  type GrpcServer,
} from '@carapace/control-plane';
import { ROOT_PASSWORD } from './harness.js';

export const REPLICA_DISCOVERY_TOKEN = 'replica-discovery-token-0123456789';
/** The secrets key of every replica of this process (replicas of one database must share it). */
export const REPLICA_SECRETS_KEY = randomBytes(32).toString('base64');

/**
 * One control-plane replica in this process, as `main` starts it but on free ports: its own
 * database pool and bus on a shared database (a `postgres://` URL), the HTTP API, the runner
 * gRPC port and the background work (lease sweep, facts). Several of them on one URL are the
 * replicas of one installation.
 */
export class Replica {
  app!: FastifyInstance;
  container!: Container;
  config!: Config;
  db!: Database;
  grpc!: GrpcServer;
  url = '';
  grpcAddress = '';
  private stopBackground: () => void = () => undefined;
  private dir = '';
  private stopped = false;

  /** `ports`: what the container is given besides (a facts answer timeout, ...). */
  static async start(databaseUrl: string, env: Record<string, string> = {}, ports: ContainerPorts = {}): Promise<Replica> {
    const r = new Replica();
    r.dir = mkdtempSync(join(tmpdir(), 'carapace-replica-'));
    r.config = loadConfig({
      env: {
        CARAPACE_DATA_DIR: r.dir,
        CARAPACE_DATABASE_URL: databaseUrl,
        CARAPACE_ADMIN_PASSWORD: ROOT_PASSWORD,
        CARAPACE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
        CARAPACE_DISCOVERY_TOKEN: REPLICA_DISCOVERY_TOKEN,
        CARAPACE_RUNNER: 'none',
        // Replicas of one database share its secrets key (each has a data directory of its own).
        CARAPACE_SECRETS_KEY: REPLICA_SECRETS_KEY,
        CARAPACE_GRPC_PORT: '0',
        CARAPACE_THROTTLE_LOGIN_DELAY_BASE_MS: '0',
        ...env,
      },
    });
    const logger = createLogger(r.config.logLevel);
    r.db = await openDatabase(databaseUrl, { poolSize: r.config.database.poolSize });
    // Without an SMTP server (CARAPACE_SMTP_PORT) mail is dropped; with one, the outbox of
    // the shared database delivers it through whichever replica takes it first.
    const mailer = env.CARAPACE_SMTP_PORT ? {} : { mailer: { send: async () => undefined, close: async () => undefined } };
    r.container = await createContainer(r.config, r.db, logger, { ...mailer, ...ports });
    r.grpc = await startGrpcServer(r.config, r.container.services, logger);
    r.grpcAddress = `127.0.0.1:${r.grpc.port}`;
    r.stopBackground = await r.container.startBackground();
    r.app = await buildApp({ services: r.container.services, logger });
    await r.app.listen({ host: '127.0.0.1', port: 0 });
    r.url = `http://127.0.0.1:${(r.app.server.address() as AddressInfo).port}`;
    return r;
  }

  /** Stops as `main` does on SIGTERM. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopBackground();
    await this.grpc.close();
    await this.app.close();
    await this.container.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Dies as a killed process would, as far as one process can play it: the runner streams
   * and the HTTP connections are cut at once, and nothing more is written to the database.
   */
  async crash(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopBackground();
    this.grpc.kill();
    this.app.server.closeAllConnections();
    await this.app.close();
    await this.container.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A JSON request with root's token. */
  async api(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; json: any }> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, json };
  }

  /** Logs in as root; returns the token. */
  async login(): Promise<string> {
    const res = await this.api('POST', '/v1/auth/', { username: 'root', password: ROOT_PASSWORD });
    if (res.status !== 200) throw new Error(`login: ${res.status} ${JSON.stringify(res.json)}`);
    return (res.json as { id: string }).id;
  }
}
