// The cinder_integration plugin: servers (the cluster's usable monitors), configuration, and
// the files a run hands back becoming the cluster's files.
import { describe, expect, it } from 'vitest';
import {
  cinderIntegrationPlugin,
  clientFiles,
  findPlaybook,
  PlaybookInputError,
  resolveHints,
} from '../src/index.js';
import { CLUSTER_ID, clusterOf, EMPTY_CLUSTER, ID1, ID2, ID3, ID4, inCluster, inputError, S1, S2, S3, S4 } from '@carapace/test-support/playbook-facts';

const plugin = cinderIntegrationPlugin;

const KEYRING = '[client.cinder]\n\tkey = AQBRl0FmAAAAABAAm5FcwzNs3C3ey7Xo1ZgY2A==\n';
const CONF = '# minimal ceph.conf for x\n[global]\n\tfsid = x\n\tmon_host = [v2:10.0.0.11:3300/0,v1:10.0.0.11:6789/0]\n';

describe('cinder_integration', () => {
  // Monitors in the configuration's order (not sorted): the playbook works on the first.
  const deployed = clusterOf([S3, S1, S2], [S1, S2, S3, S4]);
  const clusterServers = [S1, S2, S3, S4].map(inCluster);

  it('is described: no server list required, no hints, its own permission', () => {
    expect(findPlaybook('cinder_integration')).toMatchObject({
      id: 'cinder_integration',
      name: 'OpenStack integration (Cinder, Glance, Nova)',
      required_server_list: false,
      hints: [],
    });
  });

  it('runs on the usable monitors, in the cluster configuration order, with fsid and cluster', () => {
    const servers = plugin.selectServers(deployed, [], clusterServers);
    expect(servers.map((s) => s.id)).toEqual([ID3, ID1, ID2]);
    const configuration = plugin.buildConfiguration(deployed, servers, resolveHints(plugin.descriptor, []));
    expect(configuration.global_vars).toEqual({ fsid: CLUSTER_ID, cluster: 'ceph', carapace_cluster_name: 'prod' });
    expect(configuration.inventory.mons).toEqual({ hosts: ['10.0.0.13', '10.0.0.11', '10.0.0.12'] });
    expect(Object.keys(configuration.inventory).sort()).toEqual(['_meta', 'mons']);
    expect(Object.keys((configuration.inventory._meta as { hostvars: object }).hostvars).sort()).toEqual(['10.0.0.11', '10.0.0.12', '10.0.0.13']);
  });

  it('takes some of the monitors when named, and refuses other servers', () => {
    expect(plugin.selectServers(deployed, [inCluster(S2), inCluster(S3)], clusterServers).map((s) => s.id)).toEqual([ID3, ID2]);
    const e = inputError(() => plugin.selectServers(deployed, [inCluster(S4)], clusterServers));
    expect(e.errorName).toBe('ServerNotInRoleError');
    expect(e.message).toContain(ID4);
    expect(inputError(() => plugin.selectServers(deployed, [inCluster(S1), inCluster(S1)], clusterServers)).errorName).toBe('DuplicateServerError');
  });

  it('refuses a cluster that is not deployed, without OSDs, or whose monitors are all unusable', () => {
    expect(inputError(() => plugin.selectServers(EMPTY_CLUSTER, [], [])).errorName).toBe('ClusterHasNoMonitorsError');
    expect(inputError(() => plugin.selectServers(clusterOf([S1], []), [], clusterServers)).errorName).toBe('ClusterHasNoOsdsError');
    const off = clusterServers.map((s) => ({ ...s, state: 'off' }));
    expect(inputError(() => plugin.selectServers(deployed, [], off)).errorName).toBe('ClusterHasNoMonitorsError');
    expect(inputError(() => plugin.buildConfiguration(deployed, [], {})).errorName).toBe('ClusterHasNoMonitorsError');
  });

  it('has no hints', () => {
    expect(() => resolveHints(plugin.descriptor, [{ id: 'pool', value: 'volumes' }])).toThrow(PlaybookInputError);
  });

  it('on success changes no member and stores ceph.conf and the keyrings as the cluster files', () => {
    const servers = plugin.selectServers(deployed, [], clusterServers);
    const configuration = plugin.buildConfiguration(deployed, servers, {});
    const artifacts = [
      { name: 'ceph.client.cinder.keyring', content: KEYRING },
      { name: 'ceph.conf', content: CONF },
      { name: 'unrelated.txt', content: 'not for the cluster' },
      { name: 'ceph.client..keyring', content: 'malformed name' },
    ];
    expect(plugin.onSuccess(deployed, servers, configuration, artifacts)).toEqual({
      configuration: deployed.configuration,
      join: [],
      leave: [],
      deleteCluster: false,
      files: [
        { name: 'ceph.client.cinder.keyring', content: KEYRING },
        { name: 'ceph.conf', content: CONF },
      ],
    });
    // Without a ceph.conf (a runner that hands nothing back) the stored files stay as they are.
    const none = plugin.onSuccess(deployed, servers, configuration, []);
    expect(none).toEqual({ configuration: deployed.configuration, join: [], leave: [], deleteCluster: false });
    expect('files' in none).toBe(false);
    expect(clientFiles([{ name: 'ceph.client.cinder.keyring', content: KEYRING }])).toBeNull();
  });
});
