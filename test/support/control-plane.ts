import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp, createContainer, createLogger, loadConfig, openDatabase, type Container, type Database } from '@carapace/control-plane';
import { ClusterFileRepository } from '@carapace/control-plane/testing';
import { TestClock } from './clock.js';
import { openTestDatabase } from './database.js';
import { makeFacts } from './facts.js';
import { MailSink } from './mail-sink.js';

/** The password of `root` in every test control plane. */
export const ROOT_PASSWORD = 'root-password-for-client-tests';
/** The discovery token of every test control plane. */
export const DISCOVERY_TOKEN = 'client-tests-discovery-token-0123456789';

/**
 * A real control plane, in this process, listening on 127.0.0.1 port 0: a real SQLite
 * database (in memory), a real SMTP server catching its mails, and its execution engine at
 * hand so that a test can play the runner's part.
 */
export class TestControlPlane {
  private dropDatabase: () => Promise<void> = async () => undefined;
  app!: Awaited<ReturnType<typeof buildApp>>;
  container!: Container;
  url = '';
  readonly clock = new TestClock();
  readonly mail = new MailSink();
  /** The database, for a test to put in place what a run's effects would (a deployed cluster's roles). */
  db!: Database;
  /** The files of clusters a deploy stores, for a test to store them itself. */
  clusterFiles!: ClusterFileRepository;
  private dir = '';

  /**
   * Starts one; `env` adds `CARAPACE_*` settings (e.g. `CARAPACE_TOKEN_TTL_S`); `sqliteFile`
   * puts its database in that file instead of memory (a benchmark's storage figures).
   */
  static async start(env: Record<string, string> = {}, { sqliteFile }: { sqliteFile?: string } = {}): Promise<TestControlPlane> {
    const cp = new TestControlPlane();
    const smtpPort = await cp.mail.start();
    cp.dir = mkdtempSync(join(tmpdir(), 'carapace-client-test-'));
    const config = loadConfig({
      env: {
        CARAPACE_DATA_DIR: cp.dir,
        CARAPACE_ADMIN_PASSWORD: ROOT_PASSWORD,
        CARAPACE_SMTP_HOST: '127.0.0.1',
        CARAPACE_SMTP_PORT: String(smtpPort),
        CARAPACE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
        CARAPACE_DISCOVERY_TOKEN: DISCOVERY_TOKEN,
        CARAPACE_RUNNER: 'none',
        ...env,
      },
    });
    const logger = createLogger(config.logLevel);
    const opened = sqliteFile ? { db: await openDatabase(sqliteFile), drop: async () => undefined } : await openTestDatabase();
    cp.dropDatabase = () => opened.drop();
    const db = opened.db;
    cp.db = db;
    cp.container = await createContainer(config, db, logger, { clock: cp.clock });
    cp.clusterFiles = new ClusterFileRepository(db, cp.container.secretBox);
    cp.app = await buildApp({ services: cp.container.services, logger });
    await cp.app.listen({ host: '127.0.0.1', port: 0 });
    cp.url = `http://127.0.0.1:${(cp.app.server.address() as AddressInfo).port}`;
    return cp;
  }

  /** The services, to play a runner's part (facts, steps, log, outcome). */
  get services(): Container['services'] {
    return this.container.services;
  }

  async stop(): Promise<void> {
    await this.app.close();
    await this.container.close();
    await this.dropDatabase();
    await this.mail.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Registers a host with the discovery token, as its first-boot script does, and records
   * its facts as a runner does; returns the server id.
   */
  async addServer(n: number): Promise<string> {
    const id = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const ip = `10.0.${Math.floor(n / 250)}.${(n % 250) + 2}`;
    const res = await fetch(`${this.url}/v1/server/`, {
      method: 'POST',
      headers: { authorization: DISCOVERY_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ id, host: ip, username: 'ansible' }),
    });
    if (res.status !== 200) throw new Error(`registration of ${id}: ${res.status} ${await res.text()}`);
    await this.services.servers.recordFacts(id, makeFacts(`node${n}`, ip), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestKey');
    return id;
  }
}
