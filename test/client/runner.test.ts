import { Client } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiFailure as failure, startRecordedClient, stopRecordedClient } from '@carapace/test-support/client';
import type { TestControlPlane } from '@carapace/test-support/control-plane';
import { recordingFetch } from '@carapace/test-support/recording-fetch';


/** The runner calls (a Carapace extension of /v1) against a real control plane. */
describe('client: runners (getRunners, createRunner, deleteRunner)', () => {
  let cp: TestControlPlane;
  let client: Client;
  const recorder = recordingFetch();
  let token = '';

  beforeAll(async () => {
    ({ cp, client } = await startRecordedClient(recorder));
  });
  afterAll(() => stopRecordedClient({ cp, client }));

  it('createRunner: the token, crt.<base64url name>.<secret>, shown once', async () => {
    expect((await client.getRunners()).items).toEqual([]);
    const issued = await client.createRunner('rack-1.runner', { site: 'lab', zone: 'a' });
    expect(issued).toEqual({ name: 'rack-1.runner', labels: { site: 'lab', zone: 'a' }, token: expect.any(String) });
    const [prefix, name, secret, ...rest] = issued.token.split('.');
    expect(prefix).toBe('crt');
    expect(name).toBe(Buffer.from('rack-1.runner').toString('base64url'));
    expect(Buffer.from(name ?? '', 'base64url').toString()).toBe('rack-1.runner');
    expect(secret).toMatch(/^[\w-]{20,}$/);
    expect(rest).toEqual([]);
    token = issued.token;
    expect(await cp.services.runners.authenticate(token)).toBe('rack-1.runner');
    const sent = recorder.sent.at(-1);
    expect(sent?.method).toBe('POST');
    expect(sent?.status).toBe(200);
    expect(sent?.url.pathname).toBe('/v1/runner/');

    const bare = await client.create_runner('bare');
    expect(bare).toMatchObject({ name: 'bare', labels: {} });
    expect(bare.token).toMatch(new RegExp(`^crt\\.${Buffer.from('bare').toString('base64url')}\\.[\\w-]+$`));
  });

  it('getRunners: a runner that never connected is disconnected, without slots or heartbeat', async () => {
    const { items } = await client.getRunners();
    expect(items.map((r) => r.name)).toEqual(['bare', 'rack-1.runner']);
    expect(items[1]).toMatchObject({
      name: 'rack-1.runner',
      state: 'disconnected',
      labels: { site: 'lab', zone: 'a' },
      version: null,
      slots: 0,
      free_slots: 0,
      last_heartbeat: null,
      connected_since: null,
      peer: null,
      ssh_public_key: null,
      executions: [],
    });
    expect(Math.abs((items[1]?.time_created ?? 0) - Date.now() / 1000)).toBeLessThan(60);
    expect(JSON.stringify(items)).not.toContain(token.split('.')[2]);
    expect((await client.get_runners()).items).toHaveLength(2);
    expect(recorder.sent.at(-1)?.url.pathname).toBe('/v1/runner/');
  });

  it('createRunner of a taken name: 409 RunnerExists, and the first token still works', async () => {
    const err = await failure(client.createRunner('rack-1.runner'));
    expect(err).toMatchObject({ code: 409, error: 'RunnerExists' });
    expect(err.description).toContain('rack-1.runner');
    expect(await cp.services.runners.authenticate(token)).toBe('rack-1.runner');
    expect(await failure(client.createRunner('Not A Name'))).toMatchObject({ code: 400 });
  });

  it('deleteRunner: removes the runner and revokes its token; a second delete is 404', async () => {
    await expect(client.deleteRunner('rack-1.runner')).resolves.toBeUndefined();
    expect(recorder.sent.at(-1)).toMatchObject({ method: 'DELETE', status: 200 });
    expect(recorder.sent.at(-1)?.url.pathname).toBe('/v1/runner/rack-1.runner/');
    expect((await client.getRunners()).items.map((r) => r.name)).toEqual(['bare']);
    expect(await cp.services.runners.authenticate(token)).toBeNull();
    expect(await failure(client.deleteRunner('rack-1.runner'))).toMatchObject({ code: 404, error: 'NotFound' });

    await client.delete_runner('bare');
    expect((await client.getRunners()).items).toEqual([]);
    const again = await client.createRunner('rack-1.runner');
    expect(again.token).not.toBe(token);
    expect(await cp.services.runners.authenticate(again.token)).toBe('rack-1.runner');
  });

  it('each call needs its permission: 403 without view_runner, create_runner or delete_runner', async () => {
    const role = await client.createRole('runner-viewer', { api: ['view_runner'] });
    await client.createUser('watcher', 'watcher@example.com', 'Watcher', role.id);
    const watcher = new Client({ url: cp.url, login: 'watcher', password: await cp.mail.passwordOf('watcher@example.com') });
    try {
      expect((await watcher.getRunners()).items.map((r) => r.name)).toEqual(['rack-1.runner']);
      const create = await failure(watcher.createRunner('sneaky'));
      expect(create).toMatchObject({ code: 403, error: 'Forbidden' });
      expect(create.description).toContain('create_runner');
      const remove = await failure(watcher.deleteRunner('rack-1.runner'));
      expect(remove).toMatchObject({ code: 403, error: 'Forbidden' });
      expect(remove.description).toContain('delete_runner');

      await client.updateRole({ ...role, data: { ...role.data, permissions: [{ name: 'api', permissions: ['view_cluster'] }] } });
      const list = await failure(watcher.getRunners());
      expect(list).toMatchObject({ code: 403, error: 'Forbidden' });
      expect(list.description).toContain('view_runner');
      expect((await client.getRunners()).items.map((r) => r.name)).toEqual(['rack-1.runner']);
    } finally {
      await watcher.close();
    }
  });
});
