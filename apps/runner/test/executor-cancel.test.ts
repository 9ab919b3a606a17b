// Canceling a real ansible-playbook run: SIGINT, then SIGTERM, then SIGKILL to its
// process group, and nothing of the group left when the result comes.
import { readFile } from 'node:fs/promises';
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

describe('the clean-up entry point (cleanup.yml)', () => {
  const marker = (name: string) => `${workRoot}/marker-${name}-${process.pid}`;
  const spec = (name: string, vars: Record<string, unknown>) =>
    localSpec(workRoot, { configuration: { global_vars: { marker: marker(name), ...vars }, inventory: localInventory() } });

  it('runs after a canceled run, its steps and log after the run\'s, and the run stays canceled', async () => {
    const sink = new RecordingSink();
    const run = startAnsibleRun(spec('canceled', {}), sink, { contentDir: fixture('cleaning') });
    runs.push(run);
    await sink.until(() => sink.steps.some((s) => s.name === 'Start'));
    await waitForCommandInGroup(run.pid ?? -1, 'sleep');
    run.cancel('canceled by the test');
    const result = await run.result;
    expect(result.outcome).toBe('canceled');
    expect(result.reason).toBe('canceled by the test');
    expect(await readFile(marker('canceled'), 'utf8')).toBe('cleaned\n');
    expect(sink.steps.map((s) => [s.name, s.result])).toEqual([
      ['Start', 'ok'],
      ['Fail when asked', 'skipped'],
      ['Undo what the run left', 'ok'],
    ]);
    expect(sink.text).toContain('[carapace runner] the run was canceled: cleanup.yml undoes what it must not leave behind');
    expect(sink.text).toContain('[carapace runner] cleanup.yml completed');
  }, 120_000);

  it('runs after a failed run, which stays failed with its own reason', async () => {
    const sink = new RecordingSink();
    const run = startAnsibleRun(spec('failed', { fail_now: true }), sink, { contentDir: fixture('cleaning') });
    runs.push(run);
    const result = await run.result;
    expect(result.outcome).toBe('failed');
    expect(result.reason).toMatch(/ansible-playbook exited with 2/);
    expect(await readFile(marker('failed'), 'utf8')).toBe('cleaned\n');
    expect(sink.steps.map((s) => [s.name, s.result])).toEqual([
      ['Start', 'ok'],
      ['Fail when asked', 'error'],
      ['Undo what the run left', 'ok'],
    ]);
  }, 120_000);

  it('does not run after a completed run', async () => {
    const sink = new RecordingSink();
    const run = startAnsibleRun(spec('completed', { succeed_now: true }), sink, { contentDir: fixture('cleaning') });
    runs.push(run);
    expect((await run.result).outcome).toBe('completed');
    await expect(readFile(marker('completed'), 'utf8')).rejects.toThrow(/ENOENT/);
    expect(sink.text).not.toContain('cleanup.yml');
  }, 120_000);
});
