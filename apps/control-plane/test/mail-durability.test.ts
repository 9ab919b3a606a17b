import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp, createContainer, loadConfig, openDatabase, type Container, type Database } from '../src/index.js';
import { keptLogger, ROOT_PASSWORD } from '@carapace/test-support/harness';
import { MailSink } from '@carapace/test-support/mail-sink';
import { eventually } from '@carapace/test-support/eventually';

const FAST_RETRY = { initialMs: 100, maxMs: 400, giveUpMs: 60_000 };

/** A control plane on a database file, whose log lines are kept. */
class Plane {
  readonly log: string[] = [];
  app!: FastifyInstance;
  container!: Container;
  db!: Database;
  private stopBackground: (() => void) | null = null;

  static async open(dir: string, smtpPort: number | null, options: { background?: boolean } = {}): Promise<Plane> {
    const p = new Plane();
    const config = loadConfig({
      env: {
        CARAPACE_DATA_DIR: dir,
        CARAPACE_ADMIN_PASSWORD: ROOT_PASSWORD,
        ...(smtpPort === null ? {} : { CARAPACE_SMTP_HOST: '127.0.0.1', CARAPACE_SMTP_PORT: String(smtpPort) }),
      },
    });
    const logger = keptLogger(p.log);
    p.db = await openDatabase(join(dir, 'carapace.db'));
    p.container = await createContainer(config, p.db, logger, { mailRetry: FAST_RETRY });
    p.app = await buildApp({ services: p.container.services, logger });
    if (options.background) p.stopBackground = await p.container.startBackground();
    return p;
  }

  async request(method: 'GET' | 'POST', url: string, body?: unknown, token?: string) {
    const res = await this.app.inject({
      method,
      url,
      headers: { ...(token ? { authorization: token } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, json: JSON.parse(res.body) };
  }

  async login(username: string, password: string): Promise<number> {
    return (await this.request('POST', '/v1/auth/', { username, password })).status;
  }

  async createUser(login: string): Promise<number> {
    const root = (await this.request('POST', '/v1/auth/', { username: 'root', password: ROOT_PASSWORD })).json.id as string;
    return (await this.request('POST', '/v1/user/', { login, email: `${login}@example.com` }, root)).status;
  }

  async outbox(): Promise<{ n: number; attempts: number }> {
    const row = await this.db.get<{ n: number; attempts: number }>(sql`SELECT count(*) AS n, coalesce(max(attempts), 0) AS attempts FROM mail_outbox`);
    if (!row) throw new Error('no outbox count');
    return row;
  }

  async close(): Promise<void> {
    this.stopBackground?.();
    await this.app.close();
    await this.container.close();
  }
}

/** The files of the spool folder. */
function spooled(dir: string): string[] {
  try {
    return readdirSync(join(dir, 'mail')).map((f) => join(dir, 'mail', f));
  } catch {
    return [];
  }
}

/** A port where nothing listens (a sink that was closed). */
async function deadPort(): Promise<number> {
  const probe = new MailSink();
  const port = await probe.start();
  await probe.stop();
  return port;
}

describe('durable mail (issue 13, defect 10)', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });
  function tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'carapace-mail-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  /** An SMTP sink refusing every mail with `code` (until told otherwise), stopped after the test. */
  async function refusingSink(code: number): Promise<{ sink: MailSink; port: number }> {
    const sink = new MailSink();
    const port = await sink.start();
    cleanup.push(() => sink.stop());
    sink.refuseWith = code;
    return { sink, port };
  }

  it('delivers the password of a user created while the SMTP server refuses mail once it accepts again', async () => {
    const { sink, port } = await refusingSink(451);
    const plane = await Plane.open(tempDir(), port);
    cleanup.push(() => plane.close());

    expect(await plane.createUser('ursula')).toBe(200);
    // Refused by the server, then recorded by the outbox (a moment later).
    await eventually('two refused attempts, recorded', async () => sink.refused >= 2 && (await plane.outbox()).attempts >= 2);
    expect((await plane.outbox()).n).toBe(1);
    expect((await plane.outbox()).attempts).toBeGreaterThanOrEqual(2);
    expect(sink.mails).toEqual([]);

    sink.refuseWith = null;
    const password = await sink.passwordOf('ursula@example.com');
    expect(await plane.login('ursula', password)).toBe(200);
    await eventually('the outbox to empty', async () => (await plane.outbox()).n === 0);
    // the password never reaches the log, neither while retrying nor once sent
    const log = plane.log.join('');
    expect(log).toContain('mail not delivered; will try again');
    expect(log).toContain('mail sent');
    expect(log).not.toContain(password);
  });

  it('delivers at the next start a mail stored before a crash, with the SMTP server down meanwhile', async () => {
    const dir = tempDir();
    const port = await deadPort();
    const first = await Plane.open(dir, port);
    expect(await first.createUser('victor')).toBe(200);
    await eventually('an attempt on the dead server', async () => (await first.outbox()).attempts >= 1);
    // the process goes away with the mail undelivered (nothing else keeps it)
    await first.close();

    const sink = new MailSink();
    await sink.start(port);
    cleanup.push(() => sink.stop());
    const second = await Plane.open(dir, port, { background: true });
    cleanup.push(() => second.close());
    const password = await sink.passwordOf('victor@example.com');
    expect(await second.login('victor', password)).toBe(200);
    await eventually('the outbox to empty', async () => (await second.outbox()).n === 0);
    expect(sink.mails.filter((m) => m.to.includes('victor@'))).toHaveLength(1);
  });

  it('stores the mail with the user: a user refused (taken login) leaves no mail behind', async () => {
    const { port } = await refusingSink(451);
    const plane = await Plane.open(tempDir(), port);
    cleanup.push(() => plane.close());
    expect(await plane.createUser('wendy')).toBe(200);
    const root = (await plane.request('POST', '/v1/auth/', { username: 'root', password: ROOT_PASSWORD })).json.id as string;
    const dup = await plane.request('POST', '/v1/user/', { login: 'wendy', email: 'other@example.com' }, root);
    expect(dup.status).toBe(409);
    expect((await plane.outbox()).n).toBe(1);
  });

  it('spools a mail the server refuses for good, and every mail when no SMTP server is configured', async () => {
    const { sink, port } = await refusingSink(550);
    const dir = tempDir();
    const plane = await Plane.open(dir, port);
    expect(await plane.createUser('xavier')).toBe(200);
    await eventually('the spool file', () => spooled(dir).length === 1);
    await eventually('the outbox to empty', async () => (await plane.outbox()).n === 0);
    expect(sink.refused).toBe(1);
    await plane.close();

    const offline = await Plane.open(dir, null);
    cleanup.push(() => offline.close());
    expect(await offline.createUser('yvonne')).toBe(200);
    await eventually('a second spool file', () => spooled(dir).length === 2);
    await eventually('the outbox to empty', async () => (await offline.outbox()).n === 0);
    const files = spooled(dir);
    const texts = files.map((f) => readFileSync(f, 'utf8'));
    expect(texts.some((t) => t.includes('xavier@example.com'))).toBe(true);
    expect(texts.some((t) => t.includes('yvonne@example.com') && /Password: \S+/.test(t))).toBe(true);
    for (const f of files) expect(statSync(f).mode & 0o077).toBe(0);
    expect(statSync(join(dir, 'mail')).mode & 0o077).toBe(0);
  });
});
