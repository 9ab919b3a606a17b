import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { buildApp, createContainer, createLogger, loadConfig, openDatabase, type Config, type Container, type Database } from '@carapace/control-plane';
import { TestClock } from './clock.js';
import { openTestDatabase } from './database.js';
import { MailSink } from './mail-sink.js';

/** The answer of an injected request. */
export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | number | undefined>;
  readonly body: string;
  readonly json: any;
}

export const ROOT_PASSWORD = 'root-password-for-tests';

/** A debug-level logger whose lines are kept in `lines`, for tests that read the log. */
export function keptLogger(lines: string[]): Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return pino({ level: 'debug' }, sink);
}

/**
 * A control plane on a real database (in-memory SQLite, or a fresh PostgreSQL database under
 * `CARAPACE_TEST_DATABASE=postgres`), with a real SMTP server and a movable clock.
 */
export class Harness {
  app!: FastifyInstance;
  container!: Container;
  config!: Config;
  /** The database under the container (for tests that store or read rows directly). */
  db!: Database;
  /** The PostgreSQL URL of that database, or null (SQLite). */
  databaseUrl: string | null = null;
  private dropDatabase: () => Promise<void> = async () => undefined;
  readonly clock = new TestClock();
  readonly mail = new MailSink();
  private dir = '';
  private rootTokenValue = '';

  /** `options.databaseFile`: an SQLite file to keep the tables in, whatever the test's engine. */
  static async start(env: Record<string, string> = {}, options: { databaseFile?: string } = {}): Promise<Harness> {
    const h = new Harness();
    await h.init(env, options);
    return h;
  }

  private async init(env: Record<string, string>, options: { databaseFile?: string }): Promise<void> {
    const smtpPort = await this.mail.start();
    this.dir = mkdtempSync(join(tmpdir(), 'carapace-test-'));
    this.config = loadConfig({
      env: {
        CARAPACE_DATA_DIR: this.dir,
        CARAPACE_ADMIN_PASSWORD: ROOT_PASSWORD,
        CARAPACE_SMTP_HOST: '127.0.0.1',
        CARAPACE_SMTP_PORT: String(smtpPort),
        CARAPACE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
        CARAPACE_DISCOVERY_TOKEN: 'harness-discovery-token-0123456789',
        // No held logins (the growing delay after repeated failures of a login) unless a
        // test asks for them: suites sending many bad logins stay fast.
        CARAPACE_THROTTLE_LOGIN_DELAY_BASE_MS: '0',
        ...env,
      },
    });
    const logger = createLogger(this.config.logLevel);
    const opened = options.databaseFile
      ? { db: await openDatabase(options.databaseFile), url: null, drop: async () => undefined }
      : await openTestDatabase();
    this.db = opened.db;
    this.databaseUrl = opened.url;
    this.dropDatabase = () => opened.drop();
    this.container = await createContainer(this.config, this.db, logger, { clock: this.clock, leaseTimeoutMs: 30_000 });
    this.app = await buildApp({ services: this.container.services, logger });
  }

  async stop(): Promise<void> {
    await this.app.close();
    await this.container.close();
    await this.dropDatabase();
    await this.mail.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Sends a request; `token` goes in `Authorization` as the original client sends it. */
  async request(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS',
    url: string,
    options: { token?: string | undefined; body?: unknown; headers?: Record<string, string>; raw?: string } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = options.token;
    let payload: string | undefined;
    if (options.raw !== undefined) payload = options.raw;
    else if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await this.app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) });
    let json: unknown;
    try {
      json = JSON.parse(res.body);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, headers: res.headers, body: res.body, json };
  }

  /** Logs in and returns the token. */
  async login(username: string, password: string): Promise<string> {
    const res = await this.request('POST', '/v1/auth/', { body: { username, password } });
    if (res.status !== 200) throw new Error(`login of ${username} failed: ${res.status} ${res.body}`);
    return (res.json as { id: string }).id;
  }

  /** A token of root, logged in once. */
  async rootToken(): Promise<string> {
    this.rootTokenValue ||= await this.login('root', ROOT_PASSWORD);
    return this.rootTokenValue;
  }

  /** Creates a role with the given api and playbook permissions; returns its id. */
  async createRole(name: string, api: string[], playbook: string[] = []): Promise<string> {
    const res = await this.request('POST', '/v1/role/', {
      token: await this.rootToken(),
      body: { name, permissions: [{ name: 'api', permissions: api }, { name: 'playbook', permissions: playbook }] },
    });
    if (res.status !== 200) throw new Error(`role ${name}: ${res.status} ${res.body}`);
    return (res.json as { id: string }).id;
  }

  /**
   * Creates a user with a role holding exactly these permissions, reads the password from
   * the welcome e-mail and logs in; returns the user id and token.
   */
  async userWith(login: string, api: string[], playbook: string[] = []): Promise<{ id: string; token: string }> {
    const roleId = await this.createRole(`role-of-${login}`, api, playbook);
    const res = await this.request('POST', '/v1/user/', {
      token: await this.rootToken(),
      body: { login, email: `${login}@example.com`, full_name: login, role_id: roleId },
    });
    if (res.status !== 200) throw new Error(`user ${login}: ${res.status} ${res.body}`);
    const mail = await this.mail.waitFor(`${login}@example.com`, 'account');
    const password = /Password: (\S+)/.exec(mail.text)?.[1];
    if (!password) throw new Error('no password in the welcome mail');
    return { id: (res.json as { id: string }).id, token: await this.login(login, password) };
  }
}
