import { Client } from '@carapace/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiFailure as failure, startRecordedClient, stopRecordedClient } from '@carapace/test-support/client';
import type { TestControlPlane } from '@carapace/test-support/control-plane';
import { recordingFetch } from '@carapace/test-support/recording-fetch';
import { collectedStatus, deploy, unreachableStatus } from '../cli/cluster-status.support.js';


/** The cluster status calls (a Carapace extension of /v1) against a real control plane. */
describe('client: cluster status (getClusterStatus, getClusterStatusHistory, getClusterStatuses)', () => {
  let cp: TestControlPlane;
  let client: Client;
  const recorder = recordingFetch();

  beforeAll(async () => {
    ({ cp, client } = await startRecordedClient(recorder));
  });
  afterAll(() => stopRecordedClient({ cp, client }));

  it('getClusterStatus: not_deployed, pending, collected, unreachable, as the API has them', async () => {
    const bare = await client.createCluster('bare');
    expect(await client.getClusterStatus(bare.id)).toEqual({ cluster_id: bare.id, state: 'not_deployed', collected_at: null, attempted_at: null, unreachable: null, collection: null, ceph: null });
    expect(recorder.sent.at(-1)?.url.pathname).toBe(`/v1/cluster/${bare.id}/status/`);

    const ceph = await client.createCluster('ceph');
    await deploy(cp, ceph.id);
    expect((await client.get_cluster_status(ceph.id)).state).toBe('pending');
    await collectedStatus(cp, ceph.id, 'warn');
    const warn = await client.getClusterStatus(ceph.id);
    expect(warn).toMatchObject({ state: 'collected', unreachable: null, collection: { runner: 'near', duration_ms: 42 } });
    expect(warn.ceph?.health.status).toBe('HEALTH_WARN');
    expect(warn.ceph?.health.checks.find((c) => c.code === 'OSD_DOWN')).toMatchObject({ severity: 'HEALTH_WARN', playbook: 'replace_osd' });

    cp.clock.advance(61);
    await unreachableStatus(cp, ceph.id, 'Connection refused');
    const down = await client.getClusterStatus(ceph.id);
    expect(down.state).toBe('unreachable');
    expect(down.unreachable).toEqual({ reason: 'Connection refused', since: down.attempted_at });
    // The last report stays.
    expect(down.ceph).toEqual(warn.ceph);
  });

  it('getClusterStatusHistory: the points oldest first, `hours` sent as the query; 400 outside 1 to 24', async () => {
    const [cluster] = (await client.getClusters({ filter: { name: 'ceph' } })).items;
    const id = cluster?.id ?? '';
    const history = await client.getClusterStatusHistory(id);
    expect(recorder.sent.at(-1)?.url.search).toBe('');
    expect(history.cluster_id).toBe(id);
    expect(history.points.map((p) => p.health)).toEqual(['HEALTH_WARN', 'UNREACHABLE']);
    expect(history.points[0]?.at).toBeLessThan(history.points[1]?.at ?? 0);
    expect(history.points[0]).toMatchObject({ osds_total: 3, osds_up: 2 });
    expect((await client.get_cluster_status_history(id, 1)).points).toHaveLength(2);
    expect(recorder.sent.at(-1)?.url.searchParams.get('hours')).toBe('1');
    expect(await failure(client.getClusterStatusHistory(id, 25))).toMatchObject({ code: 400 });
    expect(await failure(client.getClusterStatusHistory('00000000-0000-4000-8000-00000000dead'))).toMatchObject({ code: 404 });
  });

  it('getClusterStatuses: one per cluster the caller may view; 403 without view_cluster', async () => {
    const { items } = await client.getClusterStatuses();
    expect(recorder.sent.at(-1)?.url.pathname).toBe('/v1/cluster_status/');
    expect(items.map((s) => s.state).sort()).toEqual(['not_deployed', 'unreachable']);
    expect((await client.get_cluster_statuses()).items).toHaveLength(2);
    const role = await client.createRole('servers-only', { api: ['view_server'] });
    await client.createUser('watcher', 'watcher@example.com', 'Watcher', role.id);
    const watcher = new Client({ url: cp.url, login: 'watcher', password: await cp.mail.passwordOf('watcher@example.com') });
    try {
      expect(await failure(watcher.getClusterStatuses())).toMatchObject({ code: 403 });
      expect(await failure(watcher.getClusterStatus(items[0]?.cluster_id ?? ''))).toMatchObject({ code: 403 });
    } finally {
      await watcher.close();
    }
  });
});
