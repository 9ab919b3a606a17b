// A preview's end is not notified (issue 31): it changed nothing, and "failed" is one of its
// answers. A real run's end is, through the same configured webhook.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { addServer } from '@carapace/test-support/facts';
import { Harness } from '@carapace/test-support/harness';
import { ScriptedRunner } from '@carapace/test-support/runner';

describe('notifications of previews', () => {
  let h: Harness;
  let root: string;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-preview-notify-'));
    const file = join(dir, 'carapace.yaml');
    // nothing listens there: a delivery is queued all the same, which is what is looked at
    writeFileSync(file, stringify({ notifications: { webhooks: [{ url: 'http://127.0.0.1:9/hook', secret: 'webhook-secret-for-tests-0123456789' }] } }));
    h = await Harness.start({ CARAPACE_CONFIG: file });
    root = await h.rootToken();
  });
  afterAll(async () => {
    await h.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('queues a webhook for a failed run, none for a failed preview', async () => {
    const clusterId = (await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'notified' } })).json.id;
    const server = await addServer(h);
    const config = (await h.request('POST', '/v1/playbook_configuration/', { token: root, body: { name: 'n', cluster_id: clusterId, playbook_id: 'hello_world', server_ids: [server.id] } })).json;
    const runner = new ScriptedRunner({ services: h.container.services } as never, 'notify-runner');
    const ids: Record<string, string> = {};
    for (const kind of ['real', 'preview'] as const) {
      const body = { playbook_configuration: { id: config.id, version: config.version }, ...(kind === 'preview' ? { preview: true } : {}) };
      const id = (await h.request('POST', '/v1/execution/', { token: root, body })).json.id as string;
      await runner.claim(id);
      await runner.step(id, { role: 'hello', name: 'say hello', result: 'error', serverId: server.id });
      await runner.finish(id, 'failed', '1 host failed');
      ids[kind] = id;
    }
    expect((await h.container.notifications.ofExecution(ids.real as string)).map((d) => d.event)).toEqual(['execution.failed']);
    expect(await h.container.notifications.ofExecution(ids.preview as string)).toEqual([]);
  });
});
