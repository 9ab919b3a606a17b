import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createRunnerClient, grpc, PROTOCOL_VERSION, type ControlMessage__Output, type RunnerMessage } from '@carapace/protocol';
import { createLogger } from '../src/logger.js';
import { startGrpcServer, type GrpcServer } from '../src/grpc/grpc.server.js';
import { StreamWriter } from '../src/grpc/stream.writer.js';
import { addServer } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';
import { eventually } from '@carapace/test-support/eventually';

/** A runner spoken by hand: a raw stream to the real gRPC server. */
class RawRunner {
  readonly received: ControlMessage__Output[] = [];
  status: grpc.StatusObject | null = null;
  private readonly waiters: (() => void)[] = [];
  readonly call: grpc.ClientDuplexStream<RunnerMessage, ControlMessage__Output>;
  private readonly client: ReturnType<typeof createRunnerClient>;

  constructor(port: number, token: string | null) {
    this.client = createRunnerClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    if (token) md.set('authorization', `Bearer ${token}`);
    this.call = this.client.Connect(md);
    this.call.on('data', (m: ControlMessage__Output) => {
      this.received.push(m);
      this.wake();
    });
    this.call.on('status', (s: grpc.StatusObject) => {
      this.status = s;
      this.wake();
    });
    this.call.on('error', () => this.wake());
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  send(message: RunnerMessage): void {
    this.call.write(message);
  }

  hello(name: string, options: { slots?: number; running?: string[] } = {}): void {
    this.send({ hello: { protocol_version: PROTOCOL_VERSION, name, version: 'test', labels: { zone: 'a' }, slots: options.slots ?? 1, running_execution_ids: options.running ?? [], ssh_public_key: 'ssh-ed25519 AAAAtest' } });
  }

  /** Waits for a message matching `pick`, consuming nothing. */
  async waitFor<T>(pick: (m: ControlMessage__Output[]) => T | undefined, timeoutMs = 5000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = pick(this.received);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`timed out; received ${JSON.stringify(this.received.map((m) => m.body))}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  async waitStatus(timeoutMs = 5000): Promise<grpc.StatusObject> {
    return this.waitFor(() => this.status ?? undefined, timeoutMs);
  }

  assignments(): string[] {
    return this.received.filter((m) => m.body === 'assignment').map((m) => m.assignment?.execution_id ?? '');
  }

  ackOf(executionId: string): number {
    return Math.max(0, ...this.received.filter((m) => m.body === 'ack' && m.ack?.execution_id === executionId).map((m) => m.ack?.seq ?? 0));
  }

  close(): void {
    this.call.end();
    this.client.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the runner gateway over a real gRPC server', () => {
  let h: Harness;
  let grpcServer: GrpcServer;
  let root: string;
  let clusterId: string;
  const open: RawRunner[] = [];

  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_GRPC_PORT: '0' });
    root = await h.rootToken();
    clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'grpc-cluster' } })).json.id;
    grpcServer = await startGrpcServer(h.config, h.container.services, createLogger(h.config.logLevel));
  });
  afterEach(() => {
    for (const r of open.splice(0)) r.close();
  });
  afterAll(async () => {
    await grpcServer.close();
    await h.stop();
  });

  async function issue(name: string): Promise<string> {
    const res = await h.request('POST', '/v1/runner/', { token: root, body: { name, labels: { site: 'test' } } });
    expect(res.status, res.body).toBe(200);
    return res.json.token;
  }

  function runner(token: string | null): RawRunner {
    const r = new RawRunner(grpcServer.port, token);
    open.push(r);
    return r;
  }

  async function execution(): Promise<{ id: string; serverIp: string }> {
    const s = await addServer(h);
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'hello', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [s.id] },
    });
    const created = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: 1 } } });
    expect(created.status, created.body).toBe(200);
    return { id: created.json.id, serverIp: s.data.ip };
  }

  async function state(id: string): Promise<string> {
    return (await h.request('GET', `/v1/execution/${id}/`, { token: root })).json.data.state;
  }

  it('refuses streams without a valid token, and says why', async () => {
    for (const token of [null, 'nonsense', `crt.${Buffer.from('ghost').toString('base64url')}.x`]) {
      const r = runner(token);
      r.hello('ghost');
      const status = await r.waitStatus();
      expect(status.code).toBe(grpc.status.UNAUTHENTICATED);
      expect(status.details).toMatch(/runner token/);
    }
    const token = await issue('wrong-name');
    const r = runner(token);
    r.hello('someone-else');
    expect((await r.waitStatus()).code).toBe(grpc.status.INVALID_ARGUMENT);
    const late = runner(token);
    late.send({ heartbeat: { free_slots: 1 } });
    expect((await late.waitStatus()).details).toMatch(/first message must be hello/);
    const old = runner(token);
    old.send({ hello: { protocol_version: 99, name: 'wrong-name', version: 'x', labels: {}, slots: 1, running_execution_ids: [], ssh_public_key: '' } });
    expect((await old.waitStatus()).details).toMatch(/protocol version 99/);
  });

  it('assigns only against free slots, oldest first, and lists the runner with its state', async () => {
    const token = await issue('slots');
    const a = await execution();
    const b = await execution();
    const r = runner(token);
    r.hello('slots', { slots: 1 });
    await r.waitFor((m) => (m.some((x) => x.body === 'welcome') ? true : undefined));
    await r.waitFor(() => (r.assignments().length === 1 ? true : undefined));
    await sleep(100);
    expect(r.assignments()).toEqual([a.id]);
    const assignment = r.received.find((m) => m.body === 'assignment')?.assignment;
    expect(assignment?.playbook_id).toBe('hello_world');
    expect(JSON.parse(assignment?.configuration_json ?? '{}').inventory._meta.hostvars[a.serverIp]).toMatchObject({ ansible_user: 'ansible' });
    expect(Object.keys(assignment?.server_ids ?? {})).toEqual([a.serverIp]);
    expect(assignment?.host_keys[a.serverIp]).toMatch(/^ssh-ed25519 /);

    const listed = (await h.request('GET', '/v1/runner/', { token: root })).json.items.find((x: { name: string }) => x.name === 'slots');
    expect(listed).toMatchObject({ state: 'connected', slots: 1, free_slots: 0, executions: [a.id], labels: { site: 'test', zone: 'a' }, ssh_public_key: 'ssh-ed25519 AAAAtest' });

    r.send({ result: { execution_id: a.id, seq: 1, outcome: 'completed', reason: '' } });
    await r.waitFor(() => (r.assignments().length === 2 ? true : undefined));
    expect(r.assignments()).toEqual([a.id, b.id]);
    expect(await state(a.id)).toBe('completed');
    // Acknowledgements are batched: the result's comes shortly after it was stored.
    await r.waitFor(() => (r.ackOf(a.id) >= 1 ? true : undefined));
    expect(r.ackOf(a.id)).toBe(1);
    r.send({ result: { execution_id: b.id, seq: 1, outcome: 'failed', reason: 'boom' } });
    await eventually(`execution ${b.id} failed`, async () => (await state(b.id)) === 'failed');
  });

  it('stores duplicated and out-of-order events once, acknowledges them, and rebuilds the exact log', async () => {
    const token = await issue('events');
    const e = await execution();
    const r = runner(token);
    r.hello('events', { slots: 2 });
    await r.waitFor(() => (r.assignments().includes(e.id) ? true : undefined));
    const text = 'PLAY [all] ******\nTASK [hello : say] ✓ ünïcödé\nPLAY RECAP *****\n';
    const parts = [text.slice(0, 10), text.slice(10, 31), text.slice(31)];
    let offset = 0;
    const chunks = parts.map((p, i) => {
      const c = { execution_id: e.id, seq: i + 1, offset, text: p };
      offset += p.length;
      return c;
    });
    const step = { execution_id: e.id, seq: 4, host: e.serverIp, role: 'hello', name: 'say', result: 'ok', error_json: '{}', time_started: 1, time_finished: 2 };
    // Out of order, duplicated, and the middle one missing at first then resent.
    r.send({ log: chunks[2] });
    r.send({ log: chunks[0] });
    r.send({ log: chunks[0] });
    r.send({ step });
    r.send({ step });
    await r.waitFor(() => (r.ackOf(e.id) >= 4 ? true : undefined));
    const partial = await h.request('GET', `/v1/execution/${e.id}/log/`, { token: root });
    expect(partial.body).toBe(parts[0]);
    r.send({ log: chunks[1] });
    r.send({ result: { execution_id: e.id, seq: 5, outcome: 'completed', reason: '' } });
    await eventually(`execution ${e.id} completed`, async () => (await state(e.id)) === 'completed');
    const log = await h.request('GET', `/v1/execution/${e.id}/log/`, { token: root });
    expect(log.body).toBe(text);
    const steps = await h.request('GET', `/v1/execution/${e.id}/steps/`, { token: root });
    expect(steps.json.items).toHaveLength(1);
    expect(steps.json.items[0].data).toMatchObject({ role: 'hello', name: 'say', result: 'ok' });
    expect(steps.json.items[0].data.server_id).toBeTruthy();
  });

  it('stores a burst of steps and log chunks each once, and what came before a malformed event in it', async () => {
    const token = await issue('burst');
    const e = await execution();
    const r = runner(token);
    r.hello('burst', { slots: 1 });
    await r.waitFor(() => (r.assignments().includes(e.id) ? true : undefined));
    // 300 log lines and 60 steps written at once (they wait together in the inbox), each
    // tenth sent twice, then a step the protocol refuses.
    let text = '';
    let seq = 0;
    for (let i = 0; i < 300; i++) {
      const line = `TASK [burst : line ${i}] ok\n`;
      const chunk = { log: { execution_id: e.id, seq: ++seq, offset: text.length, text: line } };
      text += line;
      r.send(chunk);
      if (i % 10 === 0) r.send(chunk);
      if (i % 5 === 0) {
        const step = { step: { execution_id: e.id, seq: ++seq, host: e.serverIp, role: 'burst', name: `step ${i / 5}`, result: 'ok', error_json: '{}', time_started: i, time_finished: i } };
        r.send(step);
        if (i % 10 === 0) r.send(step);
      }
    }
    r.send({ step: { execution_id: e.id, seq: ++seq, host: e.serverIp, role: 'burst', name: 'bad', result: 'exploded', error_json: '{}', time_started: 0, time_finished: 0 } });
    const status = await r.waitStatus();
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect((await h.request('GET', `/v1/execution/${e.id}/log/`, { token: root })).body).toBe(text);
    const steps = await h.request('GET', `/v1/execution/${e.id}/steps/?per_page=100`, { token: root });
    expect(steps.json.items.map((x: { data: { name: string } }) => x.data.name)).toEqual(Array.from({ length: 60 }, (_, i) => `step ${i}`));
    const serverIds = new Set(steps.json.items.map((x: { data: { server_id: string | null } }) => x.data.server_id));
    expect(serverIds.size).toBe(1);
    expect([...serverIds][0]).toBeTruthy();
    const again = runner(token);
    again.hello('burst', { slots: 1, running: [e.id] });
    await again.waitFor((m) => (m.some((x) => x.body === 'welcome') ? true : undefined));
    again.send({ result: { execution_id: e.id, seq: seq + 1, outcome: 'completed', reason: '' } });
    await eventually(`execution ${e.id} completed`, async () => (await state(e.id)) === 'completed');
  });

  it('refuses malformed events with INVALID_ARGUMENT and stores nothing of them', async () => {
    const token = await issue('malformed');
    const e = await execution();
    const r = runner(token);
    r.hello('malformed', { slots: 1 });
    await r.waitFor(() => (r.assignments().includes(e.id) ? true : undefined));
    r.send({ step: { execution_id: e.id, seq: 1, host: 'x', role: 'r', name: 'n', result: 'exploded', error_json: '{}', time_started: 0, time_finished: 0 } });
    const status = await r.waitStatus();
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(status.details).toMatch(/step result/);
    const steps = await h.request('GET', `/v1/execution/${e.id}/steps/`, { token: root });
    expect(steps.json.items).toHaveLength(0);
    // The runner reconnects, says it still runs the execution, and finishes it normally.
    const again = runner(token);
    again.hello('malformed', { slots: 1, running: [e.id] });
    await again.waitFor((m) => (m.some((x) => x.body === 'welcome') ? true : undefined));
    expect(await state(e.id)).toBe('started');
    // A step error nested deeper than a stored document may be is refused the same way.
    let deep = '{}';
    for (let i = 0; i < 100; i++) deep = `{"a":${deep}}`;
    again.send({ step: { execution_id: e.id, seq: 1, host: 'x', role: 'r', name: 'n', result: 'error', error_json: deep, time_started: 0, time_finished: 0 } });
    const deepStatus = await again.waitStatus();
    expect(deepStatus.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(deepStatus.details).toMatch(/nest at most 64/);
    expect((await h.request('GET', `/v1/execution/${e.id}/steps/`, { token: root })).json.items).toHaveLength(0);
    const third = runner(token);
    third.hello('malformed', { slots: 1, running: [e.id] });
    await third.waitFor((m) => (m.some((x) => x.body === 'welcome') ? true : undefined));
    third.send({ result: { execution_id: e.id, seq: 1, outcome: 'completed', reason: '' } });
    await eventually(`execution ${e.id} completed`, async () => (await state(e.id)) === 'completed');
  });

  it('keeps runs across a reconnect, fails those the runner lost, and ignores the replaced stream', async () => {
    const token = await issue('flaky');
    const kept = await execution();
    const lost = await execution();
    const first = runner(token);
    first.hello('flaky', { slots: 2 });
    await first.waitFor(() => (first.assignments().length === 2 ? true : undefined));
    // A second stream of the same runner replaces the first (a reconnect racing the old one).
    const second = runner(token);
    second.hello('flaky', { slots: 2, running: [kept.id, 'ffffffff-ffff-4fff-8fff-ffffffffffff'] });
    const welcome = await second.waitFor((m) => m.find((x) => x.body === 'welcome')?.welcome ?? undefined);
    expect(welcome.abandoned_execution_ids).toEqual(['ffffffff-ffff-4fff-8fff-ffffffffffff']);
    expect(await state(kept.id)).toBe('started');
    expect(await state(lost.id)).toBe('failed');
    const reason = (await h.request('GET', `/v1/execution/${lost.id}/`, { token: root })).json.data.reason;
    expect(reason).toMatch(/reconnected without the run/);
    // The old stream is closed; what it still says is not taken.
    await first.waitStatus();
    second.send({ log: { execution_id: kept.id, seq: 1, offset: 0, text: 'from the new stream\n' } });
    second.send({ result: { execution_id: kept.id, seq: 2, outcome: 'completed', reason: '' } });
    await eventually(`execution ${kept.id} completed`, async () => (await state(kept.id)) === 'completed');
    expect((await h.request('GET', `/v1/execution/${kept.id}/log/`, { token: root })).body).toBe('from the new stream\n');
  });

  it('relays a cancel to the runner, and frees the servers when the runner reports it canceled', async () => {
    const token = await issue('cancel');
    const e = await execution();
    const r = runner(token);
    r.hello('cancel', { slots: 1 });
    await r.waitFor(() => (r.assignments().includes(e.id) ? true : undefined));
    const del = await h.request('DELETE', `/v1/execution/${e.id}/`, { token: root });
    expect(del.json.data.state).toBe('canceling');
    const cancel = await r.waitFor((m) => m.find((x) => x.body === 'cancel')?.cancel ?? undefined);
    expect(cancel.execution_id).toBe(e.id);
    r.send({ result: { execution_id: e.id, seq: 1, outcome: 'canceled', reason: 'SIGINT' } });
    await eventually(`execution ${e.id} canceled`, async () => (await state(e.id)) === 'canceled');
    expect(await h.container.services.engine.runningOn('cancel')).toEqual([]);
  });

  it('stops assigning to a draining runner; a silent runner loses its leases and its run fails', async () => {
    const drainToken = await issue('drainer');
    const d = runner(drainToken);
    d.hello('drainer', { slots: 4 });
    await d.waitFor((m) => (m.some((x) => x.body === 'welcome') ? true : undefined));
    d.send({ draining: { reason: 'SIGTERM' } });
    await sleep(100);
    const silentToken = await issue('silent');
    const s = runner(silentToken);
    s.hello('silent', { slots: 1 });
    const e = await execution();
    await s.waitFor(() => (s.assignments().includes(e.id) ? true : undefined));
    expect(d.assignments()).toEqual([]);
    const listed = (await h.request('GET', '/v1/runner/', { token: root })).json.items.find((x: { name: string }) => x.name === 'drainer');
    expect(listed.state).toBe('draining');
    // The silent runner never heartbeats: past the lease its run fails and its server is free.
    h.clock.advance(31);
    await h.container.services.engine.sweep();
    expect(await state(e.id)).toBe('failed');
    expect((await h.request('GET', `/v1/execution/${e.id}/`, { token: root })).json.data.reason).toMatch(/silent stopped answering/);
    expect(await h.container.services.engine.runningOn('silent')).toEqual([]);
  });

  it('closes the stream of a runner whose token is revoked', async () => {
    const token = await issue('revoked');
    const r = runner(token);
    r.hello('revoked');
    await r.waitFor((m) => (m.some((x) => x.body === 'welcome') ? true : undefined));
    const deleted = await h.request('DELETE', '/v1/runner/revoked/', { token: root });
    expect(deleted.status).toBe(200);
    expect(deleted.headers['content-type']).toBe('application/json');
    expect(deleted.json).toEqual({});
    expect((await r.waitStatus()).code).toBe(grpc.status.UNAUTHENTICATED);
    const again = runner(token);
    again.hello('revoked');
    expect((await again.waitStatus()).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await h.request('DELETE', '/v1/runner/revoked/', { token: root })).status).toBe(404);
    expect((await h.request('POST', '/v1/runner/', { token: root, body: { name: 'Bad Name' } })).status).toBe(400);
  });

  it('holds back its writes while a runner does not read, and then sends them all, in order', async () => {
    // Watches the gateway's writers (the spy calls through).
    const spy = vi.spyOn(StreamWriter.prototype, 'write');
    const backlog = () => Math.max(0, ...(spy.mock.contexts as StreamWriter<unknown>[]).map((writer) => writer.queued));
    try {
      const token = await issue('slow-reader');
      const r = runner(token);
      r.hello('slow-reader', { slots: 0 });
      await r.waitFor((m) => (m.some((x) => x.body === 'welcome') ? true : undefined));
      // The runner stops reading: HTTP/2 flow control fills, and the stream reports it full.
      r.call.pause();
      // Events of executions it does not hold: not stored, but each acknowledged (so, many writes).
      const ids = Array.from({ length: 4000 }, () => randomUUID());
      for (const id of ids) r.send({ log: { execution_id: id, seq: 1, offset: 0, text: 'x' } });
      await eventually('a backlog of unsent events', async () => backlog() > 0, 10_000);
      r.call.resume();
      // 4,000 lookups of unknown executions: seconds on PostgreSQL beside other work; order and completeness are the point
      await r.waitFor(() => (r.received.filter((m) => m.body === 'ack').length === ids.length ? true : undefined), 30_000);
      expect(r.received.filter((m) => m.body === 'ack').map((m) => m.ack?.execution_id)).toEqual(ids);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('a stream writer', () => {
  /** A real object stream that takes two messages, then holds them until `release`. */
  function slowStream(): { stream: Writable; written: number[]; release: () => void } {
    const written: number[] = [];
    let held: (() => void)[] = [];
    const stream = new Writable({
      objectMode: true,
      highWaterMark: 2,
      write(chunk: number, _encoding, callback) {
        written.push(chunk);
        held.push(callback);
      },
    });
    const release = () => {
      const callbacks = held;
      held = [];
      for (const done of callbacks) done();
    };
    return { stream, written, release };
  }

  it('waits for drain once the stream is full, keeping the order of messages', async () => {
    const { stream, written, release } = slowStream();
    const writer = new StreamWriter<number>(stream, (err) => {
      throw err;
    });
    expect(writer.write(1)).toBe(true);
    expect(writer.write(2)).toBe(true); // the stream is full now
    for (const n of [3, 4, 5]) expect(writer.write(n)).toBe(true);
    expect(writer.queued).toBe(3);
    // Nothing past the full mark reached the stream.
    expect(stream.writableLength).toBe(2);
    for (let i = 0; i < 10 && written.length < 5; i++) {
      release();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(written).toEqual([1, 2, 3, 4, 5]);
    expect(writer.queued).toBe(0);
    writer.write(6);
    release();
    expect(written).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('reports a write the stream refused outright', () => {
    const errors: unknown[] = [];
    const writer = new StreamWriter<number>(
      {
        write: () => {
          throw new Error('stream destroyed');
        },
        once: () => undefined,
      },
      (err) => errors.push(err),
    );
    expect(writer.write(1)).toBe(false);
    expect(errors).toHaveLength(1);
  });
});
