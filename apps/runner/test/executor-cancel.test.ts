// Canceling a real ansible-playbook run: SIGINT, then SIGTERM, then SIGKILL to its
// process group, and nothing of the group left when the result comes.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAnsibleRun, type RunHandle } from '../src/executor/index.js';
import {
  fixture,
  groupAlive,
  groupCommands,
  killGroup,
  localInventory,
  localSpec,
  RecordingSink,
  tempDir,
  waitForCommandInGroup,
} from './fixtures/executor/executor-helpers.js';

let workRoot = '';
let removeWorkRoot: () => Promise<void> = async () => undefined;
const runs: RunHandle[] = [];

beforeAll(async () => {
  ({ dir: workRoot, remove: removeWorkRoot } = await tempDir('carapace-executor-cancel-'));
});

afterEach(async () => {
  // a failed test must not leave a sleeping playbook behind
  for (const run of runs.splice(0)) {
    killGroup(run.pid);
    await run.result;
  }
});

afterAll(async () => {
  await removeWorkRoot();
});

describe('RunHandle.cancel', () => {
  it('stops a task midway with SIGINT: canceled within seconds, nothing of the group left', async () => {
    const sink = new RecordingSink();
    const run = startAnsibleRun(localSpec(workRoot), sink, { contentDir: fixture('sleeping') });
    runs.push(run);
    await sink.until(() => sink.steps.some((s) => s.name === 'Start'));
    const pgid = run.pid;
    if (pgid === undefined) throw new Error('no pid');
    // reported once it started, for the agent's run records
    expect(sink.pgids).toEqual([pgid]);
    // the task's `sleep 60` runs in ansible-playbook's process group
    await waitForCommandInGroup(pgid, 'sleep');

    const canceledAt = Date.now();
    run.cancel('canceled by the test');
    const result = await run.result;
    const elapsed = Date.now() - canceledAt;

    expect(result.outcome).toBe('canceled');
    expect(result.reason).toBe('canceled by the test');
    // ansible-playbook's own exit code for an interrupted run
    expect(result.exitCode).toBe(99);
    expect(elapsed).toBeLessThan(8_000);
    expect(() => process.kill(-pgid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
    expect(await groupCommands(pgid)).toEqual([]);
    expect(sink.steps.map((s) => s.name)).toEqual(['Start']);
    expect(sink.text).toContain('[carapace runner] cancel requested (canceled by the test): SIGINT sent to ansible-playbook');
    // SIGINT was enough
    expect(sink.text).not.toContain('SIGTERM sent');
  }, 120_000);

  it('escalates to SIGTERM and SIGKILL when the play ignores SIGINT and SIGTERM', async () => {
    const sink = new RecordingSink();
    const graceMs = { interrupt: 500, terminate: 500 };
    const run = startAnsibleRun(localSpec(workRoot), sink, { contentDir: fixture('stubborn'), graceMs });
    runs.push(run);
    await sink.until(() => sink.steps.some((s) => s.name === 'Start'));
    const pgid = run.pid;
    if (pgid === undefined) throw new Error('no pid');
    await waitForCommandInGroup(pgid, 'sleep');

    const canceledAt = Date.now();
    run.cancel();
    // idempotent
    run.cancel('a second time');
    const result = await run.result;
    const elapsed = Date.now() - canceledAt;

    expect(result.outcome).toBe('canceled');
    expect(result.reason).toBe('canceled');
    expect(elapsed).toBeGreaterThanOrEqual(graceMs.interrupt + graceMs.terminate);
    expect(elapsed).toBeLessThan(8_000);
    expect(groupAlive(pgid)).toBe(false);
    expect(await groupCommands(pgid)).toEqual([]);
    const notes = sink.text.split('\n').filter((line) => line.startsWith('[carapace runner]'));
    expect(notes).toEqual([
      '[carapace runner] cancel requested (canceled): SIGINT sent to ansible-playbook',
      '[carapace runner] still running 0.5 s after SIGINT: SIGTERM sent',
      '[carapace runner] still running 0.5 s after SIGTERM: SIGKILL sent',
    ]);
  }, 120_000);

  it('cancels a run before ansible-playbook starts: it never starts', async () => {
    const sink = new RecordingSink();
    const run = startAnsibleRun(localSpec(workRoot), sink, { contentDir: fixture('sleeping') });
    run.cancel('changed my mind');
    expect(await run.result).toEqual({ outcome: 'canceled', exitCode: null, signal: null, reason: 'changed my mind' });
    expect(run.pid).toBeUndefined();
    expect(sink.chunks).toEqual([]);
    expect(sink.pgids).toEqual([]);
  });

  it('does nothing once the run is over', async () => {
    const sink = new RecordingSink();
    const spec = localSpec(workRoot, { configuration: { global_vars: { greeting: 'hi' }, inventory: localInventory() } });
    const run = startAnsibleRun(spec, sink, { contentDir: fixture('success') });
    const result = await run.result;
    run.cancel('too late');
    expect(result.outcome).toBe('completed');
    expect(await run.result).toBe(result);
    expect(sink.text).not.toContain('too late');
  }, 120_000);
});

describe('the process group of a run', () => {
  it('is gone when the result comes, even a process a task left running in it', async () => {
    const sink = new RecordingSink();
    const run = startAnsibleRun(localSpec(workRoot), sink, { contentDir: fixture('leftover') });
    runs.push(run);
    const result = await run.result;
    expect(result.outcome).toBe('completed');
    const pgid = run.pid;
    if (pgid === undefined) throw new Error('no pid');
    expect(groupAlive(pgid)).toBe(false);
    expect(await groupCommands(pgid)).toEqual([]);
    expect(sink.text).toContain(
      '[carapace runner] ansible-playbook ended but left processes behind in its group: SIGKILL sent to them',
    );
  }, 120_000);
});
