/**
 * A server under test of the API benchmark, run as a child process of `api.bench.ts` (so
 * that the load generator does not share its event loop): `bare` is a bare Fastify whose
 * routes `GET` and `POST /twin/{name}` return a constant JSON body (the parent sets each to
 * the body Carapace answered the matching route with); `carapace` is the real control plane
 * over an on-disk SQLite database seeded with users and with servers carrying facts.
 * Reports its port, then its CPU time on request, over the IPC channel.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildApp, createContainer, createLogger, loadConfig, openDatabase, type Container } from '@carapace/control-plane';
import { ENV_ADMIN_PASSWORD, ENV_DATA_DIR, ENV_SERVERS, ENV_USERS, type ChildMessage, type ParentMessage, type ServerKind } from './protocol.js';
import { seedServers, seedUsers } from './seed.js';

function send(message: ChildMessage): void {
  process.send?.(message);
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

/** Constant bodies of the bare routes, by name (parsed once: Fastify serializes them per request, as any handler's result). */
const twins = new Map<string, unknown>();

async function startBare(): Promise<{ app: FastifyInstance; ready: ChildMessage }> {
  const app = Fastify({ logger: false, bodyLimit: 1024 * 1024 });
  const answer = (name: string): unknown => twins.get(name) ?? { ok: true, service: 'bare' };
  app.get<{ Params: { name: string } }>('/twin/:name', (request) => answer(request.params.name));
  app.post<{ Params: { name: string } }>('/twin/:name', (request) => answer(request.params.name));
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, ready: { type: 'ready', port: (app.server.address() as AddressInfo).port } };
}

async function startCarapace(): Promise<{ app: FastifyInstance; container: Container; ready: ChildMessage }> {
  const dataDir = required(ENV_DATA_DIR);
  const userCount = Number(required(ENV_USERS));
  const serverCount = Number(required(ENV_SERVERS));
  const config = loadConfig({
    env: {
      CARAPACE_DATA_DIR: dataDir,
      CARAPACE_ADMIN_PASSWORD: required(ENV_ADMIN_PASSWORD),
      CARAPACE_LOG_LEVEL: 'silent',
      CARAPACE_HTTP_HOST: '127.0.0.1',
      CARAPACE_HTTP_PORT: '0',
      CARAPACE_RUNNER: 'none',
      CARAPACE_TOKEN_TTL_S: '86400',
    },
  });
  const logger = createLogger('silent');
  const dbPath = join(config.dataDir, 'carapace.db');
  const db = await openDatabase(dbPath);
  const container = await createContainer(config, db, logger);
  const root = await container.services.users.byLogin('root');
  if (!root) throw new Error('bootstrap did not create root');
  let started = performance.now();
  const userIds = await seedUsers(db, userCount, root.id);
  const seedUsersMs = performance.now() - started;
  started = performance.now();
  const servers = await seedServers(db, container.services.servers, serverCount);
  const seedServersMs = performance.now() - started;
  // Fold the seeding into the database file, as a server running for a while would have;
  // nothing else (no ANALYZE): the server is measured as it ships.
  await db.all(sql`PRAGMA wal_checkpoint(TRUNCATE)`);
  const app = await buildApp({ services: container.services, logger });
  await app.listen({ host: config.http.host, port: config.http.port });
  const port = (app.server.address() as AddressInfo).port;
  return {
    app,
    container,
    ready: {
      type: 'ready',
      port,
      fixtures: {
        userId: userIds[Math.floor(userIds.length / 2)] ?? root.id,
        users: userCount + 1,
        serverIds: servers.ids.slice(0, 3),
        servers: serverCount,
        factsBytes: servers.factsBytes,
        seedUsersMs,
        seedServersMs,
        dbBytes: statSync(dbPath).size,
      },
    },
  };
}

async function run(kind: ServerKind): Promise<void> {
  const started = kind === 'bare' ? { ...(await startBare()), container: undefined } : await startCarapace();
  let stopping = false;
  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await started.app.close();
    await started.container?.close();
    process.exit(0);
  };
  process.on('message', (raw) => {
    const message = raw as ParentMessage;
    if (message.type === 'cpu') {
      const usage = process.cpuUsage();
      send({ type: 'cpu', seq: message.seq, userMicros: usage.user, systemMicros: usage.system, atMs: performance.now() });
    } else if (message.type === 'twin') {
      twins.set(message.name, JSON.parse(message.json));
      send({ type: 'twin-set', name: message.name });
    } else {
      void stop();
    }
  });
  // The parent is gone: do not linger.
  process.on('disconnect', () => void stop());
  send(started.ready);
}

const kind = process.argv[2];
if (kind !== 'bare' && kind !== 'carapace') {
  process.stderr.write('usage: api.server.ts bare|carapace (started by api.bench.ts)\n');
  process.exit(2);
}
run(kind).catch((e: unknown) => {
  const message = e instanceof Error ? (e.stack ?? e.message) : String(e);
  if (!process.send) {
    process.stderr.write(`${message}\n`);
    process.exit(1);
  }
  process.send({ type: 'error', message } satisfies ChildMessage, () => process.exit(1));
});
