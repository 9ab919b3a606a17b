import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { FastifyInstance } from 'fastify';
import { buildApp, createContainer, createLogger, loadConfig, openDatabase, type Clock, type Config, type Container, type Db } from '../src/index.js';

/** A clock tests can move forward. */
export class TestClock implements Clock {
  offsetMs = 0;
  nowMs(): number {
    return Date.now() + this.offsetMs;
  }
  advance(seconds: number): void {
    this.offsetMs += seconds * 1000;
  }
}

/** A mail received by the in-process SMTP server. */
export interface ReceivedMail {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

/** A real SMTP server on 127.0.0.1, port 0, keeping what it receives. */
export class MailSink {
  readonly mails: ReceivedMail[] = [];
  private waiters: (() => void)[] = [];
  private readonly server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData: (stream, _session, callback) => {
      simpleParser(stream)
        .then((mail) => {
          const to = Array.isArray(mail.to) ? mail.to.map((a) => a.text).join(', ') : (mail.to?.text ?? '');
          this.mails.push({ to, subject: mail.subject ?? '', text: mail.text ?? '' });
          for (const w of this.waiters.splice(0)) w();
          callback();
        })
        .catch((err: Error) => callback(err));
    },
  });

  async start(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.server.address() as AddressInfo).port;
  }

  /** Waits for a mail to `to` whose subject contains `subject`; returns it. */
  async waitFor(to: string, subject: string, timeoutMs = 10_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.mails.find((m) => m.to.includes(to) && m.subject.includes(subject));
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no mail to ${to} about "${subject}" within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** The answer of an injected request. */
export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | number | undefined>;
  readonly body: string;
  readonly json: any;
}

export const ROOT_PASSWORD = 'root-password-for-tests';

/** A control plane on a real in-memory SQLite database, with a real SMTP server and a movable clock. */
export class Harness {
  app!: FastifyInstance;
  container!: Container;
  config!: Config;
  /** The database under the container (for tests that store or read rows directly). */
  db!: Db;
  readonly clock = new TestClock();
  readonly mail = new MailSink();
  private dir = '';
  private rootTokenValue = '';

  static async start(env: Record<string, string> = {}): Promise<Harness> {
    const h = new Harness();
    await h.init(env);
    return h;
  }

  private async init(env: Record<string, string>): Promise<void> {
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
        ...env,
      },
    });
    const logger = createLogger(this.config.logLevel);
    this.db = openDatabase(':memory:');
    this.container = await createContainer(this.config, this.db, logger, { clock: this.clock, leaseTimeoutMs: 30_000 });
    this.app = await buildApp({ services: this.container.services, logger });
  }

  async stop(): Promise<void> {
    await this.app.close();
    await this.container.close();
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
