// A runner given several control-plane addresses (replicas on one database): the real agent,
// configured the way carapace-runner is (CARAPACE_RUNNER_URL with a list), against the
// control plane's test harness with two real gRPC servers over the same container, one of
// them behind a TCP relay the test can freeze and kill. Only ansible-playbook and SSH are
// scripted.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlPlaneBed, type TestRunner } from './support/control-plane.js';
import { scrape } from './support/metrics.js';
import { ScriptedPorts } from './support/scripted-ports.js';
import { refusedPort, TcpProxy } from './support/tcp-proxy.js';
import { eventually } from '@carapace/test-support/eventually';

/** What the agent itself writes to the log before the playbook's output. */
function preflightText(runner: string, ip: string): string {
  return `Carapace runner ${runner}: pre-flight SSH check of 1 host(s)\n  ${ip}: ok\n\n`;
}

/** The addresses the runner logged it connected to, in order. */
function connectedTo(t: TestRunner): unknown[] {
  return t.log.lines.filter((l) => l.msg === 'connected to the control plane').map((l) => l.controlPlane);
}

describe('a runner with several control-plane addresses', () => {
  let bed: ControlPlaneBed;
  let ports: ScriptedPorts;
  const proxies: TcpProxy[] = [];

  beforeEach(async () => {
    bed = await ControlPlaneBed.start();
    ports = new ScriptedPorts();
  });
  afterEach(async () => {
    await bed.stop();
    for (const proxy of proxies.splice(0)) await proxy.kill();
  });

  it('moves past an address that refuses connections and runs its executions through the next one', async () => {
    const refusing = `127.0.0.1:${await refusedPort()}`;
    const t = await bed.startRunner('second-choice', ports, { CARAPACE_RUNNER_URL: `${refusing},${bed.address}`, CARAPACE_RUNNER_SLOTS: '1' });
    await eventually('connected', () => t.agent.stats.connects === 1);
    expect(t.log.lines.find((l) => l.msg === 'runner starting')).toMatchObject({ controlPlanes: [refusing, bed.address] });
    const lost = t.log.lines.filter((l) => l.msg === 'stream to the control plane lost');
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ controlPlane: refusing, next: bed.address, code: 14 }); // UNAVAILABLE
    expect(connectedTo(t)).toEqual([bed.address]);
    expect(await bed.runner('second-choice')).toMatchObject({ state: 'connected', slots: 1 });

    const e = await bed.execution();
    const run = await ports.run(e.id);
    run.log('PLAY [all] *********\n');
    run.step({ name: 'say hello' });
    run.log('PLAY RECAP *****\n');
    run.finish('completed');
    await bed.until(e.id, 'completed');
    expect(await bed.log(e.id)).toBe(preflightText('second-choice', e.ip) + run.text);
    expect((await bed.steps(e.id)).map((s) => s.name)).toEqual(['say hello']);
    await eventually('all acknowledged', () => t.agent.pendingEvents === 0);
    // Connected all along: the address that refused was tried once.
    expect(t.log.count('stream to the control plane lost')).toBe(1);
  });

  it('moves to replica B when replica A dies mid-run, and resends there what A never acknowledged', async () => {
    const proxyA = await TcpProxy.start(bed.port);
    proxies.push(proxyA);
    const a = proxyA.address;
    const b = `127.0.0.1:${(await bed.openReplica()).port}`;
    const t = await bed.startRunner('survivor', ports, {
      CARAPACE_RUNNER_URL: `${a},${b}`,
      CARAPACE_RUNNER_SLOTS: '1',
      CARAPACE_RUNNER_METRICS_LISTEN: '127.0.0.1:0',
    });
    const metricsUrl = `http://127.0.0.1:${t.metrics?.address.port}/metrics`;
    await eventually('connected to A', () => t.agent.stats.connects === 1);
    expect(connectedTo(t)).toEqual([a]);
    const e = await bed.execution();
    const run = await ports.run(e.id);
    run.log('PLAY [all] *********\n');
    run.step({ name: 'acknowledged by A' });
    await eventually('first events stored through A and acknowledged', async () => (await bed.steps(e.id)).length === 1 && t.agent.pendingEvents === 0);
    const before = await scrape(metricsUrl);
    expect(before.get(`carapace_runner_control_plane_connected{address="${a}"}`)).toBe(1);
    expect(before.get(`carapace_runner_control_plane_connected{address="${b}"}`)).toBe(0);

    // A hangs: what the runner sends now reaches no one and is never acknowledged...
    proxyA.freeze();
    run.log('TASK [hello : sent to A, never acknowledged] *****\n');
    run.step({ name: 'sent to A, never acknowledged' });
    await eventually('events written to A, unacknowledged', () => t.agent.pendingEvents >= 2);
    const unacknowledged = t.agent.pendingEvents;
    expect(await bed.steps(e.id)).toHaveLength(1);
    // ...then it dies the hard way (SIGKILL): its connections reset, new ones refused.
    await proxyA.kill();
    await bed.closeGrpc();

    await eventually('reconnected to B', () => t.agent.stats.connects === 2);
    expect(connectedTo(t)).toEqual([a, b]);
    expect(t.log.lines.find((l) => l.msg === 'stream to the control plane lost')).toMatchObject({ controlPlane: a, next: b });
    expect(t.agent.stats.resent).toBeGreaterThanOrEqual(unacknowledged);
    expect(t.log.lines.find((l) => l.msg === 'resent unacknowledged events')).toMatchObject({ controlPlane: b });
    // B's hello named the run: B keeps it (and its lease) going.
    expect(await bed.state(e.id)).toBe('started');

    run.log('PLAY RECAP *****\n');
    run.step({ name: 'after the move' });
    run.finish('completed');
    await bed.until(e.id, 'completed');
    // Every event once, in order: nothing lost with A, nothing doubled by the resend.
    expect(await bed.log(e.id)).toBe(preflightText('survivor', e.ip) + run.text);
    expect((await bed.steps(e.id)).map((s) => s.name)).toEqual(['acknowledged by A', 'sent to A, never acknowledged', 'after the move']);
    expect((await bed.getExecution(e.id)).data.reason).toBeNull();
    await eventually('all acknowledged by B', () => t.agent.pendingEvents === 0);
    expect(await bed.runner('survivor')).toMatchObject({ state: 'connected', free_slots: 1, executions: [] });

    const after = await scrape(metricsUrl);
    expect(after.get(`carapace_runner_control_plane_connected{address="${a}"}`)).toBe(0);
    expect(after.get(`carapace_runner_control_plane_connected{address="${b}"}`)).toBe(1);
    expect(after.get('carapace_runner_reconnects_total')).toBe(1);
    expect(after.get(`carapace_runner_stream_failures_total{address="${a}"}`)).toBe(1);
    expect(after.get(`carapace_runner_stream_failures_total{address="${b}"}`)).toBe(0);
    expect(after.get('carapace_runner_events_resent_total')).toBeGreaterThanOrEqual(unacknowledged);
  });

  it('goes round the list while no address answers, and connects once one does', async () => {
    const first = `127.0.0.1:${await refusedPort()}`;
    const t = await bed.startRunner('patient', ports, { CARAPACE_RUNNER_URL: `${first},${bed.address}` });
    await eventually('connected', () => t.agent.stats.connects === 1);
    await bed.closeGrpc();
    // Both down: the attempts alternate between the two addresses.
    await eventually('several attempts', () => t.log.count('stream to the control plane lost') >= 6);
    const tried = t.log.lines.filter((l) => l.msg === 'stream to the control plane lost').map((l) => l.controlPlane);
    for (let i = 1; i < tried.length; i += 1) expect(tried[i]).not.toBe(tried[i - 1]);
    await bed.openGrpc(); // the second address comes back
    await eventually('reconnected', () => t.agent.stats.connects === 2);
    expect(connectedTo(t)).toEqual([bed.address, bed.address]);
  });
});
