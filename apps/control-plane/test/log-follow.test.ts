import { once } from 'node:events';
import { get, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addServer } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';
import { eventually } from '@carapace/test-support/eventually';

// The headers of a followed log must not wait for the first byte of the log.
const HEADERS_WITHIN_MS = 2_000;

describe('GET /v1/execution/{id}/log/?follow=yes on a queued execution', () => {
  let h: Harness;
  let root: string;
  let clusterId: string;
  let address: string;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'follow' } })).json.id;
    address = await h.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => h.stop());

  async function queued(): Promise<string> {
    const s = await addServer(h);
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'f', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [s.id] },
    });
    const execution = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: 1 } } });
    expect(execution.json.data.state).toBe('created');
    return execution.json.id as string;
  }

  async function follow(id: string) {
    const started = Date.now();
    // the bound applies to the headers only: the body then waits for the run
    const headersDue = new AbortController();
    const timer = setTimeout(() => headersDue.abort(new Error(`no response headers within ${HEADERS_WITHIN_MS} ms`)), HEADERS_WITHIN_MS);
    const res = await fetch(`${address}/v1/execution/${id}/log/?follow=yes`, { headers: { authorization: root }, signal: headersDue.signal }).finally(() =>
      clearTimeout(timer),
    );
    const ms = Date.now() - started;
    const reader = res.body?.getReader();
    if (!reader) throw new Error('no body');
    const decoder = new TextDecoder();
    let received = '';
    const read = async (until: (text: string) => boolean) => {
      while (!until(received)) {
        const { value, done } = await reader.read();
        if (done) return true;
        received += decoder.decode(value, { stream: true });
      }
      return false;
    };
    return { res, ms, read, text: () => received };
  }

  it('sends the status and headers at once, then streams the log when it comes and ends with the run', async () => {
    const id = await queued();
    const followed = await follow(id);
    expect(followed.res.status).toBe(200);
    expect(followed.res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(followed.res.headers.get('cache-control')).toBe('private, no-store, no-cache');
    expect(followed.ms).toBeLessThan(HEADERS_WITHIN_MS);
    expect((await h.request('GET', `/v1/execution/${id}/`, { token: root })).json.data.state).toBe('created');

    const engine = h.container.services.engine;
    expect((await engine.claim('r', 1)).map((a) => a.execution.id)).toEqual([id]);
    await engine.appendLog(id, 0, 'PLAY [hello] ****\n');
    await followed.read((text) => text.includes('PLAY [hello]'));
    await engine.appendLog(id, 'PLAY [hello] ****\n'.length, 'PLAY RECAP ****\n');
    await followed.read((text) => text.includes('RECAP'));
    await engine.finish(id, 'completed', null);
    expect(await followed.read(() => false)).toBe(true);
    expect(followed.text()).toBe('PLAY [hello] ****\nPLAY RECAP ****\n');
  });

  it('ends an empty followed log when the queued execution is canceled', async () => {
    const id = await queued();
    const followed = await follow(id);
    expect(followed.res.status).toBe(200);
    expect(followed.ms).toBeLessThan(HEADERS_WITHIN_MS);
    expect((await h.request('DELETE', `/v1/execution/${id}/`, { token: root })).json.data.state).toBe('canceled');
    expect(await followed.read(() => false)).toBe(true);
    expect(followed.text()).toBe('');
  });

  it('stops following when the client goes away: the follower leaves the engine\'s events', async () => {
    const id = await queued();
    const engine = h.container.services.engine;
    const listeners = () => (engine.events as unknown as { listeners: Set<unknown> }).listeners.size;
    const before = listeners();
    // node:http, not fetch: the client goes away by closing its connection at once.
    const req = get(`${address}/v1/execution/${id}/log/?follow=yes`, { headers: { authorization: root } });
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    expect(res.statusCode).toBe(200);
    await eventually('the follower to subscribe', () => listeners() === before + 1);
    req.destroy();
    await eventually('the follower to unsubscribe', () => listeners() === before);
    expect((await h.request('DELETE', `/v1/execution/${id}/`, { token: root })).json.data.state).toBe('canceled');
  });
});

describe('ExecutionService.follow', () => {
  let h: Harness;
  let root: string;
  let clusterId: string;
  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'follow-service' } })).json.id;
  });
  afterAll(() => h.stop());

  async function running(): Promise<string> {
    const s = await addServer(h);
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'f', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [s.id] },
    });
    const execution = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: 1 } } });
    const id = execution.json.id as string;
    expect((await h.container.services.engine.claim('r', 1)).map((a) => a.execution.id)).toEqual([id]);
    return id;
  }

  it('reads a long log in bounded pieces of at most 64 chunks, and ends with the run', async () => {
    const id = await running();
    const engine = h.container.services.engine;
    const chunk = (i: number) => `${String(i).padStart(4, '0')}\n`;
    for (let i = 0; i < 100; i++) await engine.appendLog(id, i * 5, chunk(i));
    await engine.finish(id, 'completed', null);
    const pieces: string[] = [];
    for await (const piece of h.container.services.executions.follow(id, new AbortController().signal)) pieces.push(piece);
    expect(pieces.map((p) => p.length / 5)).toEqual([64, 36]);
    expect(pieces.join('')).toBe(Array.from({ length: 100 }, (_, i) => chunk(i)).join(''));
  });

  it('waits for the engine\'s events without polling, and ends when its signal aborts', async () => {
    const id = await running();
    const engine = h.container.services.engine;
    const stop = new AbortController();
    const follower = h.container.services.executions.follow(id, stop.signal);
    const first = follower.next();
    await engine.appendLog(id, 0, 'one\n');
    expect(await first).toEqual({ value: 'one\n', done: false });
    const second = follower.next();
    let settled = false;
    void second.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBe(false);
    stop.abort();
    expect(await second).toEqual({ value: undefined, done: true });
    await engine.finish(id, 'completed', null);
  });

  it('answers 404 for an unknown execution', async () => {
    const follower = h.container.services.executions.follow('00000000-0000-4000-8000-000000000000', new AbortController().signal);
    await expect(follower.next()).rejects.toMatchObject({ statusCode: 404 });
  });
});
