// The CLI as a subprocess (issue 31): `execution create --preview`, `execution preview ID`
// (JSON and text) and `execution relaunch ID [--failed]`, with the runner's part scripted on
// the control plane's engine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { buildCli, parsed, runCli } from '@carapace/test-support/cli';
import { ScriptedRunner } from '@carapace/test-support/runner';

describe('carapace execution: previews and relaunches', () => {
  let cp: TestControlPlane;
  let env: Record<string, string>;
  let runner: ScriptedRunner;
  let serverId = '';
  let configId = '';
  const carapace = (...args: string[]) => runCli(args, { env });

  beforeAll(async () => {
    [cp] = await Promise.all([TestControlPlane.start(), buildCli()]);
    env = { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: ROOT_PASSWORD };
    runner = new ScriptedRunner(cp, 'cli-preview-runner');
    serverId = await cp.addServer(6);
    const cluster = parsed(await carapace('cluster', 'create', 'cli-previews'));
    configId = parsed(await carapace('playbook-configuration', 'create', 'hello', 'hello_world', cluster.id, serverId)).id;
  }, 300_000);
  afterAll(() => cp.stop());

  it('create --preview makes a preview; execution preview shows its verdicts', async () => {
    const created = await carapace('execution', 'create', configId, '1', '--preview');
    expect(created.code, created.stderr).toBe(0);
    const id = parsed(created).id as string;
    expect(parsed(created).data.preview).toBe(true);
    await runner.claim(id);
    await cp.services.engine.recordStep(id, 1000, {
      role: 'hello_world',
      name: 'Write the page',
      result: 'ok',
      error: {},
      host: serverId,
      timeStarted: 1,
      timeFinished: 2,
      preview: { status: 'would_change', diff: '--- before\n+++ after\n+hello\n' },
    });
    await cp.services.engine.recordStep(id, 1001, {
      role: 'hello_world',
      name: 'Start the service',
      result: 'skipped',
      error: {},
      host: serverId,
      timeStarted: 2,
      timeFinished: 3,
      preview: { status: 'unknown', why: 'remote module (systemd) does not support check mode' },
    });
    await runner.finish(id, 'completed');

    const json = await carapace('execution', 'preview', id);
    expect(json.code, json.stderr).toBe(0);
    expect(parsed(json).hosts[0]).toMatchObject({ server_id: serverId, counts: { would_change: 1, unknown: 1 } });
    const text = await carapace('execution', 'preview', id, '-o', 'table');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('1 would change, 0 unchanged, 0 would fail, 1 unknown');
    expect(text.stdout).toContain('~ hello_world: Write the page');
    expect(text.stdout).toContain('      +hello');
    expect(text.stdout).toContain('? hello_world: Start the service (remote module (systemd) does not support check mode)');
  });

  it('relaunch --failed runs on the failed hosts; refused for a completed execution', async () => {
    const id = parsed(await carapace('execution', 'create', configId, '1')).id as string;
    await runner.claim(id);
    await runner.step(id, { role: 'hello_world', name: 'Say hello', result: 'unreachable', serverId });
    await runner.finish(id, 'failed', '1 host unreachable');
    const relaunched = await carapace('execution', 'relaunch', id, '--failed');
    expect(relaunched.code, relaunched.stderr).toBe(0);
    expect(parsed(relaunched).data).toMatchObject({ relaunch_of: id, limit_server_ids: [serverId], relaunch: { hosts: 'failed', whole: false } });
    const second = parsed(relaunched).id as string;
    await runner.claim(second);
    await runner.finish(second, 'completed');
    const refused = await carapace('execution', 'relaunch', second, '--failed');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/completed: only a failed or canceled execution has failed hosts/);
    const all = await carapace('execution', 'relaunch', second);
    expect(all.code, all.stderr).toBe(0);
    expect(parsed(all).data.relaunch).toMatchObject({ hosts: 'all', whole: true });
  });
});
