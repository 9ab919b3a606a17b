import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeFactsResult } from '../src/grpc/runner.codec.js';
import { retryDelayMs, runnerServes } from '../src/infrastructure/facts.scheduler.js';
import { makeFacts } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';

describe('fact gathering requests', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start();
  });
  afterAll(() => h.stop());

  it('picks runners by their networks label', () => {
    expect(runnerServes({}, '10.1.2.3')).toBe(true);
    expect(runnerServes({ networks: '10.0.0.0/8, 192.168.1.0/24' }, '10.1.2.3')).toBe(true);
    expect(runnerServes({ networks: '10.0.0.0/8,192.168.1.0/24' }, '192.168.2.1')).toBe(false);
    expect(runnerServes({ networks: 'fd00::/8' }, 'fd12::1')).toBe(true);
    expect(runnerServes({ networks: '10.0.0.0/8' }, 'host.example.net')).toBe(true);
  });

  it('backs off exponentially with jitter, capped at five minutes', () => {
    expect(retryDelayMs(1, () => 0.5)).toBe(5000);
    expect(retryDelayMs(3, () => 0.5)).toBe(20_000);
    expect(retryDelayMs(30, () => 0.5)).toBe(300_000);
    expect(retryDelayMs(30, () => 1)).toBe(360_000);
  });

  it('asks a serving runner, records a failure with its reason, retries later, then records the facts', async () => {
    const facts = h.container.services.facts;
    const id = '00000000-0000-4000-8000-0000000000aa';
    const res = await h.request('POST', '/v1/server/', {
      headers: { authorization: h.config.discoveryTokens[0] ?? '' },
      body: { id, host: '10.20.0.5', username: 'ansible' },
    });
    expect(res.json.data).toMatchObject({ state: 'gathering_facts', facts: {} });
    expect(await facts.take([{ name: 'elsewhere', labels: { networks: '192.168.0.0/16' } }])).toEqual([]);
    const [request] = await facts.take([{ name: 'elsewhere', labels: { networks: '192.168.0.0/16' } }, { name: 'near', labels: { networks: '10.20.0.0/16' } }]);
    expect(request).toMatchObject({ runner: 'near', request: { serverId: id, address: '10.20.0.5', username: 'ansible', expectedHostKey: null } });
    // In flight: not handed out twice.
    expect(await facts.take([{ name: 'near', labels: {} }])).toEqual([]);
    await facts.complete('near', { requestId: request?.request.requestId ?? '', serverId: id, ok: false, error: '10.20.0.5: connection refused' });
    const failed = await h.container.services.servers.get(id);
    expect(failed.data).toMatchObject({ state: 'unreachable', facts_error: '10.20.0.5: connection refused' });
    expect(await facts.take([{ name: 'near', labels: {} }])).toEqual([]);
    h.clock.advance(10);
    const [again] = await facts.take([{ name: 'near', labels: {} }]);
    expect(again?.request.serverId).toBe(id);
    // Invalid facts are a failure too, with the schema's reason (decoded where they arrive).
    await facts.complete('near', decodeFactsResult('near', { request_id: again?.request.requestId ?? '', server_id: id, facts_json: '{"hostname": 5}', host_key: '', error: '' }));
    expect((await h.container.services.servers.get(id)).data.facts_error).toMatch(/invalid facts/);
    h.clock.advance(30);
    const [third] = await facts.take([{ name: 'near', labels: {} }]);
    // A stale answer (an older request) is ignored.
    await facts.complete('near', { requestId: request?.request.requestId ?? '', serverId: id, ok: true, facts: makeFacts('n1', '10.20.0.5'), hostKey: 'ssh-ed25519 AAAAold' });
    expect((await h.container.services.servers.get(id)).data.state).toBe('unreachable');
    await facts.complete('near', { requestId: third?.request.requestId ?? '', serverId: id, ok: true, facts: makeFacts('n1', '10.20.0.5'), hostKey: 'ssh-ed25519 AAAAnew' });
    const done = await h.container.services.servers.get(id);
    expect(done.data).toMatchObject({ state: 'operational', name: 'n1', ssh_host_key: 'ssh-ed25519 AAAAnew', facts_error: null });
    expect(await facts.count()).toBe(0);
    // A repeated registration asks again, with the recorded host key to enforce.
    await h.request('POST', '/v1/server/', { headers: { authorization: h.config.discoveryTokens[0] ?? '' }, body: { id, host: '10.20.0.5', username: 'ansible' } });
    const [fourth] = await facts.take([{ name: 'near', labels: {} }]);
    expect(fourth?.request.expectedHostKey).toBe('ssh-ed25519 AAAAnew');
  });

  it('keeps one unreachable version however often an unreachable host is retried; a new reason is one more', async () => {
    const facts = h.container.services.facts;
    const id = '00000000-0000-4000-8000-0000000000ab';
    const register = await h.request('POST', '/v1/server/', {
      headers: { authorization: h.config.discoveryTokens[0] ?? '' },
      body: { id, host: '10.20.0.6', username: 'ansible' },
    });
    expect(register.json.version).toBe(1);
    const fail = async (error: string) => {
      h.clock.advance(400); // past the longest backoff (5 min + 20 %)
      const request = (await facts.take([{ name: 'near', labels: {} }])).find((r) => r.request.serverId === id);
      expect(request).toBeDefined();
      await facts.complete('near', { requestId: request?.request.requestId ?? '', serverId: id, ok: false, error });
    };
    const versions = async () => {
      const res = await h.request('GET', `/v1/server/${id}/version/?all=1`, { token: await h.rootToken() });
      return (res.json.items as { version: number; data: { state: string; facts_error: string | null } }[])
        .map((v) => ({ version: v.version, state: v.data.state, facts_error: v.data.facts_error }))
        .sort((a, b) => a.version - b.version);
    };
    for (let i = 0; i < 6; i++) await fail('10.20.0.6: connection timed out');
    expect(await versions()).toEqual([
      { version: 1, state: 'gathering_facts', facts_error: null },
      { version: 2, state: 'unreachable', facts_error: '10.20.0.6: connection timed out' },
    ]);
    // Another failure mode is a change an operator wants to see (and when it came): one version, once.
    for (let i = 0; i < 3; i++) await fail('10.20.0.6: connection refused');
    expect((await versions()).map((v) => [v.version, v.state, v.facts_error])).toEqual([
      [1, 'gathering_facts', null],
      [2, 'unreachable', '10.20.0.6: connection timed out'],
      [3, 'unreachable', '10.20.0.6: connection refused'],
    ]);
    expect((await h.container.services.servers.get(id)).data.facts_error).toBe('10.20.0.6: connection refused');
    h.clock.advance(400);
    const last = (await facts.take([{ name: 'near', labels: {} }])).find((r) => r.request.serverId === id);
    await facts.complete('near', { requestId: last?.request.requestId ?? '', serverId: id, ok: true, facts: makeFacts('n2', '10.20.0.6'), hostKey: 'ssh-ed25519 AAAAn2' });
    expect((await versions()).map((v) => [v.version, v.state])).toEqual([
      [1, 'gathering_facts'],
      [2, 'unreachable'],
      [3, 'unreachable'],
      [4, 'operational'],
    ]);
    // Registering again with the same host and user: facts are asked for again (a state change, one version) ...
    await h.request('POST', '/v1/server/', { headers: { authorization: h.config.discoveryTokens[0] ?? '' }, body: { id, host: '10.20.0.6', username: 'ansible' } });
    // ... and the same registration repeated while they are gathered writes nothing more.
    await h.request('POST', '/v1/server/', { headers: { authorization: h.config.discoveryTokens[0] ?? '' }, body: { id, host: '10.20.0.6', username: 'ansible' } });
    expect((await versions()).map((v) => [v.version, v.state])).toEqual([
      [1, 'gathering_facts'],
      [2, 'unreachable'],
      [3, 'unreachable'],
      [4, 'operational'],
      [5, 'gathering_facts'],
    ]);
    expect((await facts.take([{ name: 'near', labels: {} }])).map((r) => r.request.serverId)).toContain(id);
  });
});
