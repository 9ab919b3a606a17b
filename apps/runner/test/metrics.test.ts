// The runner's Prometheus endpoint, on a runner started from its configuration
// (CARAPACE_RUNNER_METRICS_LISTEN on port 0) against the control plane's test harness over
// real gRPC. Only ansible-playbook and SSH are scripted.
import { createServer, type AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunnerConfigError } from '../src/config.js';
import { VERSION } from '../src/version.js';
import { ControlPlaneBed, type TestRunner } from './support/control-plane.js';
import { parseExposition, scrape } from './support/metrics.js';
import { ScriptedPorts } from './support/scripted-ports.js';
import { eventually } from '@carapace/test-support/eventually';

function endpoint(t: TestRunner, path = '/metrics'): string {
  if (!t.metrics) throw new Error(`${t.name} has no metrics endpoint`);
  return `http://127.0.0.1:${t.metrics.address.port}${path}`;
}

describe('the runner metrics endpoint', () => {
  let bed: ControlPlaneBed;
  let ports: ScriptedPorts;

  beforeEach(async () => {
    bed = await ControlPlaneBed.start();
    ports = new ScriptedPorts();
  });
  afterEach(async () => {
    await bed.stop();
  });

  it('exposes slots, outbox, runs, reconnects and the connected control plane, with the process metrics', async () => {
    const t = await bed.startRunner('measured', ports, { CARAPACE_RUNNER_METRICS_LISTEN: '127.0.0.1:0', CARAPACE_RUNNER_SLOTS: '3' });
    expect(t.log.lines.find((l) => l.msg === 'metrics endpoint listening')).toMatchObject({ host: '127.0.0.1', port: t.metrics?.address.port, path: '/metrics' });
    await eventually('connected', () => t.agent.stats.connects === 1);

    const e = await bed.execution();
    const run = await ports.run(e.id);
    run.log('PLAY [all] *********\n');
    const during = await scrape(endpoint(t));
    expect(during.get('carapace_runner_slots')).toBe(3);
    expect(during.get('carapace_runner_slots_busy')).toBe(1);
    expect(during.get('carapace_runner_runs_started_total')).toBe(1);
    expect(during.get('carapace_runner_runs_finished_total{outcome="completed"}')).toBe(0);

    // Events the control plane has not acknowledged: the stream is down while they are made.
    await bed.closeGrpc();
    await eventually('the runner noticed the outage', () => t.log.count('stream to the control plane lost') >= 1);
    run.step({ name: 'say hello' });
    run.log('PLAY RECAP *****\n');
    const outage = await scrape(endpoint(t));
    expect(outage.get('carapace_runner_outbox_events')).toBe(t.agent.pendingEvents);
    expect(outage.get('carapace_runner_outbox_events')).toBeGreaterThanOrEqual(2);
    expect(outage.get('carapace_runner_outbox_memory_bytes')).toBeGreaterThanOrEqual('PLAY RECAP *****\n'.length);
    expect(outage.get(`carapace_runner_control_plane_connected{address="${bed.address}"}`)).toBe(0);

    await bed.openGrpc();
    run.finish('completed');
    await bed.until(e.id, 'completed');
    await eventually('all acknowledged', () => t.agent.pendingEvents === 0);

    const res = await fetch(endpoint(t));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    expect(text).toContain('# TYPE carapace_runner_runs_finished_total counter');
    expect(text).toContain('# TYPE carapace_runner_slots_busy gauge');
    const m = parseExposition(text);
    expect(m.get(`carapace_runner_info{name="measured",version="${VERSION}"}`)).toBe(1);
    expect(m.get('carapace_runner_slots')).toBe(3);
    expect(m.get('carapace_runner_slots_busy')).toBe(0);
    expect(m.get('carapace_runner_draining')).toBe(0);
    expect(m.get('carapace_runner_outbox_events')).toBe(0);
    expect(m.get('carapace_runner_outbox_memory_bytes')).toBe(0);
    expect(m.get('carapace_runner_runs_started_total')).toBe(1);
    expect(m.get('carapace_runner_runs_finished_total{outcome="completed"}')).toBe(1);
    expect(m.get('carapace_runner_runs_finished_total{outcome="failed"}')).toBe(0);
    expect(m.get('carapace_runner_runs_finished_total{outcome="canceled"}')).toBe(0);
    expect(m.get(`carapace_runner_control_plane_connected{address="${bed.address}"}`)).toBe(1);
    expect(m.get('carapace_runner_reconnects_total')).toBe(1);
    expect(m.get(`carapace_runner_stream_failures_total{address="${bed.address}"}`)).toBeGreaterThanOrEqual(1);
    expect(m.get('carapace_runner_events_resent_total')).toBeGreaterThanOrEqual(3); // step, log, result at least
    // prom-client's default metrics of the process.
    expect(m.get('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(m.get('process_resident_memory_bytes')).toBeGreaterThan(1024 * 1024);
    expect(m.get('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(Math.abs((m.get('process_start_time_seconds') ?? 0) - Date.now() / 1000)).toBeLessThan(3600);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
  });

  it('answers 404 on any other path, 405 to another method, HEAD without a body', async () => {
    const t = await bed.startRunner('paths', ports, { CARAPACE_RUNNER_METRICS_LISTEN: '127.0.0.1:0' });
    for (const path of ['/', '/metric', '/metrics/', '/metrics/x', '/favicon.ico', '/v1/runner/']) {
      const res = await fetch(endpoint(t, path));
      expect(res.status, path).toBe(404);
      expect(await res.text()).toBe('not found\n');
    }
    expect((await fetch(endpoint(t, '/metrics?name[]=carapace_runner_slots'))).status).toBe(200);
    const post = await fetch(endpoint(t), { method: 'POST', body: 'x' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    const head = await fetch(endpoint(t), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('stops listening when the runner stops', async () => {
    const t = await bed.startRunner('closing', ports, { CARAPACE_RUNNER_METRICS_LISTEN: '127.0.0.1:0' });
    await eventually('connected', () => t.agent.stats.connects === 1);
    const url = endpoint(t);
    expect((await fetch(url)).status).toBe(200); // a keep-alive connection stays open after this
    t.agent.stop();
    await t.agent.stopped;
    await eventually('metrics endpoint closed', async () => {
      try {
        await fetch(url);
        return false;
      } catch (err) {
        return ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code === 'ECONNREFUSED';
      }
    });
  });

  it('has no endpoint unless CARAPACE_RUNNER_METRICS_LISTEN is set', async () => {
    const t = await bed.startRunner('unmeasured', ports);
    expect(t.metrics).toBeNull();
    await eventually('connected', () => t.agent.stats.connects === 1);
    expect(t.log.count('metrics endpoint listening')).toBe(0);
    const e = await bed.execution();
    (await ports.run(e.id)).finish('completed');
    await bed.until(e.id, 'completed');
  });

  it('keeps the metrics of two runners in one process apart (a registry each)', async () => {
    const one = await bed.startRunner('one', ports, { CARAPACE_RUNNER_METRICS_LISTEN: '127.0.0.1:0', CARAPACE_RUNNER_SLOTS: '1' });
    const two = await bed.startRunner('two', new ScriptedPorts(), { CARAPACE_RUNNER_METRICS_LISTEN: '127.0.0.1:0', CARAPACE_RUNNER_SLOTS: '4' });
    await eventually('both connected', () => one.agent.stats.connects === 1 && two.agent.stats.connects === 1);
    const [m1, m2] = await Promise.all([scrape(endpoint(one)), scrape(endpoint(two))]);
    expect(m1.get('carapace_runner_slots')).toBe(1);
    expect(m2.get('carapace_runner_slots')).toBe(4);
    expect(m1.get(`carapace_runner_info{name="one",version="${VERSION}"}`)).toBe(1);
    expect([...m1.keys()].some((k) => k.includes('name="two"'))).toBe(false);
  });

  it('refuses to start when the metrics address cannot be listened on, and starts nothing', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const attempt = bed.startRunner('blocked', ports, { CARAPACE_RUNNER_METRICS_LISTEN: `127.0.0.1:${port}` });
      await expect(attempt).rejects.toThrow(RunnerConfigError);
      await expect(attempt).rejects.toThrow(new RegExp(`cannot serve metrics on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`));
      expect((await bed.runner('blocked')).state).toBe('disconnected');
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });
});
