import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { buildApp, ConfigError, createContainer, loadConfig, openDatabase, type Container, type Database } from '../src/index.js';
import { makeFacts } from '@carapace/test-support/facts';
import { keptLogger, ROOT_PASSWORD } from '@carapace/test-support/harness';
import { MailSink } from '@carapace/test-support/mail-sink';
import { eventually } from '@carapace/test-support/eventually';

const SECRET = 'webhook-secret-for-tests-0123456789';
const DISCOVERY = 'notifications-discovery-token-0123456789';
const FAST_RETRY = { initialMs: 50, maxMs: 200, giveUpMs: 60_000, timeoutMs: 2_000 };

/** A webhook receiver: a real HTTP server on 127.0.0.1, port 0, answering the statuses it is given in turn (then `fallback`). */
class Receiver {
  readonly requests: { headers: IncomingHttpHeaders; body: string; path: string }[] = [];
  statuses: number[] = [];
  fallback = 200;
  private waiters: (() => void)[] = [];
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.requests.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '' });
      res.statusCode = this.statuses.shift() ?? this.fallback;
      res.end('ok');
      for (const wake of this.waiters.splice(0)) wake();
    });
  });
  url = '';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Waits until `n` requests came. */
  async waitFor(n: number, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.requests.length < n) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.requests.length} webhook requests, not ${n}, within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Whether a request's signature is the HMAC-SHA256 of `<timestamp>.<body>` with `secret`. */
function verifies(request: { headers: IncomingHttpHeaders; body: string }, secret: string): boolean {
  const timestamp = request.headers['x-carapace-timestamp'];
  const signature = request.headers['x-carapace-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(`${timestamp}.${request.body}`).digest('hex')}`);
  return expected.length === Buffer.byteLength(signature) && timingSafeEqual(expected, Buffer.from(signature));
}

/** A control plane on a database file in `dir`, configured by a YAML file, its log lines kept. */
class Plane {
  readonly log: string[] = [];
  app!: FastifyInstance;
  container!: Container;
  db!: Database;
  private root = '';
  private stopBackground: (() => void) | null = null;

  static async open(dir: string, smtpPort: number, yaml: Record<string, unknown>): Promise<Plane> {
    const p = new Plane();
    const file = join(dir, 'carapace.yaml');
    writeFileSync(file, stringify(yaml));
    const config = loadConfig({
      file,
      env: {
        CARAPACE_DATA_DIR: dir,
        CARAPACE_ADMIN_PASSWORD: ROOT_PASSWORD,
        CARAPACE_SMTP_HOST: '127.0.0.1',
        CARAPACE_SMTP_PORT: String(smtpPort),
        CARAPACE_DISCOVERY_TOKEN: DISCOVERY,
      },
    });
    const logger = keptLogger(p.log);
    p.db = await openDatabase(join(dir, 'carapace.db'));
    p.container = await createContainer(config, p.db, logger, { webhookRetry: FAST_RETRY, mailRetry: { initialMs: 50, maxMs: 200, giveUpMs: 60_000 } });
    p.app = await buildApp({ services: p.container.services, logger });
    p.stopBackground = await p.container.startBackground();
    return p;
  }

  get engine() {
    return this.container.services.engine;
  }

  async request(method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown, authorization?: string) {
    if (authorization === undefined && url !== '/v1/auth/') {
      this.root ||= (await this.request('POST', '/v1/auth/', { username: 'root', password: ROOT_PASSWORD })).json.id as string;
      authorization = this.root;
    }
    const res = await this.app.inject({
      method,
      url,
      headers: { ...(authorization ? { authorization } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
    if (res.statusCode !== 200) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return { status: res.statusCode, json: JSON.parse(res.body) };
  }

  /** A cluster with one registered server whose facts are gathered; returns their ids. */
  async clusterWithServer(name: string, n: number): Promise<{ clusterId: string; serverId: string; ip: string }> {
    const clusterId = (await this.request('POST', '/v1/cluster/', { name })).json.id as string;
    const serverId = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const ip = `10.9.0.${n}`;
    await this.request('POST', '/v1/server/', { id: serverId, host: ip, username: 'ansible' }, DISCOVERY);
    await this.container.services.servers.recordFacts(serverId, makeFacts(`node${n}`, ip), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake');
    return { clusterId, serverId, ip };
  }

  /** Queues a hello_world execution on the server; returns its id. */
  async queue(clusterId: string, serverId: string): Promise<string> {
    const config = await this.request('POST', '/v1/playbook_configuration/', { name: 'hello', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [serverId] });
    return (await this.request('POST', '/v1/execution/', { playbook_configuration: { id: config.json.id, version: 1 } })).json.id as string;
  }

  /** Runs a queued execution as a runner would: a step that fails on the server, a log line, the end. */
  async fail(executionId: string, serverId: string): Promise<void> {
    expect((await this.engine.claim('runner-a', 10)).map((a) => a.execution.id)).toContain(executionId);
    const now = Math.floor(Date.now() / 1000);
    const step = { role: 'hello', host: serverId, timeStarted: now, timeFinished: now };
    await this.engine.recordStep(executionId, 0, { ...step, name: 'Gathering Facts', result: 'ok', error: {} });
    await this.engine.recordStep(executionId, 1, { ...step, name: 'install the greeter', result: 'error', error: { msg: 'No package matching greeter is available', rc: 1 } });
    await this.engine.appendLog(executionId, 0, 'PLAY [hello] ***\nfatal: [10.9.0.1]: FAILED!\n');
    expect(await this.engine.finish(executionId, 'failed', 'ansible-playbook exited with 2: a host failed')).not.toBeNull();
  }

  /** Runs a queued execution to completion. */
  async complete(executionId: string): Promise<void> {
    expect((await this.engine.claim('runner-a', 10)).map((a) => a.execution.id)).toContain(executionId);
    expect(await this.engine.finish(executionId, 'completed', null)).not.toBeNull();
  }

  deliveries(executionId: string) {
    return this.container.notifications.ofExecution(executionId);
  }

  async close(): Promise<void> {
    this.stopBackground?.();
    await this.app.close();
    await this.container.close();
  }
}

describe('notifications of an execution end', () => {
  const mail = new MailSink();
  let smtpPort = 0;
  let receiver: Receiver;
  let dir = '';
  let plane: Plane | null = null;
  beforeAll(async () => {
    smtpPort = await mail.start();
  });
  afterAll(() => mail.stop());
  afterEach(async () => {
    await plane?.close();
    plane = null;
    await receiver.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a receiver and a control plane configured by `yaml` (given the receiver's URL). */
  async function open(yaml: (receiverUrl: string) => Record<string, unknown>): Promise<Plane> {
    receiver = await new Receiver().start();
    dir = mkdtempSync(join(tmpdir(), 'carapace-notify-'));
    plane = await Plane.open(dir, smtpPort, yaml(receiver.url));
    return plane;
  }

  it('sends a failed execution as one signed webhook naming the failing step and the log, and one e-mail per address', async () => {
    await open((url) => ({
      publicUrl: 'https://carapace.example.com/',
      notifications: {
        email: ['ops@example.com'],
        // a path with a credential in it: the log must never show it
        webhooks: [{ url: `${url}/hooks/t0ps3cr3tpath`, secret: SECRET }],
        clusters: { storage: { email: ['storage-team@example.com', { to: 'OPS@example.com', events: ['failed'] }] } },
      },
    }));
    plane = plane!;
    const { clusterId, serverId, ip } = await plane.clusterWithServer('storage', 1);
    const id = await plane.queue(clusterId, serverId);
    await plane.fail(id, serverId);

    await receiver.waitFor(1);
    const [request] = receiver.requests;
    expect(request?.path).toBe('/hooks/t0ps3cr3tpath');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers['x-carapace-event']).toBe('execution.failed');
    expect(Math.abs(Number(request?.headers['x-carapace-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    expect(verifies(request!, SECRET)).toBe(true);
    expect(verifies(request!, 'another-secret-of-the-same-length')).toBe(false);
    expect(verifies({ headers: request!.headers, body: request!.body.replace('failed', 'complet') }, SECRET)).toBe(false);
    const body = JSON.parse(request!.body);
    expect(body).toMatchObject({
      event: 'execution.failed',
      execution: {
        id,
        state: 'failed',
        reason: 'ansible-playbook exited with 2: a host failed',
        playbook: 'hello_world',
        cluster: { id: clusterId, name: 'storage' },
        runner_id: 'runner-a',
        url: `https://carapace.example.com/v1/execution/${id}/`,
        log_url: `https://carapace.example.com/v1/execution/${id}/log/`,
      },
      failing_step: { role: 'hello', name: 'install the greeter', result: 'error', server_id: serverId, server_name: 'node1', host: ip, error: 'No package matching greeter is available' },
    });

    const ops = await mail.waitFor('ops@example.com', 'execution failed');
    expect(ops.subject).toBe('Carapace: execution failed: hello_world on storage');
    expect(ops.text).toContain('install the greeter, on node1 (10.9.0.1)');
    expect(ops.text).toContain('No package matching greeter is available');
    expect(ops.text).toContain(`https://carapace.example.com/v1/execution/${id}/log/`);
    await mail.waitFor('storage-team@example.com', 'execution failed');
    const record = await plane.deliveries(id);
    expect(record).toHaveLength(1);
    await eventually('the delivery recorded', async () => (await plane!.deliveries(id))[0]?.state === 'delivered');
    // One mail per address (ops is a global and a cluster target), one webhook.
    await new Promise((r) => setTimeout(r, 300));
    expect(mail.mails.filter((m) => m.subject.includes('execution failed') && /ops@example\.com/i.test(m.to))).toHaveLength(1);
    expect(receiver.requests).toHaveLength(1);
    const log = plane.log.join('');
    expect(log).toContain('webhook delivered');
    expect(log).not.toContain(SECRET);
    expect(log).not.toContain('t0ps3cr3tpath');
  });

  it('tries a webhook answered 500 again and records both attempts', async () => {
    await open((url) => ({ notifications: { webhooks: [{ url: `${url}/hook`, secret: SECRET }] } }));
    plane = plane!;
    receiver.statuses = [500, 200];
    const { clusterId, serverId } = await plane.clusterWithServer('retried', 2);
    const id = await plane.queue(clusterId, serverId);
    await plane.fail(id, serverId);
    await receiver.waitFor(2);
    await eventually('the delivery delivered', async () => (await plane!.deliveries(id))[0]?.state === 'delivered');
    const [first, second] = receiver.requests;
    expect(first?.headers['x-carapace-delivery']).toBe(second?.headers['x-carapace-delivery']);
    expect(first?.body).toBe(second?.body);
    expect(verifies(first!, SECRET) && verifies(second!, SECRET)).toBe(true);
    const [delivery] = await plane.deliveries(id);
    expect(delivery).toMatchObject({ state: 'delivered', attempts: 2, event: 'execution.failed', id: first?.headers['x-carapace-delivery'] });
    expect(delivery?.attemptLog.map((a) => [a.attempt, a.status, a.error])).toEqual([
      [1, 500, null],
      [2, 200, null],
    ]);
    // The default: no mail target, so no mail.
    expect(mail.mails.filter((m) => m.text.includes(id))).toEqual([]);
    // A refusal other than 408, 425, 429 or 5xx is for good: one attempt, no retry.
    receiver.statuses = [410];
    const gone = await plane.queue(clusterId, serverId);
    await plane.fail(gone, serverId);
    await eventually('the delivery failed', async () => (await plane!.deliveries(gone))[0]?.state === 'failed');
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.requests).toHaveLength(3);
    expect((await plane.deliveries(gone))[0]).toMatchObject({ attempts: 1, lastError: 'HTTP 410', attemptLog: [{ attempt: 1, status: 410 }] });
  });

  it('delivers after a restart a webhook that could not be delivered before', async () => {
    const yaml = (url: string) => ({ notifications: { webhooks: [{ url: `${url}/hook`, secret: SECRET }] } });
    await open(yaml);
    plane = plane!;
    receiver.fallback = 503;
    const { clusterId, serverId } = await plane.clusterWithServer('restarted', 3);
    const id = await plane.queue(clusterId, serverId);
    await plane.fail(id, serverId);
    await eventually('two failed attempts', async () => ((await plane!.deliveries(id))[0]?.attempts ?? 0) >= 2);
    await plane.close();
    plane = null;
    expect(await openDeliveries(dir)).toMatchObject([{ state: 'pending' }]);
    const before = receiver.requests.length;
    receiver.fallback = 200;
    plane = await Plane.open(dir, smtpPort, yaml(receiver.url));
    await eventually('delivered after the restart', async () => (await plane!.deliveries(id))[0]?.state === 'delivered');
    expect(receiver.requests.length).toBe(before + 1);
    expect(verifies(receiver.requests.at(-1)!, SECRET)).toBe(true);
    const attempts = (await plane.deliveries(id))[0]?.attemptLog ?? [];
    expect(attempts.at(-1)?.status).toBe(200);
    expect(attempts.slice(0, -1).every((a) => a.status === 503)).toBe(true);
  });

  it('notifies completed and canceled executions too, to the targets asking for them', async () => {
    await open((url) => ({
      notifications: {
        webhooks: [
          { url: `${url}/all`, secret: SECRET },
          { url: `${url}/failures`, secret: SECRET, events: ['failed'] },
        ],
        clusters: { ends: { email: ['ends@example.com'] } },
      },
    }));
    plane = plane!;
    const { clusterId, serverId } = await plane.clusterWithServer('ends', 4);
    const done = await plane.queue(clusterId, serverId);
    await plane.complete(done);
    const canceled = await plane.queue(clusterId, serverId);
    expect((await plane.request('DELETE', `/v1/execution/${canceled}/`)).json.data.state).toBe('canceled');
    await receiver.waitFor(2);
    await eventually('both delivered', async () => (await Promise.all([done, canceled].map((e) => plane!.deliveries(e)))).every((d) => d[0]?.state === 'delivered'));
    const bodies = receiver.requests.map((r) => ({ path: r.path, body: JSON.parse(r.body) }));
    expect(bodies.map((b) => [b.path, b.body.event, b.body.execution.id]).sort()).toEqual(
      [
        ['/all', 'execution.completed', done],
        ['/all', 'execution.canceled', canceled],
      ].sort(),
    );
    expect(bodies.every((b) => b.body.failing_step === null)).toBe(true);
    const canceledBody = bodies.find((b) => b.body.event === 'execution.canceled')?.body;
    expect(canceledBody.execution).toMatchObject({ reason: 'canceled before it started', log_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:8080\/v1\/execution\/.+\/log\/$/) });
    await mail.waitFor('ends@example.com', 'execution completed');
    await mail.waitFor('ends@example.com', 'execution canceled');
  });

  it('sends nothing when no target is configured', async () => {
    const p = await open(() => ({}));
    const { clusterId, serverId } = await p.clusterWithServer('quiet', 5);
    const failed = await p.queue(clusterId, serverId);
    await p.fail(failed, serverId);
    const done = await p.queue(clusterId, serverId);
    await p.complete(done);
    await new Promise((r) => setTimeout(r, 300));
    expect(await p.deliveries(failed)).toEqual([]);
    expect(await p.deliveries(done)).toEqual([]);
    expect(await p.db.get(sql`SELECT count(*) AS n FROM mail_outbox`)).toEqual({ n: 0 });
    expect(mail.mails.filter((m) => m.text.includes(failed) || m.text.includes(done))).toEqual([]);
    expect(receiver.requests).toEqual([]);
  });

  it('refuses webhook URLs other than http(s) and short secrets, without showing them', () => {
    const bad = (notifications: unknown): string => {
      const d = mkdtempSync(join(tmpdir(), 'carapace-notify-config-'));
      try {
        writeFileSync(join(d, 'c.yaml'), stringify({ notifications }));
        loadConfig({ file: join(d, 'c.yaml'), env: {} });
        return 'accepted';
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as Error).message;
      } finally {
        rmSync(d, { recursive: true, force: true });
      }
    };
    const message = bad({ webhooks: [{ url: 'file:///etc/passwd?k=hidden-value', secret: SECRET }] });
    expect(message).toMatch(/notifications\.webhooks\[0\]\.url must be an absolute http/);
    expect(message).not.toContain('hidden-value');
    expect(bad({ clusters: { c1: { webhooks: [{ url: 'gopher://x', secret: SECRET }] } } })).toMatch(/notifications\.clusters\.c1\.webhooks\[0\]\.url/);
    const short = bad({ webhooks: [{ url: 'https://example.com/h', secret: 'short-secret' }] });
    expect(short).toMatch(/secret/);
    expect(short).not.toContain('short-secret');
    expect(bad({ webhooks: [{ url: 'https://example.com/h', secret: SECRET, events: ['exploded'] }] })).toMatch(/events/);
    expect(
      bad({ webhooks: [{ url: 'https://example.com/h', secret: SECRET }], clusters: { c: { webhooks: [{ url: 'https://example.com/h', secret: `${SECRET}-other` }] } } }),
    ).toMatch(/same secret/);
    expect(bad({ email: ['ops@example.com'], webhooks: [{ url: 'https://example.com/h', secret: SECRET, events: ['failed'] }] })).toBe('accepted');
  });
});

/** The deliveries stored in the database of `dir` (read while no control plane has it open). */
async function openDeliveries(dir: string): Promise<{ state: string; attempts: number }[]> {
  const db = await openDatabase(join(dir, 'carapace.db'));
  try {
    return await db.all<{ state: string; attempts: number }>(sql`SELECT state, attempts FROM notification_deliveries`);
  } finally {
    await db.close();
  }
}
