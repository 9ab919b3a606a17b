// The real RunnerAgent against a real control plane: the control plane's test harness (real
// in-memory SQLite, real HTTP API) with its real gRPC server on 127.0.0.1 port 0. Only the
// agent's side effects (ansible-playbook, SSH) are scripted by the test.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlPlaneBed, type TestAgent } from './support/control-plane.js';
import { HOST_KEY, hostFacts, ScriptedPorts } from './support/scripted-ports.js';
import { eventually } from '@carapace/test-support/eventually';

/** What the agent itself writes to the log before the playbook's output. */
function preflightText(runner: string, ip: string): string {
  return `Carapace runner ${runner}: pre-flight SSH check of 1 host(s)\n  ${ip}: ok\n\n`;
}

/** Records the kinds of stored events (log, step) per execution, in the order the control plane stored them. */
function recordStored(bed: ControlPlaneBed): (executionId: string) => string[] {
  const events: { executionId: string; kind: string }[] = [];
  offs.push(bed.h.container.services.engine.events.on((event) => events.push(event)));
  // Runs of one kind collapsed: log text may come in several chunks.
  return (executionId) =>
    events.filter((e) => e.executionId === executionId && e.kind !== 'state').map((e) => e.kind).filter((kind, i, all) => all[i - 1] !== kind);
}
const offs: (() => void)[] = [];

describe('the runner agent against a real control plane over gRPC', () => {
  let bed: ControlPlaneBed;
  let ports: ScriptedPorts;

  beforeEach(async () => {
    bed = await ControlPlaneBed.start();
    ports = new ScriptedPorts();
  });
  afterEach(async () => {
    for (const off of offs.splice(0)) off();
    await bed.stop();
  });

  async function connected(t: TestAgent, connects = 1): Promise<void> {
    await eventually(`${t.name} connected`, () => t.agent.stats.connects >= connects);
  }

  it('runs an assignment: steps and log arrive in order, the execution completes, the slot frees', async () => {
    const stored = recordStored(bed);
    const t = await bed.agent('alpha', ports, { slots: 2 });
    await connected(t);
    const e = await bed.execution();
    const run = await ports.run(e.id);

    // What the port was given: the assignment, checked against the recorded host key first.
    expect(run.request.playbookId).toBe('hello_world');
    expect((run.request.configuration.inventory._meta as any).hostvars[e.ip]).toMatchObject({ ansible_user: 'ansible' });
    expect(ports.preflightCalls).toEqual([[{ address: e.ip, username: 'ansible', expectedHostKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake' }]]);
    await bed.until(e.id, 'started');
    expect((await bed.runner('alpha')).executions).toEqual([e.id]);

    run.log('PLAY [all] *********\n\nTASK [Gathering Facts] *****\n');
    run.step({ role: 'hello', name: 'Gathering Facts' });
    // Events go out as they happen, not at the end.
    await eventually('first step stored', async () => (await bed.steps(e.id)).length === 1);
    expect(await bed.state(e.id)).toBe('started');
    run.log('ok: [10.0.0.x]\n\nTASK [hello : say hello] ✓ ünïcödé 🦀\n');
    run.step({ role: 'hello', name: 'say hello' });
    run.log('PLAY RECAP *****\n10.0.0.x : ok=2 changed=0 unreachable=0 failed=0\n');
    run.finish('completed');

    await bed.until(e.id, 'completed');
    expect(await bed.log(e.id)).toBe(preflightText('alpha', e.ip) + run.text);
    const steps = await bed.steps(e.id);
    expect(steps.map((s) => [s.name, s.result, s.server_id])).toEqual([
      ['Gathering Facts', 'ok', e.serverId],
      ['say hello', 'ok', e.serverId],
    ]);
    // Each step was stored after the log text written before it, and before the text after it.
    expect(stored(e.id)).toEqual(['log', 'step', 'log', 'step', 'log']);
    expect((await bed.getExecution(e.id)).data.reason).toBeNull();

    // The slot is free again, on both sides, and every event is acknowledged.
    expect(t.agent.runningIds).toEqual([]);
    await eventually('events acknowledged', () => t.agent.pendingEvents === 0);
    expect(await bed.runner('alpha')).toMatchObject({ state: 'connected', slots: 2, free_slots: 2, executions: [] });
    expect(await bed.h.container.services.engine.runningOn('alpha')).toEqual([]);
  });

  it('keeps its run records through its port, logs the orphans killed at start, and sends a step by its host address', async () => {
    ports.records.orphans = [{ executionId: 'left-by-a-crash', pgid: 4242 }];
    const t = await bed.agent('recorder', ports, { slots: 1 });
    await connected(t);
    expect(ports.records.recovered).toBe(1);
    expect(t.log.lines.find((l) => l.msg === 'killed the processes of a run left by a previous runner process')).toMatchObject({
      executionId: 'left-by-a-crash',
      pgid: 4242,
    });

    const e = await bed.execution();
    const run = await ports.run(e.id);
    expect(run.request.workRoot).toBe(ports.records.workRoot);
    expect(run.request.knownHostsFile).toBe(`${ports.records.workRoot}/${e.id}.known_hosts`);
    expect(ports.records.knownHosts.get(e.id)).toBe(`${e.ip} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake\n`);
    run.started(31337);
    expect(ports.records.processGroups.get(e.id)).toBe(31337);

    // An inventory host named otherwise is reported by its address (`ansible_host`).
    run.step({ name: 'by address', host: 'node-a', address: e.ip });
    run.finish('completed');
    await bed.until(e.id, 'completed');
    expect((await bed.steps(e.id)).map((s) => [s.name, s.server_id])).toEqual([['by address', e.serverId]]);
    expect(ports.records.knownHosts.has(e.id)).toBe(false);
    expect(ports.records.processGroups.has(e.id)).toBe(false);
  });

  it('reconnects to a restarted control plane within its backoff and resends what was not acknowledged', async () => {
    const t = await bed.agent('phoenix', ports, { slots: 1, logChunkChars: 64, reconnect: { initialDelayMs: 20, maxDelayMs: 200 } });
    await connected(t);
    const e = await bed.execution();
    const run = await ports.run(e.id);
    run.log('PLAY [all] *********\n');
    run.step({ name: 'before the outage' });
    await eventually('events before the outage acknowledged', async () => (await bed.steps(e.id)).length === 1 && t.agent.pendingEvents === 0);

    await bed.closeGrpc();
    // The agent notices and keeps trying, every 200 ms at most. A dozen attempts make the
    // outage long enough (1-2 s) for gRPC's own channel backoff to matter if it were unbounded.
    await eventually('the agent retried while the control plane was down', () => t.log.count('stream to the control plane lost') >= 12);
    const retries = t.log.lines.filter((l) => l.msg === 'stream to the control plane lost').map((l) => l.retryInMs as number);
    expect(Math.max(...retries)).toBeLessThanOrEqual(200);

    // Meanwhile the run goes on: its events wait in the outbox.
    run.log('TASK [hello : during the outage] ✓ ünïcödé 🦀 — a line long enough to need more than one chunk of sixty-four\n');
    run.step({ name: 'during the outage' });
    run.log('ok: [host]\n');
    await eventually('events of the outage kept in the outbox', () => t.agent.pendingEvents >= 4);
    const pending = t.agent.pendingEvents;

    await bed.openGrpc(); // same port, same container
    const reopenedAt = Date.now();
    await eventually('reconnected', () => t.agent.stats.connects === 2, 5000);
    const reconnectMs = Date.now() - reopenedAt;
    // Within the configured maximum backoff (200 ms, twice: the agent's and the channel's),
    // plus room for a loaded machine; gRPC's default channel backoff would be 1.6 s or more.
    expect(reconnectMs).toBeLessThan(1000);
    expect(t.agent.stats.resent).toBeGreaterThanOrEqual(pending);
    expect(await bed.state(e.id)).toBe('started'); // the hello claimed the run: its lease is kept

    run.log('PLAY RECAP *****\n');
    run.step({ name: 'after the outage' });
    run.finish('completed');
    await bed.until(e.id, 'completed');
    expect(await bed.log(e.id)).toBe(preflightText('phoenix', e.ip) + run.text);
    expect((await bed.steps(e.id)).map((s) => s.name)).toEqual(['before the outage', 'during the outage', 'after the outage']);
    await eventually('all acknowledged', () => t.agent.pendingEvents === 0);
    expect(await bed.runner('phoenix')).toMatchObject({ state: 'connected', free_slots: 1, executions: [] });
  });

  it('keeps a run that ended while the control plane was away: its result is resent, not failed', async () => {
    const t = await bed.agent('away', ports, { slots: 1 });
    await connected(t);
    const e = await bed.execution();
    const run = await ports.run(e.id);
    run.log('PLAY [all] *********\n');
    await eventually('first log acknowledged', async () => (await bed.log(e.id)).endsWith('PLAY [all] *********\n') && t.agent.pendingEvents === 0);

    await bed.closeGrpc();
    await eventually('the agent noticed the outage', () => t.log.count('stream to the control plane lost') >= 1);
    run.step({ name: 'say hello' });
    run.log('PLAY RECAP *****\n');
    run.finish('completed');
    await eventually('run over in the agent', () => t.agent.runningIds.length === 0);
    expect(t.agent.pendingEvents).toBe(3); // step, log, result

    await bed.openGrpc();
    await eventually('reconnected', () => t.agent.stats.connects === 2);
    await bed.until(e.id, 'completed');
    expect((await bed.getExecution(e.id)).data.reason).toBeNull();
    expect(await bed.log(e.id)).toBe(preflightText('away', e.ip) + run.text);
    expect((await bed.steps(e.id)).map((s) => s.name)).toEqual(['say hello']);
    await eventually('all acknowledged', () => t.agent.pendingEvents === 0);
  });

  it('relays a cancel to the run, and the execution ends canceled', async () => {
    const t = await bed.agent('stopper', ports, { slots: 1 });
    await connected(t);
    const e = await bed.execution();
    const run = await ports.run(e.id);
    run.log('TASK [hello : wait] *****\n');
    await bed.until(e.id, 'started');

    const del = await bed.h.request('DELETE', `/v1/execution/${e.id}/`, { token: bed.root });
    expect(del.status, del.body).toBe(200);
    expect(del.json.data.state).toBe('canceling');
    await eventually('cancel reached the run', () => run.cancels.length === 1);
    expect(run.cancels).toEqual(['canceled by a user']);
    expect(await bed.state(e.id)).toBe('canceling');

    run.log('^C [ERROR]: User interrupted execution\n');
    run.finish('canceled', 'interrupted');
    await bed.until(e.id, 'canceled');
    expect((await bed.getExecution(e.id)).data.reason).toBe('canceled by a user');
    expect(await bed.log(e.id)).toBe(preflightText('stopper', e.ip) + run.text);
    expect(t.agent.runningIds).toEqual([]);
    expect(await bed.h.container.services.engine.runningOn('stopper')).toEqual([]);
    expect(run.cancels).toHaveLength(1);
  });

  it('cancels a run whose pre-flight is still under way: the playbook never starts', async () => {
    ports.holdPreflight();
    const t = await bed.agent('early', ports, { slots: 1 });
    await connected(t);
    const e = await bed.execution();
    await eventually('pre-flight started', () => ports.preflightCalls.length === 1);
    const del = await bed.h.request('DELETE', `/v1/execution/${e.id}/`, { token: bed.root });
    expect(del.json.data.state).toBe('canceling');
    await eventually('cancel reached the agent', () => t.log.lines.some((l) => l.msg === 'canceling execution' && l.executionId === e.id));
    ports.releasePreflight();
    await bed.until(e.id, 'canceled');
    expect(ports.runs.size).toBe(0);
    expect(t.agent.runningIds).toEqual([]);
  });

  it('drains: the running execution finishes, nothing new is assigned, then the agent stops', async () => {
    const t = await bed.agent('drainer', ports, { slots: 2, drainGraceMs: 30_000 });
    await connected(t);
    const first = await bed.execution();
    const run = await ports.run(first.id);
    run.log('TASK [hello : long] *****\n');

    let stopped = false;
    void t.agent.stopped.then(() => (stopped = true));
    const drained = t.agent.drain('SIGTERM');
    await eventually('control plane sees the runner draining', async () => (await bed.runner('drainer'))?.state === 'draining');

    // A free slot, and queued work: still nothing for a draining runner. A second runner
    // without slots makes a dispatch round observable: it is asked for the facts of a server
    // registered after the execution was queued, in the same round that skips the drainer.
    const observerPorts = new ScriptedPorts();
    await connected(await bed.agent('observer', observerPorts, { slots: 0 }));
    const second = await bed.execution();
    await registerServer(bed, '10.9.0.1');
    await eventually('a dispatch round after the second execution', () => observerPorts.factsCalls.some((c) => c.address === '10.9.0.1'));
    expect(await bed.state(second.id)).toBe('created');
    expect(ports.runs.size).toBe(1);
    expect(ports.factsCalls.filter((c) => c.address === '10.9.0.1')).toEqual([]);
    expect(stopped).toBe(false);
    expect(run.cancels).toEqual([]);

    run.log('ok: [host]\n');
    run.step({ name: 'long' });
    run.finish('completed');
    await drained;
    await t.agent.stopped;
    expect(await bed.state(first.id)).toBe('completed');
    expect(await bed.log(first.id)).toBe(preflightText('drainer', first.ip) + run.text);
    expect(t.agent.pendingEvents).toBe(0);
    expect(t.agent.stats.assignments).toBe(1);
    await eventually('runner disconnected', async () => (await bed.runner('drainer')).state === 'disconnected');
    expect(await bed.state(second.id)).toBe('created');
    expect(ports.runs.size).toBe(1);
  });

  it('a drain past its grace period cancels the runs left, reports them canceled, then stops', async () => {
    const t = await bed.agent('hurried', ports, { slots: 1, drainGraceMs: 100 });
    await connected(t);
    const e = await bed.execution();
    const run = await ports.run(e.id);
    await bed.until(e.id, 'started');

    const drained = t.agent.drain('SIGTERM');
    expect(t.agent.drain('SIGTERM again')).toBe(drained);
    await eventually('the run canceled once the grace period was over', () => run.cancels.length === 1);
    expect(run.cancels).toEqual(['the runner shut down before the run ended']);
    run.finish('canceled', 'interrupted');
    await drained;
    await t.agent.stopped;
    expect(t.agent.runningIds).toEqual([]);
    expect(t.log.lines.find((l) => l.msg === 'execution ended')).toMatchObject({
      executionId: e.id,
      outcome: 'canceled',
      reason: 'the runner shut down before the run ended',
    });
  });

  it('a drain while the control plane is away waits for it to acknowledge the results', async () => {
    const t = await bed.agent('late', ports, { slots: 1, drainGraceMs: 30_000 });
    await connected(t);
    const e = await bed.execution();
    const run = await ports.run(e.id);
    await eventually('run under way, events acknowledged', () => t.agent.pendingEvents === 0 && t.agent.runningIds.length === 1);

    await bed.closeGrpc();
    await eventually('the agent noticed the outage', () => t.log.count('stream to the control plane lost') >= 1);
    const drained = t.agent.drain('SIGTERM');
    run.log('PLAY RECAP *****\n');
    run.finish('completed');
    await eventually('run over in the agent', () => t.agent.runningIds.length === 0);

    await bed.openGrpc();
    await drained;
    await bed.until(e.id, 'completed');
    expect(t.agent.pendingEvents).toBe(0);
    expect(await bed.log(e.id)).toBe(preflightText('late', e.ip) + run.text);
    // It came back only to deliver: draining, without slots, and gone after.
    await eventually('runner disconnected', async () => (await bed.runner('late')).state === 'disconnected');
  });

  it('waits the longest delay before retrying a refused stream (revoked token)', async () => {
    const t = await bed.agent('revoked', ports, { slots: 1, reconnect: { initialDelayMs: 20, maxDelayMs: 400 } });
    await connected(t);
    const del = await bed.h.request('DELETE', '/v1/runner/revoked/', { token: bed.root });
    expect(del.status).toBe(200);
    await eventually('refused twice', () => t.log.lines.filter((l) => l.msg === 'stream to the control plane lost').length >= 2);
    // At least two (a third may have come meanwhile, 200 to 400 ms later), each UNAUTHENTICATED.
    const refusals = t.log.lines.filter((l) => l.msg === 'stream to the control plane lost');
    expect(refusals.length).toBeGreaterThanOrEqual(2);
    expect(new Set(refusals.map((l) => l.code))).toEqual(new Set([16]));
    // Full jitter over the upper half of the cap.
    for (const l of refusals) expect(l.retryInMs).toBeGreaterThanOrEqual(200);
    expect(t.agent.stats.connects).toBe(1);
  });

  it('gathers the facts of a registered server; a failure makes it unreachable with the reason', async () => {
    const t = await bed.agent('facts', ports, { slots: 1 });
    await connected(t);

    const okId = await registerServer(bed, '10.20.0.7', 'ceph');
    await eventually('server operational', async () => (await bed.server(okId)).data.state === 'operational');
    expect(ports.factsCalls).toContainEqual({ address: '10.20.0.7', username: 'ceph', expectedHostKey: null });
    const server = await bed.server(okId);
    expect(server.data).toMatchObject({
      name: 'ceph-node-7',
      fqdn: 'ceph-node-7.lab.example.com',
      ip: '10.20.0.7',
      facts: hostFacts('10.20.0.7'),
      facts_error: null,
      ssh_host_key: HOST_KEY,
    });

    const reason = 'ssh: connect to host 10.20.0.8 port 22: No route to host';
    ports.factsFailures.set('10.20.0.8', reason);
    const badId = await registerServer(bed, '10.20.0.8', 'ceph');
    await eventually('server unreachable', async () => (await bed.server(badId)).data.state === 'unreachable');
    expect(ports.factsCalls).toContainEqual({ address: '10.20.0.8', username: 'ceph', expectedHostKey: null });
    expect((await bed.server(badId)).data).toMatchObject({ facts: {}, facts_error: reason, ssh_host_key: null });
  });

  it('with one slot, runs one of two queued executions at a time', async () => {
    const a = await bed.execution();
    const b = await bed.execution();
    const t = await bed.agent('single', ports, { slots: 1 });
    const runA = await ports.run(a.id);
    await bed.until(a.id, 'started');

    // Make a dispatch round observable: a facts request is served in the same round as
    // assignments, so once the agent was asked for facts, the round that skipped b is over.
    await registerServer(bed, '10.30.0.1');
    await eventually('facts asked after a dispatch round', () => ports.factsCalls.some((c) => c.address === '10.30.0.1'));
    expect(await bed.state(b.id)).toBe('created');
    expect(ports.runs.size).toBe(1);
    expect(t.agent.runningIds).toEqual([a.id]);
    expect(await bed.runner('single')).toMatchObject({ slots: 1, free_slots: 0, executions: [a.id] });

    runA.step({ name: 'a' });
    runA.finish('completed');
    const runB = await ports.run(b.id);
    expect(await bed.state(a.id)).toBe('completed');
    await bed.until(b.id, 'started');
    expect(t.agent.runningIds).toEqual([b.id]);
    runB.finish('failed', 'exit code 2');
    await bed.until(b.id, 'failed');
    expect((await bed.getExecution(b.id)).data.reason).toBe('exit code 2');
    expect(t.agent.stats.assignments).toBe(2);
    expect(t.agent.runningIds).toEqual([]);
  });
});

/** Registers a server with the discovery token (POST /v1/server/), as its first boot does. */
async function registerServer(bed: ControlPlaneBed, ip: string, username = 'root'): Promise<string> {
  const id = randomUUID();
  const res = await bed.h.request('POST', '/v1/server/', {
    headers: { authorization: bed.h.config.discoveryTokens[0] ?? '' },
    body: { id, host: ip, username },
  });
  if (res.status !== 200) throw new Error(`register ${ip}: ${res.status} ${res.body}`);
  expect(res.json.data.state).toBe('gathering_facts');
  return id;
}

describe('runners connecting together', () => {
  it('spread their heartbeats over the period instead of beating at the same instant', async () => {
    const bed = await ControlPlaneBed.start({ CARAPACE_RUNNER_HEARTBEAT_INTERVAL_MS: '1500' });
    const first = new Map<string, number>();
    const runners = bed.h.container.services.runners;
    const heartbeat = runners.heartbeat.bind(runners);
    runners.heartbeat = (session) => {
      if (!first.has(session.name)) first.set(session.name, performance.now());
      return heartbeat(session);
    };
    try {
      const ports = new ScriptedPorts();
      const agents = await Promise.all(Array.from({ length: 12 }, (_, i) => bed.agent(`beat-${i}`, ports)));
      await eventually('all connected', () => agents.every((t) => t.agent.stats.connects >= 1));
      await eventually('a heartbeat from each', () => first.size === agents.length, 5000);
      const times = [...first.values()];
      // Connected within moments of each other, beating at the same period: without a random
      // first beat, they would beat within those moments for as long as they stay connected.
      expect(Math.max(...times) - Math.min(...times)).toBeGreaterThan(500);
    } finally {
      await bed.stop();
    }
  });
});
