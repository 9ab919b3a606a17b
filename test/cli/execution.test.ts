import { Client } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { buildCli, parsed, runCli, startCli } from '@carapace/test-support/cli';
import { ScriptedRunner } from '@carapace/test-support/runner';

/** The CLI as a subprocess: the execution group, with a scripted runner on the control plane's side. */
describe('carapace execution', () => {
  let cp: TestControlPlane;
  let env: Record<string, string>;
  let runner: ScriptedRunner;
  let serverId = '';
  let configId = '';
  let executionId = '';
  const carapace = (...args: string[]) => runCli(args, { env });

  beforeAll(async () => {
    [cp] = await Promise.all([TestControlPlane.start(), buildCli()]);
    env = { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: ROOT_PASSWORD };
    runner = new ScriptedRunner(cp);
    serverId = await cp.addServer(5);
    const cluster = parsed(await carapace('cluster', 'create', 'exec'));
    configId = parsed(await carapace('playbook-configuration', 'create', 'hello', 'hello_world', cluster.id, serverId)).id;
  }, 300_000);
  afterAll(() => cp.stop());

  it('create, then log --follow prints the log as it grows and ends with the execution', async () => {
    const created = await carapace('execution', 'create', configId, '1');
    expect(created.code, created.stderr).toBe(0);
    executionId = parsed(created).id;
    expect(parsed(created).data.state).toBe('created');
    await runner.claim(executionId);
    await runner.log(executionId, 'PLAY [hello_world] ***\n');

    const follow = startCli(['execution', 'log', executionId, '--follow'], { env });
    await follow.waitFor(/PLAY \[hello_world\]/);
    await runner.step(executionId, { role: 'hello_world', name: 'Gathering Facts', result: 'ok', serverId });
    await runner.log(executionId, 'TASK [Gathering Facts] ok\n');
    await follow.waitFor(/TASK \[Gathering Facts\] ok/);
    await runner.step(executionId, { role: 'hello_world', name: 'Say hello', result: 'ok', serverId });
    await runner.log(executionId, 'PLAY RECAP ok=2\n');
    await runner.finish(executionId, 'completed');
    const result = await follow.done;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe('PLAY [hello_world] ***\nTASK [Gathering Facts] ok\nPLAY RECAP ok=2\n');
  });

  it('get-all, get, get-version-all, get-version, steps and log', async () => {
    const [list, table, one, versions, version, steps, stepsTable, log] = await Promise.all([
      carapace('execution', 'get-all'),
      runCli(['execution', 'get-all', '-o', 'table'], { env: { ...env, COLUMNS: '200' } }),
      carapace('execution', 'get', executionId),
      carapace('execution', 'get-version-all', executionId),
      carapace('execution', 'get-version', executionId, '2'),
      carapace('execution', 'steps', executionId),
      carapace('execution', 'steps', executionId, '-o', 'table'),
      carapace('execution', 'log', executionId),
    ]);
    expect(parsed(list).map((e: { id: string }) => e.id)).toEqual([executionId]);
    expect(table.stdout).toMatch(new RegExp(`^${executionId}\\s+3\\s+hello_world\\s+${configId} v1\\s+completed\\s`, 'm'));
    expect(parsed(one).data.state).toBe('completed');
    expect(parsed(versions).map((v: { data: { state: string } }) => v.data.state)).toEqual(['completed', 'started', 'created']);
    expect(parsed(version).data).toMatchObject({ state: 'started', runner_id: runner.name });
    expect(parsed(steps).map((s: { data: { name: string } }) => s.data.name)).toEqual(['Gathering Facts', 'Say hello']);
    // Steps name their server (and its address), looked up once, not by its UUID.
    expect(stepsTable.stdout.split('\n')[0]).toMatch(/^finished\s+role\s+name\s+result\s+server$/);
    expect(stepsTable.stdout).toMatch(/hello_world\s+Say hello\s+ok\s+node5 \(10\.0\.0\.7\)$/m);
    expect(stepsTable.stdout).not.toContain(serverId);
    expect(log.stdout).toBe('PLAY [hello_world] ***\nTASK [Gathering Facts] ok\nPLAY RECAP ok=2\n');
  });

  it('steps of a user who may not view servers: shown by id, the command still works', async () => {
    const root = new Client({ url: cp.url, login: 'root', password: ROOT_PASSWORD });
    const role = await root.createRole('step-readers', { api: ['view_execution', 'view_execution_steps'] });
    await root.createUser('reader', 'reader@example.com', 'Reader', role.id);
    const password = await cp.mail.passwordOf('reader@example.com');
    await root.close();
    const steps = await runCli(['execution', 'steps', executionId, '-o', 'table'], { env: { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'reader', CARAPACE_PASSWORD: password } });
    expect(steps.code, steps.stderr).toBe(0);
    expect(steps.stdout).toMatch(new RegExp(`hello_world\\s+Say hello\\s+ok\\s+${serverId}$`, 'm'));
  });

  it('create --wait shows the steps live and exits 0 when the execution completed', async () => {
    const waiting = startCli(['execution', 'create', configId, '1', '--wait', '--poll-interval', '0.1'], { env });
    await waiting.waitFor(/execution ([0-9a-f-]{36}): created/, 'stderr');
    const id = /execution ([0-9a-f-]{36}): created/.exec(waiting.stderr)?.[1] ?? '';
    await runner.claim(id);
    await waiting.waitFor(/: started/, 'stderr');
    await runner.step(id, { role: 'hello_world', name: 'Open port 8085', result: 'ok', serverId });
    await waiting.waitFor(/\[ok\] hello_world: Open port 8085/, 'stderr');
    await runner.step(id, { role: 'hello_world', name: 'Check the answer', result: 'skipped', serverId: null });
    await runner.finish(id, 'completed');
    const result = await waiting.done;
    expect(result.code, result.stderr).toBe(0);
    expect(parsed(result)).toMatchObject({ id, data: { state: 'completed' } });
    expect(result.stderr.split('\n').filter(Boolean)).toEqual([
      `execution ${id}: created`,
      `execution ${id}: started`,
      '  [ok] hello_world: Open port 8085 [node5 (10.0.0.7)]',
      '  [skipped] hello_world: Check the answer',
      `execution ${id}: completed`,
    ]);
  });

  it('create --wait exits 4 when the execution failed; cancel cancels a queued one, not a finished one', async () => {
    const waiting = startCli(['execution', 'create', configId, '1', '--wait', '--poll-interval', '0.1', '-o', 'table'], { env });
    await waiting.waitFor(/execution ([0-9a-f-]{36}): created/, 'stderr');
    const id = /execution ([0-9a-f-]{36}): created/.exec(waiting.stderr)?.[1] ?? '';
    await runner.claim(id);
    await runner.step(id, { role: 'hello_world', name: 'Open port 8085', result: 'error', serverId });
    await runner.finish(id, 'failed', 'a task failed');
    const result = await waiting.done;
    expect(result.code).toBe(4);
    expect(result.stderr).toContain(`execution ${id}: failed (a task failed)`);
    expect(result.stderr).toContain(`[error] hello_world: Open port 8085`);
    expect(result.stderr).toContain(`carapace: execution ${id} ended failed`);
    expect(result.stdout).toMatch(/^data\.state\s+failed$/m);

    const queued = parsed(await carapace('execution', 'create', configId, '1'));
    const canceled = await carapace('execution', 'cancel', queued.id);
    expect(parsed(canceled)).toMatchObject({ id: queued.id, data: { state: 'canceled' } });
    const [again, finished] = await Promise.all([carapace('execution', 'cancel', queued.id), carapace('execution', 'cancel', executionId)]);
    expect(parsed(again)).toMatchObject({ id: queued.id, version: parsed(canceled).version, data: { state: 'canceled' } });
    expect(finished.code).toBe(1);
    expect(JSON.parse(finished.stderr)).toMatchObject({ code: 409, error: 'CannotCancelFinishedExecution' });
  });
});
