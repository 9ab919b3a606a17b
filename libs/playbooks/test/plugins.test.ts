// The playbook plugins: server selection, hints, configuration building and cluster effects.
// Pure code: every expected structure is spelled out.
import type { ClusterMember } from '@carapace/models';
import { describe, expect, it } from 'vitest';
import {
  addOsdPlugin,
  clusterDeployPlugin,
  chooseMonitors,
  coveringNetwork,
  defaultIpv4Network,
  describeUnusableDisks,
  diskUnusableReason,
  findPlaybook,
  getPlugin,
  HINT_RULES,
  helloWorldPlugin,
  MIN_OSD_DISK_BYTES,
  normalizeResolvedHints,
  PLAYBOOK_DESCRIPTORS,
  PlaybookInputError,
  PLUGINS,
  purgeClusterPlugin,
  READY_SERVER_STATES,
  removeOsdPlugin,
  resolveHints,
  restartServicesPlugin,
  updateCephConfigurationPlugin,
  maintenanceEnterPlugin,
  maintenanceExitPlugin,
  replaceOsdPlugin,
  addMonPlugin,
  removeMonPlugin,
  replaceMonPlugin,
  upgradeCephPlugin,
  usableOsdDisks,
  type HintValue,
  type PlaybookConfiguration,
  type ChangingPlaybookPlugin,
  type PlaybookPlugin,
  type PluginCluster,
  type PluginServer,
} from '../src/index.js';
import {
  CLUSTER_ID,
  disk,
  EMPTY_CLUSTER,
  facts,
  GiB,
  hdd4tb,
  ID0,
  ID1,
  ID2,
  ID3,
  ID4,
  inCluster,
  partition,
  S0,
  S1,
  S2,
  S3,
  S4,
  S6,
  server,
} from '@carapace/test-support/playbook-facts';

// ---------------------------------------------------------------------------------------
// helpers

/** What the control plane does on create: hints, then servers, then the configuration. */
function create(
  plugin: PlaybookPlugin,
  cluster: PluginCluster,
  requested: readonly PluginServer[],
  clusterServers: readonly PluginServer[] = [],
  hints: readonly HintValue[] = [],
): { servers: PluginServer[]; configuration: PlaybookConfiguration } {
  const resolved = resolveHints(plugin.descriptor, hints);
  const servers = plugin.selectServers(cluster, requested, clusterServers);
  return { servers, configuration: plugin.buildConfiguration(cluster, servers, resolved, clusterServers) };
}

/** The PlaybookInputError `fn` throws; fails if it throws nothing or something else. */
function inputError(fn: () => unknown): PlaybookInputError {
  try {
    fn();
  } catch (e) {
    if (e instanceof PlaybookInputError) return e;
    throw e;
  }
  throw new Error('expected a PlaybookInputError, nothing was thrown');
}

function member(s: PluginServer): ClusterMember {
  return { server_id: s.id, version: s.version, fqdn: s.fqdn, ip: s.ip, server_name: s.name };
}

function base(s: PluginServer): Record<string, unknown> {
  return {
    ansible_host: s.ip,
    ansible_user: s.username,
    ansible_become: true,
    carapace_server_id: s.id,
    carapace_server_name: s.name,
    carapace_fqdn: s.fqdn,
  };
}

const HDD = { size_bytes: 4_000_787_030_016, rotational: true };
const SSD = { size_bytes: 960_197_124_096, rotational: false };

/** The OSD host vars of the fixture servers. */
const OSD_VARS: Record<string, Record<string, unknown>> = {
  [ID1]: {
    carapace_osd_devices: ['/dev/sda', '/dev/sdb'],
    carapace_osd_devices_info: [
      { path: '/dev/sda', ...HDD },
      { path: '/dev/sdb', ...SSD },
    ],
  },
  [ID2]: { carapace_osd_devices: ['/dev/sda'], carapace_osd_devices_info: [{ path: '/dev/sda', ...HDD }] },
  [ID3]: {
    carapace_osd_devices: ['/dev/sda', '/dev/sdb'],
    carapace_osd_devices_info: [
      { path: '/dev/sda', ...HDD },
      { path: '/dev/sdb', ...SSD },
    ],
  },
  [ID4]: { carapace_osd_devices: ['/dev/nvme0n1'], carapace_osd_devices_info: [{ path: '/dev/nvme0n1', ...SSD }] },
};

function osdHost(s: PluginServer): Record<string, unknown> {
  return { ...base(s), ...OSD_VARS[s.id] };
}

/** A deployed cluster: monitors ceph-01..03, OSD hosts as given. */
function deployed(osds: readonly PluginServer[] = [S1, S2, S3], mons: readonly PluginServer[] = [S1, S2, S3]): PluginCluster {
  return { id: CLUSTER_ID, name: 'prod', configuration: { mons: mons.map(member), osds: osds.map(member) } };
}

const NOT_READY_STATES = ['off', 'maintenance_no_reconfig', 'gathering_facts', 'unreachable'];

// ---------------------------------------------------------------------------------------

describe('resolveHints', () => {
  const deploy = clusterDeployPlugin.descriptor;

  it('fills in every default', () => {
    expect(resolveHints(deploy, [])).toEqual({ dmcrypt: false, mon_count: 3 });
    expect(resolveHints(addOsdPlugin.descriptor, [])).toEqual({ dmcrypt: false });
    expect(resolveHints(helloWorldPlugin.descriptor, [])).toEqual({});
  });

  it('overrides defaults with the given hints', () => {
    expect(
      resolveHints(deploy, [
        { id: 'mon_count', value: 5 },
        { id: 'dmcrypt', value: true },
      ]),
    ).toEqual({ dmcrypt: true, mon_count: 5 });
    expect(resolveHints(deploy, [{ id: 'dmcrypt', value: true }])).toEqual({ dmcrypt: true, mon_count: 3 });
  });

  it('accepts every mon_count from 1 to 9, even ones too', () => {
    expect(HINT_RULES.mon_count).toEqual({ min: 1, max: 9 });
    for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 9]) expect(resolveHints(deploy, [{ id: 'mon_count', value: n }]).mon_count).toBe(n);
  });

  it('refuses an unknown hint id', () => {
    const e = inputError(() => resolveHints(deploy, [{ id: 'mon_cnt', value: 3 }]));
    expect(e.errorName).toBe('UnknownHintError');
    expect(e.name).toBe('UnknownHintError');
    expect(e.message).toContain('mon_cnt');
    expect(e.message).toContain('dmcrypt, mon_count');
    expect(inputError(() => resolveHints(helloWorldPlugin.descriptor, [{ id: 'dmcrypt', value: true }])).errorName).toBe('UnknownHintError');
    expect(inputError(() => resolveHints(deploy, [{ id: 42 as unknown as string, value: true }])).errorName).toBe('UnknownHintError');
  });

  it('refuses a hint given twice', () => {
    const e = inputError(() =>
      resolveHints(deploy, [
        { id: 'dmcrypt', value: true },
        { id: 'dmcrypt', value: true },
      ]),
    );
    expect(e.errorName).toBe('DuplicateHintError');
    expect(e.message).toContain('dmcrypt');
  });

  it.each([['true'], [1], [0], [null], [undefined], [{}]])('refuses dmcrypt = %j', (value) => {
    expect(inputError(() => resolveHints(deploy, [{ id: 'dmcrypt', value }])).errorName).toBe('InvalidHintError');
  });

  it.each([[0], [-1], [10], [2.5], ['3'], [true], [null], [Number.NaN], [Number.POSITIVE_INFINITY]])('refuses mon_count = %j', (value) => {
    const e = inputError(() => resolveHints(deploy, [{ id: 'mon_count', value }]));
    expect(e.errorName).toBe('InvalidHintError');
    expect(e.message).toContain('mon_count');
  });

  it('checks the listed values of a hint and the rules given', () => {
    const descriptor = {
      id: 'custom',
      hints: [
        { id: 'mode', description: '', type: 'string', values: ['fast', 'safe'], default_value: 'safe' },
        { id: 'n', description: '', type: 'integer', values: [], default_value: 2 },
      ],
    };
    expect(resolveHints(descriptor, [{ id: 'mode', value: 'fast' }])).toEqual({ mode: 'fast', n: 2 });
    expect(inputError(() => resolveHints(descriptor, [{ id: 'mode', value: 'slow' }])).errorName).toBe('InvalidHintError');
    expect(inputError(() => resolveHints(descriptor, [{ id: 'n', value: 3 }], { n: { max: 2 } })).errorName).toBe('InvalidHintError');
    const broken = { id: 'broken', hints: [{ id: 'x', description: '', type: 'float', values: [], default_value: 1 }] };
    expect(() => resolveHints(broken, [{ id: 'x', value: 1 }])).toThrow(/unknown type float/);
  });

  it('the defaults of every descriptor pass their own rules', () => {
    for (const descriptor of PLAYBOOK_DESCRIPTORS) {
      const defaults = descriptor.hints.map((h) => ({ id: h.id, value: h.default_value }));
      expect(resolveHints(descriptor, defaults)).toEqual(resolveHints(descriptor, []));
    }
  });

  it('normalizeResolvedHints checks a resolved record again and fills in what is missing', () => {
    expect(normalizeResolvedHints(deploy, {})).toEqual({ dmcrypt: false, mon_count: 3 });
    expect(normalizeResolvedHints(deploy, { mon_count: 1 })).toEqual({ dmcrypt: false, mon_count: 1 });
    expect(inputError(() => normalizeResolvedHints(deploy, { mon_count: '1' })).errorName).toBe('InvalidHintError');
    expect(inputError(() => normalizeResolvedHints(deploy, { foo: 1 })).errorName).toBe('UnknownHintError');
  });
});

// ---------------------------------------------------------------------------------------

describe('OSD disks', () => {
  it('picks the unused whole disks of the fixture', () => {
    const f = S1.facts as ReturnType<typeof facts>;
    expect(usableOsdDisks(f).map((d) => d.path)).toEqual(['/dev/sda', '/dev/sdb']);
    const reasons = Object.fromEntries(f.disks.map((d) => [d.name, diskUnusableReason(d)]));
    expect(reasons).toEqual({
      vda: 'system disk',
      sda: null,
      sdb: null,
      sdc: 'has a LVM2_member signature',
      sdd: 'smaller than 5 GiB',
      sde: 'removable',
      sr0: 'not a whole disk (type rom)',
      sdf: 'partition sdf1 has a xfs signature',
    });
    expect(describeUnusableDisks(f)).toContain('vda: system disk; sdc: has a LVM2_member signature');
  });

  it('refuses used, read-only and system disks of every shape', () => {
    const big = 100 * GiB;
    expect(diskUnusableReason(disk('sdx', big, { holders: ['dm-0'] }))).toBe('in use by dm-0');
    expect(diskUnusableReason(disk('sdx', big, { holders: ['md0'], partitions: [] }))).toBe('in use by md0');
    expect(diskUnusableReason(disk('sdx', big, { read_only: true }))).toBe('read-only');
    expect(diskUnusableReason(disk('sdx', big, { mountpoint: '/srv' }))).toBe('mounted at /srv');
    expect(diskUnusableReason(disk('sdx', big, { mountpoint: '/' }))).toBe('system disk');
    expect(diskUnusableReason(disk('sdx', big, { fstype: 'ext4' }))).toBe('has a ext4 signature');
    expect(diskUnusableReason(disk('loop0', big, { type: 'loop' }))).toBe('not a whole disk (type loop)');
    expect(diskUnusableReason(disk('sdx', big, { partitions: [partition('sdx1', GiB, { mountpoint: '/boot/efi', fstype: 'vfat' })] }))).toBe(
      'system disk',
    );
    expect(diskUnusableReason(disk('sdx', big, { partitions: [partition('sdx1', GiB, { mountpoint: '/data' })] }))).toBe(
      'partition sdx1 mounted at /data',
    );
    expect(diskUnusableReason(disk('sdx', big, { partitions: [partition('sdx1', GiB, { holders: ['dm-3'] })] }))).toBe(
      'partition sdx1 in use by dm-3',
    );
  });

  it('accepts a disk of exactly 5 GiB, empty partitions and empty lsblk fields', () => {
    expect(MIN_OSD_DISK_BYTES).toBe(5 * GiB);
    expect(diskUnusableReason(disk('sdx', 5 * GiB))).toBeNull();
    expect(diskUnusableReason(disk('sdx', 5 * GiB - 1))).toBe('smaller than 5 GiB');
    expect(diskUnusableReason(disk('sdx', 100 * GiB, { partitions: [partition('sdx1', 99 * GiB)] }))).toBeNull();
    expect(diskUnusableReason(disk('sdx', 100 * GiB, { fstype: '', mountpoint: '' }))).toBeNull();
  });
});

describe('networks', () => {
  it('covers networks with the smallest common network', () => {
    expect(coveringNetwork([{ address: '10.0.0.0', prefix: 24 }])).toEqual({ address: '10.0.0.0', prefix: 24 });
    expect(
      coveringNetwork([
        { address: '10.0.0.0', prefix: 24 },
        { address: '10.0.0.0', prefix: 24 },
      ]),
    ).toEqual({ address: '10.0.0.0', prefix: 24 });
    expect(
      coveringNetwork([
        { address: '10.0.0.0', prefix: 24 },
        { address: '10.0.1.0', prefix: 24 },
      ]),
    ).toEqual({ address: '10.0.0.0', prefix: 23 });
    expect(
      coveringNetwork([
        { address: '10.0.1.0', prefix: 24 },
        { address: '10.0.2.0', prefix: 24 },
      ]),
    ).toEqual({ address: '10.0.0.0', prefix: 22 });
    expect(
      coveringNetwork([
        { address: '10.0.0.0', prefix: 24 },
        { address: '10.0.0.0', prefix: 16 },
      ]),
    ).toEqual({ address: '10.0.0.0', prefix: 16 });
    expect(
      coveringNetwork([
        { address: '10.0.0.0', prefix: 24 },
        { address: '192.168.10.0', prefix: 24 },
      ]),
    ).toEqual({ address: '0.0.0.0', prefix: 0 });
    expect(() => coveringNetwork([])).toThrow();
  });

  it('finds the default-route network of a server', () => {
    expect(defaultIpv4Network(S1.facts as ReturnType<typeof facts>)).toEqual({ address: '10.0.0.0', prefix: 24 });
    // default route on bond0
    expect(defaultIpv4Network(S4.facts as ReturnType<typeof facts>)).toEqual({ address: '10.0.1.0', prefix: 24 });
    const f = facts('x', '10.20.30.40', '192.168.10.9', []);
    expect(defaultIpv4Network({ ...f, default_ipv4: null })).toEqual({ address: '10.20.30.0', prefix: 24 });
    expect(defaultIpv4Network({ ...f, default_ipv4: '172.16.5.5' })).toEqual({ address: '172.16.5.5', prefix: 32 });
    expect(defaultIpv4Network({ ...f, default_ipv4: null, interfaces: f.interfaces.map((i) => ({ ...i, default_route: false })) })).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------

describe('hello_world', () => {
  it('runs on the given servers', () => {
    const { servers, configuration } = create(helloWorldPlugin, EMPTY_CLUSTER, [S2, S1]);
    expect(servers.map((s) => s.id)).toEqual([ID1, ID2]);
    expect(configuration).toEqual({
      global_vars: { port_number: 8085 },
      inventory: {
        hello_world: { hosts: ['10.0.0.11', '10.0.0.12'] },
        _meta: {
          hostvars: {
            '10.0.0.11': {
              ansible_host: '10.0.0.11',
              ansible_user: 'ansible',
              ansible_become: true,
              carapace_server_id: ID1,
              carapace_server_name: 'ceph-01',
              carapace_fqdn: 'ceph-01.dc1.example.net',
            },
            '10.0.0.12': {
              ansible_host: '10.0.0.12',
              ansible_user: 'ansible',
              ansible_become: true,
              carapace_server_id: ID2,
              carapace_server_name: 'ceph-02',
              carapace_fqdn: 'ceph-02.dc1.example.net',
            },
          },
        },
      },
    });
  });

  it("runs on the cluster's servers when none are given; facts are not needed", () => {
    const cluster = deployed();
    const clusterServers = [S3, S1, S2, S6].map(inCluster);
    const { servers, configuration } = create(helloWorldPlugin, cluster, [], clusterServers);
    expect(servers.map((s) => s.name)).toEqual(['ceph-01', 'ceph-02', 'ceph-03', 'ceph-06']);
    expect(configuration.inventory.hello_world).toEqual({ hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.0.16'] });
  });

  it('given servers win over the cluster servers, and may be in any cluster', () => {
    const { servers } = create(helloWorldPlugin, deployed(), [{ ...S4, cluster_id: 'another-cluster' }], [S1, S2].map(inCluster));
    expect(servers.map((s) => s.id)).toEqual([ID4]);
  });

  it('needs a server in the end', () => {
    const e = inputError(() => create(helloWorldPlugin, EMPTY_CLUSTER, [], []));
    expect(e.errorName).toBe('ServerListIsRequiredForPlaybookError');
    expect(inputError(() => helloWorldPlugin.buildConfiguration(EMPTY_CLUSTER, [], {})).errorName).toBe('ServerListIsRequiredForPlaybookError');
  });

  it('refuses a server given twice', () => {
    const e = inputError(() => create(helloWorldPlugin, EMPTY_CLUSTER, [S1, S2, S1]));
    expect(e.errorName).toBe('DuplicateServerError');
    expect(e.message).toContain(`ceph-01 (${ID1})`);
  });

  it.each(NOT_READY_STATES)('refuses a server in state %s, given or from the cluster', (state) => {
    const e = inputError(() => create(helloWorldPlugin, EMPTY_CLUSTER, [S1, { ...S2, state }]));
    expect(e.errorName).toBe('ServerNotReadyError');
    expect(e.message).toContain(`ceph-02 (${ID2}) is ${state}`);
    expect(e.message).not.toContain('ceph-01');
    expect(inputError(() => create(helloWorldPlugin, deployed(), [], [inCluster(S1), inCluster({ ...S2, state })])).errorName).toBe(
      'ServerNotReadyError',
    );
  });

  it('accepts maintenance_reconfig, refuses states it does not know', () => {
    expect(READY_SERVER_STATES).toEqual(['operational', 'maintenance_reconfig']);
    expect(create(helloWorldPlugin, EMPTY_CLUSTER, [{ ...S1, state: 'maintenance_reconfig' }]).servers).toHaveLength(1);
    expect(inputError(() => create(helloWorldPlugin, EMPTY_CLUSTER, [{ ...S1, state: 'exploded' }])).errorName).toBe('ServerNotReadyError');
  });

  it('has no hints', () => {
    expect(inputError(() => create(helloWorldPlugin, EMPTY_CLUSTER, [S1], [], [{ id: 'port_number', value: 9 }])).errorName).toBe(
      'UnknownHintError',
    );
    expect(inputError(() => helloWorldPlugin.buildConfiguration(EMPTY_CLUSTER, [S1], { dmcrypt: true })).errorName).toBe('UnknownHintError');
  });

  it('refuses two servers with the same IP', () => {
    const e = inputError(() => create(helloWorldPlugin, EMPTY_CLUSTER, [S1, { ...S2, ip: S1.ip }]));
    expect(e.errorName).toBe('DuplicateServerAddressError');
  });

  it('changes nothing on success: it has no onSuccess', () => {
    expect('onSuccess' in helloWorldPlugin).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------

describe('cluster_deploy', () => {
  const all = [S4, S0, S2, S1, S3];

  it('deploys monitors, managers and OSDs', () => {
    const { servers, configuration } = create(clusterDeployPlugin, EMPTY_CLUSTER, all);
    expect(servers.map((s) => s.name)).toEqual(['ceph-00', 'ceph-01', 'ceph-02', 'ceph-03', 'ceph-04']);
    expect(configuration).toEqual({
      global_vars: {
        fsid: CLUSTER_ID,
        cluster: 'ceph',
        carapace_cluster_name: 'prod',
        dmcrypt: false,
        mon_count: 3,
        public_network: '10.0.0.0/23',
        cluster_network: '10.0.0.0/23',
        ceph_repository: 'distribution',
        osd_objectstore: 'bluestore',
      },
      inventory: {
        mons: { hosts: ['10.0.0.10', '10.0.0.11', '10.0.0.12'] },
        mgrs: { hosts: ['10.0.0.10', '10.0.0.11', '10.0.0.12'] },
        osds: { hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21'] },
        _meta: {
          hostvars: {
            '10.0.0.10': {
              ansible_host: '10.0.0.10',
              ansible_user: 'ansible',
              ansible_become: true,
              carapace_server_id: ID0,
              carapace_server_name: 'ceph-00',
              carapace_fqdn: 'ceph-00.dc1.example.net',
            },
            '10.0.0.11': {
              ansible_host: '10.0.0.11',
              ansible_user: 'ansible',
              ansible_become: true,
              carapace_server_id: ID1,
              carapace_server_name: 'ceph-01',
              carapace_fqdn: 'ceph-01.dc1.example.net',
              carapace_osd_devices: ['/dev/sda', '/dev/sdb'],
              carapace_osd_devices_info: [
                { path: '/dev/sda', size_bytes: 4_000_787_030_016, rotational: true },
                { path: '/dev/sdb', size_bytes: 960_197_124_096, rotational: false },
              ],
            },
            '10.0.0.12': osdHost(S2),
            '10.0.0.13': osdHost(S3),
            '10.0.1.21': {
              ansible_host: '10.0.1.21',
              ansible_user: 'ansible',
              ansible_become: true,
              carapace_server_id: ID4,
              carapace_server_name: 'ceph-04',
              carapace_fqdn: 'ceph-04.dc1.example.net',
              carapace_osd_devices: ['/dev/nvme0n1'],
              carapace_osd_devices_info: [{ path: '/dev/nvme0n1', size_bytes: 960_197_124_096, rotational: false }],
            },
          },
        },
      },
    });
  });

  it('joins every server to the cluster as mons and osds on success', () => {
    const { servers, configuration } = create(clusterDeployPlugin, EMPTY_CLUSTER, all);
    expect(clusterDeployPlugin.onSuccess(EMPTY_CLUSTER, servers, configuration)).toEqual({
      configuration: {
        mons: [member(S0), member(S1), member(S2)],
        osds: [member(S1), member(S2), member(S3), member(S4)],
      },
      join: [ID0, ID1, ID2, ID3, ID4],
      leave: [],
      deleteCluster: false,
    });
    expect(member(S1)).toEqual({ server_id: ID1, version: 4, fqdn: 'ceph-01.dc1.example.net', ip: '10.0.0.11', server_name: 'ceph-01' });
  });

  it('reads the roles from the inventory as edited before the run', () => {
    const { servers, configuration } = create(clusterDeployPlugin, EMPTY_CLUSTER, [S1, S2, S3]);
    const edited: PlaybookConfiguration = {
      ...configuration,
      inventory: { ...configuration.inventory, mons: { hosts: ['10.0.0.13'] }, osds: { hosts: { '10.0.0.11': {}, '10.0.0.13': {}, '10.9.9.9': {} } } },
    };
    expect(clusterDeployPlugin.onSuccess(EMPTY_CLUSTER, servers, edited)).toEqual({
      configuration: { mons: [member(S3)], osds: [member(S1), member(S3)] },
      join: [ID1, ID2, ID3], // ceph-02 is still a manager
      leave: [],
      deleteCluster: false,
    });
  });

  it('finds servers by their id host var when their IP changed, and records the version given', () => {
    const { servers, configuration } = create(clusterDeployPlugin, EMPTY_CLUSTER, [S1, S2]);
    const moved = { ...S2, ip: '10.0.0.99', version: 9 };
    const effect = clusterDeployPlugin.onSuccess(EMPTY_CLUSTER, [servers[0] ?? S1, moved], configuration);
    expect(effect.configuration).toEqual({ mons: [member(S1), member(moved)], osds: [member(S1), member(moved)] });
    expect(effect.configuration.mons?.[1]).toEqual({ server_id: ID2, version: 9, fqdn: 'ceph-02.dc1.example.net', ip: '10.0.0.99', server_name: 'ceph-02' });
    expect(effect.join).toEqual([ID1, ID2]);
  });

  it('chooses the same monitors whatever the order of the request', () => {
    const orders = [
      [S0, S1, S2, S3, S4],
      [S4, S3, S2, S1, S0],
      [S2, S4, S0, S3, S1],
      [S3, S1, S4, S0, S2],
    ];
    const results = orders.map((order) => create(clusterDeployPlugin, EMPTY_CLUSTER, order).configuration);
    for (const result of results) expect(result).toEqual(results[0]);
    expect(chooseMonitors(orders[1] ?? [], 3).map((s) => s.name)).toEqual(['ceph-00', 'ceph-01', 'ceph-02']);
  });

  it('orders monitors by name, then by id, not by locale', () => {
    const a = server('node', 'bbbb', '10.0.0.51', facts('a', '10.0.0.51', '192.168.10.51', [hdd4tb('sda')]));
    const b = server('node', 'aaaa', '10.0.0.52', facts('b', '10.0.0.52', '192.168.10.52', [hdd4tb('sda')]));
    const c = server('Zeta', 'cccc', '10.0.0.53', facts('c', '10.0.0.53', '192.168.10.53', [hdd4tb('sda')]));
    expect(chooseMonitors([a, b, c], 2).map((s) => s.id)).toEqual(['cccc', 'aaaa']);
  });

  it('takes mon_count monitors, or every server when there are fewer', () => {
    const one = create(clusterDeployPlugin, EMPTY_CLUSTER, [S3, S1, S2], [], [{ id: 'mon_count', value: 1 }]).configuration;
    expect(one.inventory.mons).toEqual({ hosts: ['10.0.0.11'] });
    expect(one.inventory.mgrs).toEqual({ hosts: ['10.0.0.11'] });
    expect(one.global_vars.mon_count).toBe(1);
    const five = create(clusterDeployPlugin, EMPTY_CLUSTER, [S3, S1, S2], [], [{ id: 'mon_count', value: 5 }]).configuration;
    expect(five.inventory.mons).toEqual({ hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13'] });
    expect(five.global_vars.mon_count).toBe(3);
    expect(five.global_vars.public_network).toBe('10.0.0.0/24');
    const even = create(clusterDeployPlugin, EMPTY_CLUSTER, [S3, S1, S2, S4], [], [{ id: 'mon_count', value: 4 }]).configuration;
    expect(even.inventory.mons).toEqual({ hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21'] });
  });

  it('passes dmcrypt on', () => {
    const { configuration } = create(clusterDeployPlugin, EMPTY_CLUSTER, [S1], [], [{ id: 'dmcrypt', value: true }]);
    expect(configuration.global_vars.dmcrypt).toBe(true);
    expect(configuration.inventory).toEqual({
      mons: { hosts: ['10.0.0.11'] },
      mgrs: { hosts: ['10.0.0.11'] },
      osds: { hosts: ['10.0.0.11'] },
      _meta: { hostvars: { '10.0.0.11': osdHost(S1) } },
    });
  });

  it('needs a server list', () => {
    expect(inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [])).errorName).toBe('ServerListIsRequiredForPlaybookError');
    expect(inputError(() => clusterDeployPlugin.buildConfiguration(EMPTY_CLUSTER, [], {})).errorName).toBe('ServerListIsRequiredForPlaybookError');
  });

  it('refuses a server given twice', () => {
    expect(inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [S1, S2, S2])).errorName).toBe('DuplicateServerError');
  });

  it('refuses servers already in a cluster, this one or another', () => {
    const e = inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [S1, { ...S2, cluster_id: 'other' }, inCluster(S3)]));
    expect(e.errorName).toBe('ServerInClusterError');
    expect(e.message).toContain(`ceph-02 (${ID2}) in other`);
    expect(e.message).toContain(`ceph-03 (${ID3}) in ${CLUSTER_ID}`);
    expect(e.message).not.toContain('ceph-01');
  });

  it('refuses a cluster that is already deployed', () => {
    expect(inputError(() => create(clusterDeployPlugin, deployed(), [S4])).errorName).toBe('ClusterAlreadyDeployedError');
    expect(inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [S4], [inCluster(S1)])).errorName).toBe('ClusterAlreadyDeployedError');
    // empty roles are no deployment
    const emptyRoles: PluginCluster = { ...EMPTY_CLUSTER, configuration: { mons: [], osds: [] } };
    expect(create(clusterDeployPlugin, emptyRoles, [S4]).servers).toHaveLength(1);
  });

  it.each(NOT_READY_STATES)('refuses a server in state %s', (state) => {
    const e = inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [S1, { ...S3, state }]));
    expect(e.errorName).toBe('ServerNotReadyError');
    expect(e.message).toContain(`ceph-03 (${ID3}) is ${state}`);
  });

  it('needs the facts of every server', () => {
    const noFacts = { ...S2, facts: {} };
    const e = inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [S1, S6, noFacts]));
    expect(e.errorName).toBe('MissingFactsError');
    expect(e.message).toContain(`ceph-02 (${ID2}), ceph-06`);
    expect(e.message).not.toContain('ceph-01');
  });

  it('needs a default IPv4 address on every server', () => {
    const f = S2.facts as ReturnType<typeof facts>;
    const noRoute = { ...S2, facts: { ...f, default_ipv4: null, interfaces: f.interfaces.map((i) => ({ ...i, default_route: false })) } };
    const e = inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [S1, noRoute]));
    expect(e.errorName).toBe('MissingFactsError');
    expect(e.message).toContain('ceph-02');
  });

  it('needs a usable disk somewhere', () => {
    const e = inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [S0]));
    expect(e.errorName).toBe('NoUsableDisksError');
    expect(e.message).toContain(`ceph-00 (${ID0})`);
    expect(e.message).toContain('vdb: smaller than 5 GiB');
  });

  it('refuses a server that would have no role', () => {
    const late = { ...S0, name: 'zz-spare' };
    const e = inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [S1, late], [], [{ id: 'mon_count', value: 1 }]));
    expect(e.errorName).toBe('NoUsableDisksError');
    expect(e.message).toContain('zz-spare');
    expect(e.message).toContain('no role');
  });

  it('refuses bad hints in buildConfiguration too', () => {
    expect(inputError(() => clusterDeployPlugin.buildConfiguration(EMPTY_CLUSTER, [S1], { mon_count: 0 })).errorName).toBe('InvalidHintError');
    expect(inputError(() => clusterDeployPlugin.buildConfiguration(EMPTY_CLUSTER, [S1], { dmcrypt: 'yes' })).errorName).toBe('InvalidHintError');
    expect(inputError(() => create(clusterDeployPlugin, EMPTY_CLUSTER, [S1], [], [{ id: 'mon_count', value: 10 }])).errorName).toBe(
      'InvalidHintError',
    );
  });
});

// ---------------------------------------------------------------------------------------

describe('add_osd', () => {
  const cluster = deployed();
  const clusterServers = [S1, S2, S3].map(inCluster);

  it('adds OSD hosts, with the monitors to delegate to', () => {
    const { servers, configuration } = create(addOsdPlugin, cluster, [S4], clusterServers);
    expect(servers.map((s) => s.id)).toEqual([ID4]);
    expect(configuration).toEqual({
      global_vars: {
        fsid: CLUSTER_ID,
        cluster: 'ceph',
        carapace_cluster_name: 'prod',
        dmcrypt: false,
        public_network: '10.0.0.0/23',
        cluster_network: '10.0.0.0/23',
        ceph_repository: 'distribution',
        osd_objectstore: 'bluestore',
      },
      inventory: {
        mons: { hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13'] },
        osds: { hosts: ['10.0.1.21'] },
        _meta: {
          hostvars: {
            '10.0.0.11': base(S1),
            '10.0.0.12': base(S2),
            '10.0.0.13': base(S3),
            '10.0.1.21': {
              ansible_host: '10.0.1.21',
              ansible_user: 'ansible',
              ansible_become: true,
              carapace_server_id: ID4,
              carapace_server_name: 'ceph-04',
              carapace_fqdn: 'ceph-04.dc1.example.net',
              carapace_osd_devices: ['/dev/nvme0n1'],
              carapace_osd_devices_info: [{ path: '/dev/nvme0n1', size_bytes: 960_197_124_096, rotational: false }],
            },
          },
        },
      },
    });
  });

  it('computes the networks over the old and the new servers', () => {
    const small = deployed([S1], [S1]);
    expect(create(addOsdPlugin, small, [S2], [inCluster(S1)]).configuration.global_vars.public_network).toBe('10.0.0.0/24');
    expect(create(addOsdPlugin, small, [S2], [inCluster(S1), inCluster(S4)]).configuration.global_vars.public_network).toBe('10.0.0.0/23');
    // a cluster server without facts is left out
    expect(create(addOsdPlugin, small, [S2], [inCluster(S1), inCluster(S6)]).configuration.global_vars.public_network).toBe('10.0.0.0/24');
  });

  it('appends the new hosts to osds on success; they join', () => {
    const { servers, configuration } = create(addOsdPlugin, cluster, [S4], clusterServers, [{ id: 'dmcrypt', value: true }]);
    expect(configuration.global_vars.dmcrypt).toBe(true);
    expect(addOsdPlugin.onSuccess(cluster, servers, configuration)).toEqual({
      configuration: { mons: [member(S1), member(S2), member(S3)], osds: [member(S1), member(S2), member(S3), member(S4)] },
      join: [ID4],
      leave: [],
      deleteCluster: false,
    });
  });

  it('ignores monitors passed as servers to onSuccess', () => {
    const { configuration } = create(addOsdPlugin, cluster, [S4], clusterServers);
    const effect = addOsdPlugin.onSuccess(cluster, [S4, ...clusterServers], configuration);
    expect(effect.join).toEqual([ID4]);
    expect(effect.configuration.osds).toEqual([member(S1), member(S2), member(S3), member(S4)]);
  });

  it('turns a monitor of this cluster that is not an OSD host into one', () => {
    const monOnly = deployed([S1], [S1, S3]);
    const servers = [S1, S3].map(inCluster);
    const { configuration } = create(addOsdPlugin, monOnly, [inCluster(S3)], servers);
    expect(configuration.inventory.mons).toEqual({ hosts: ['10.0.0.11', '10.0.0.13'] });
    expect(configuration.inventory.osds).toEqual({ hosts: ['10.0.0.13'] });
    expect((configuration.inventory._meta as { hostvars: Record<string, unknown> }).hostvars['10.0.0.13']).toEqual(osdHost(S3));
    expect(addOsdPlugin.onSuccess(monOnly, [inCluster(S3)], configuration)).toEqual({
      configuration: { mons: [member(S1), member(S3)], osds: [member(S1), member(S3)] },
      join: [],
      leave: [],
      deleteCluster: false,
    });
  });

  it('leaves out monitors that are not ready, and needs one', () => {
    const servers = [inCluster(S1), inCluster({ ...S2, state: 'off' }), inCluster(S3)];
    expect(create(addOsdPlugin, cluster, [S4], servers).configuration.inventory.mons).toEqual({ hosts: ['10.0.0.11', '10.0.0.13'] });
    const down = [S1, S2, S3].map((s) => inCluster({ ...s, state: 'unreachable' }));
    const e = inputError(() => create(addOsdPlugin, cluster, [S4], down));
    expect(e.errorName).toBe('ClusterHasNoMonitorsError');
    expect(e.message).toContain(`ceph-01 (${ID1}) is unreachable`);
    expect(inputError(() => addOsdPlugin.buildConfiguration(cluster, [S4], {}, [])).errorName).toBe('ClusterHasNoMonitorsError');
  });

  it('needs a deployed cluster', () => {
    expect(inputError(() => create(addOsdPlugin, EMPTY_CLUSTER, [S4], [])).errorName).toBe('ClusterHasNoMonitorsError');
  });

  it('needs the cluster servers in buildConfiguration (a programming error otherwise)', () => {
    const call = () => addOsdPlugin.buildConfiguration(cluster, [S4], { dmcrypt: false });
    expect(call).toThrow(/cluster's servers/);
    expect(call).not.toThrow(PlaybookInputError);
  });

  it('needs a server list', () => {
    expect(inputError(() => create(addOsdPlugin, cluster, [], clusterServers)).errorName).toBe('ServerListIsRequiredForPlaybookError');
  });

  it('refuses a server given twice', () => {
    expect(inputError(() => create(addOsdPlugin, cluster, [S4, S4], clusterServers)).errorName).toBe('DuplicateServerError');
  });

  it('refuses servers of another cluster', () => {
    const e = inputError(() => create(addOsdPlugin, cluster, [{ ...S4, cluster_id: 'other' }], clusterServers));
    expect(e.errorName).toBe('ServerInClusterError');
    expect(e.message).toContain('ceph-04');
  });

  it('refuses servers that are already OSD hosts of this cluster', () => {
    const e = inputError(() => create(addOsdPlugin, cluster, [S4, inCluster(S2)], clusterServers));
    expect(e.errorName).toBe('ServerAlreadyInRoleError');
    expect(e.message).toContain(`ceph-02 (${ID2})`);
    expect(e.message).not.toContain('ceph-04');
  });

  it.each(NOT_READY_STATES)('refuses a server in state %s', (state) => {
    expect(inputError(() => create(addOsdPlugin, cluster, [{ ...S4, state }], clusterServers)).errorName).toBe('ServerNotReadyError');
  });

  it('needs facts and a usable disk on every new server', () => {
    const missing = inputError(() => create(addOsdPlugin, cluster, [S4, S6], clusterServers));
    expect(missing.errorName).toBe('MissingFactsError');
    expect(missing.message).toContain('ceph-06');
    const noDisk = inputError(() => create(addOsdPlugin, cluster, [S4, S0], clusterServers));
    expect(noDisk.errorName).toBe('NoUsableDisksError');
    expect(noDisk.message).toContain(`ceph-00 (${ID0})`);
    expect(noDisk.message).not.toContain('ceph-04');
  });

  it('refuses a bad dmcrypt hint', () => {
    expect(inputError(() => create(addOsdPlugin, cluster, [S4], clusterServers, [{ id: 'dmcrypt', value: 'no' }])).errorName).toBe(
      'InvalidHintError',
    );
    expect(inputError(() => create(addOsdPlugin, cluster, [S4], clusterServers, [{ id: 'mon_count', value: 3 }])).errorName).toBe(
      'UnknownHintError',
    );
  });
});

// ---------------------------------------------------------------------------------------

describe('remove_osd', () => {
  const cluster = deployed([S1, S2, S3, S4]);
  const clusterServers = [S1, S2, S3, S4].map(inCluster);

  it('removes OSD hosts, with the monitors to delegate to', () => {
    const { servers, configuration } = create(removeOsdPlugin, cluster, [inCluster(S4), inCluster(S3)], clusterServers);
    expect(servers.map((s) => s.id)).toEqual([ID3, ID4]);
    expect(configuration).toEqual({
      global_vars: { fsid: CLUSTER_ID, cluster: 'ceph', carapace_cluster_name: 'prod', safe_to_destroy_timeout: 600 },
      inventory: {
        mons: { hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13'] },
        osds: { hosts: ['10.0.0.13', '10.0.1.21'] },
        _meta: {
          hostvars: {
            '10.0.0.11': base(S1),
            '10.0.0.12': base(S2),
            '10.0.0.13': base(S3),
            '10.0.1.21': {
              ansible_host: '10.0.1.21',
              ansible_user: 'ansible',
              ansible_become: true,
              carapace_server_id: ID4,
              carapace_server_name: 'ceph-04',
              carapace_fqdn: 'ceph-04.dc1.example.net',
            },
          },
        },
      },
    });
  });

  it('on success, a host that was only an OSD host leaves; a monitor stays', () => {
    const { servers, configuration } = create(removeOsdPlugin, cluster, [inCluster(S4), inCluster(S3)], clusterServers);
    expect(removeOsdPlugin.onSuccess(cluster, servers, configuration)).toEqual({
      configuration: { mons: [member(S1), member(S2), member(S3)], osds: [member(S1), member(S2)] },
      join: [],
      leave: [ID4],
      deleteCluster: false,
    });
  });

  it('may remove every OSD host: the monitors stay, the role is dropped', () => {
    const { servers, configuration } = create(removeOsdPlugin, cluster, clusterServers, clusterServers);
    expect(removeOsdPlugin.onSuccess(cluster, servers, configuration)).toEqual({
      configuration: { mons: [member(S1), member(S2), member(S3)] },
      join: [],
      leave: [ID4],
      deleteCluster: false,
    });
  });

  it('needs no facts', () => {
    const noFacts = deployed([S1, S6]);
    const servers = [S1, S2, S3, S6].map(inCluster);
    const { configuration } = create(removeOsdPlugin, noFacts, [inCluster(S6)], servers);
    expect(configuration.inventory.osds).toEqual({ hosts: ['10.0.0.16'] });
  });

  it('refuses servers that are not OSD hosts of the cluster', () => {
    const monOnly = deployed([S1], [S1, S2]);
    const e = inputError(() => create(removeOsdPlugin, monOnly, [inCluster(S2), S0, inCluster(S1)], [S1, S2].map(inCluster)));
    expect(e.errorName).toBe('ServerNotInRoleError');
    expect(e.message).toContain(`ceph-00 (${ID0}), ceph-02 (${ID2})`);
    expect(e.message).not.toContain('ceph-01');
    expect(inputError(() => removeOsdPlugin.buildConfiguration(monOnly, [S2], {}, [S1, S2].map(inCluster))).errorName).toBe(
      'ServerNotInRoleError',
    );
  });

  it('needs a server list, no duplicates, ready servers', () => {
    expect(inputError(() => create(removeOsdPlugin, cluster, [], clusterServers)).errorName).toBe('ServerListIsRequiredForPlaybookError');
    expect(inputError(() => create(removeOsdPlugin, cluster, [S4, S4], clusterServers)).errorName).toBe('DuplicateServerError');
    for (const state of NOT_READY_STATES) {
      expect(inputError(() => create(removeOsdPlugin, cluster, [inCluster({ ...S4, state })], clusterServers)).errorName).toBe(
        'ServerNotReadyError',
      );
    }
  });

  it('needs a usable monitor', () => {
    const noMons: PluginCluster = { ...cluster, configuration: { osds: [member(S4)] } };
    expect(inputError(() => create(removeOsdPlugin, noMons, [S4], clusterServers)).errorName).toBe('ClusterHasNoMonitorsError');
    const down = clusterServers.map((s) => (s.id === ID4 ? s : { ...s, state: 'off' }));
    expect(inputError(() => create(removeOsdPlugin, cluster, [S4], down)).errorName).toBe('ClusterHasNoMonitorsError');
    expect(() => removeOsdPlugin.buildConfiguration(cluster, [S4], {})).toThrow(/cluster's servers/);
  });

  it('passes the safe_to_destroy_timeout hint (seconds) to the playbook; no other hint', () => {
    const { configuration } = create(removeOsdPlugin, cluster, [S4], clusterServers, [{ id: 'safe_to_destroy_timeout', value: 30 }]);
    expect(configuration.global_vars.safe_to_destroy_timeout).toBe(30);
    expect(create(removeOsdPlugin, cluster, [S4], clusterServers, [{ id: 'safe_to_destroy_timeout', value: 0 }]).configuration.global_vars.safe_to_destroy_timeout).toBe(0);
    for (const value of [-1, 86_401, 1.5, '30', null]) {
      expect(inputError(() => create(removeOsdPlugin, cluster, [S4], clusterServers, [{ id: 'safe_to_destroy_timeout', value }])).errorName).toBe(
        'InvalidHintError',
      );
    }
    expect(inputError(() => create(removeOsdPlugin, cluster, [S4], clusterServers, [{ id: 'dmcrypt', value: true }])).errorName).toBe(
      'UnknownHintError',
    );
  });
});

// ---------------------------------------------------------------------------------------

describe('purge_cluster', () => {
  const cluster = deployed([S1, S2, S3, S4]);
  // ceph-00 is a server of the cluster without a role
  const clusterServers = [S3, S0, S4, S1, S2].map(inCluster);

  it("runs on all the cluster's servers", () => {
    const { servers, configuration } = create(purgeClusterPlugin, cluster, [], clusterServers);
    expect(servers.map((s) => s.name)).toEqual(['ceph-00', 'ceph-01', 'ceph-02', 'ceph-03', 'ceph-04']);
    expect(configuration).toEqual({
      global_vars: { fsid: CLUSTER_ID, cluster: 'ceph', carapace_cluster_name: 'prod' },
      inventory: {
        mons: { hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13'] },
        osds: { hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21'] },
        ceph: { hosts: ['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21'] },
        _meta: {
          hostvars: {
            '10.0.0.10': base(inCluster(S0)),
            '10.0.0.11': base(inCluster(S1)),
            '10.0.0.12': base(inCluster(S2)),
            '10.0.0.13': base(inCluster(S3)),
            '10.0.1.21': base(inCluster(S4)),
          },
        },
      },
    });
  });

  it('accepts the full list in any order', () => {
    const { servers } = create(purgeClusterPlugin, cluster, [...clusterServers].reverse(), clusterServers);
    expect(servers.map((s) => s.id)).toEqual([ID0, ID1, ID2, ID3, ID4]);
  });

  it('refuses any other list', () => {
    const partial = inputError(() => create(purgeClusterPlugin, cluster, [inCluster(S1)], clusterServers));
    expect(partial.errorName).toBe('ServerListNotAllowedError');
    expect(partial.message).toContain(`missing: ceph-00 (${ID0})`);
    const foreign = inputError(() => create(purgeClusterPlugin, cluster, [...clusterServers, S6], clusterServers));
    expect(foreign.errorName).toBe('ServerListNotAllowedError');
    expect(foreign.message).toContain('not servers of the cluster: ceph-06');
    expect(inputError(() => create(purgeClusterPlugin, cluster, [...clusterServers, inCluster(S1)], clusterServers)).errorName).toBe(
      'DuplicateServerError',
    );
  });

  it.each(NOT_READY_STATES)('refuses a cluster with a server in state %s', (state) => {
    const servers = clusterServers.map((s) => (s.id === ID2 ? { ...s, state } : s));
    const e = inputError(() => create(purgeClusterPlugin, cluster, [], servers));
    expect(e.errorName).toBe('ServerNotReadyError');
    expect(e.message).toContain(`ceph-02 (${ID2}) is ${state}`);
  });

  it('deletes the cluster on success: every server leaves', () => {
    const { servers, configuration } = create(purgeClusterPlugin, cluster, [], clusterServers);
    expect(purgeClusterPlugin.onSuccess(cluster, servers, configuration)).toEqual({
      configuration: {},
      join: [],
      leave: [ID0, ID1, ID2, ID3, ID4],
      deleteCluster: true,
    });
  });

  it('purges a cluster without servers', () => {
    const { servers, configuration } = create(purgeClusterPlugin, EMPTY_CLUSTER, [], []);
    expect(servers).toEqual([]);
    expect(configuration.inventory).toEqual({ ceph: { hosts: [] }, _meta: { hostvars: {} } });
    expect(purgeClusterPlugin.onSuccess(EMPTY_CLUSTER, servers, configuration)).toEqual({
      configuration: {},
      join: [],
      leave: [],
      deleteCluster: true,
    });
  });

  it('has no hints', () => {
    expect(inputError(() => create(purgeClusterPlugin, cluster, [], clusterServers, [{ id: 'dmcrypt', value: true }])).errorName).toBe(
      'UnknownHintError',
    );
  });
});

describe('restart_services', () => {
  const cluster = deployed([S1, S2, S3, S4]);
  const clusterServers = [S3, S0, S4, S1, S2].map(inCluster);

  it('restarts the types asked for, in its own order, on every server of the cluster', () => {
    const { servers, configuration } = create(restartServicesPlugin, cluster, [], clusterServers, [{ id: 'services', value: 'osd, mon' }]);
    expect(servers.map((s) => s.name)).toEqual(['ceph-00', 'ceph-01', 'ceph-02', 'ceph-03', 'ceph-04']);
    expect(configuration.global_vars).toEqual({
      fsid: CLUSTER_ID,
      cluster: 'ceph',
      carapace_cluster_name: 'prod',
      services: ['mon', 'osd'],
      ok_to_stop_timeout: 300,
      daemon_timeout: 600,
      clean_timeout: 900,
    });
    expect(configuration.inventory).toMatchObject({ ceph: { hosts: ['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21'] } });
    expect(create(restartServicesPlugin, cluster, [], clusterServers).configuration.global_vars.services).toEqual(['mgr', 'mon', 'osd']);
  });

  it.each(['', 'osd,rgw', ' , '])('refuses services %j', (value) => {
    const e = inputError(() => create(restartServicesPlugin, cluster, [], clusterServers, [{ id: 'services', value }]));
    expect(e.errorName).toBe('InvalidHintError');
    expect(e.message).toContain('among mgr, mon, osd');
  });
});

describe('upgrade_ceph', () => {
  const cluster = deployed([S1, S2, S3, S4]);
  const clusterServers = [S3, S0, S4, S1, S2].map(inCluster);
  const KEY = '-----BEGIN PGP PUBLIC KEY BLOCK-----\nmDMEZ...\n-----END PGP PUBLIC KEY BLOCK-----\n';
  const repository: HintValue[] = [
    { id: 'ceph_repository', value: 'repository' },
    { id: 'ceph_repository_url', value: 'http://mirror.example.net/ceph-reef' },
    { id: 'ceph_repository_suite', value: 'bookworm' },
    { id: 'ceph_repository_key', value: KEY },
  ];

  it("runs on all the cluster's servers, its roles as groups, the distribution's packages by default", () => {
    const { servers, configuration } = create(upgradeCephPlugin, cluster, [], clusterServers);
    expect(servers.map((s) => s.name)).toEqual(['ceph-00', 'ceph-01', 'ceph-02', 'ceph-03', 'ceph-04']);
    expect(configuration.global_vars).toEqual({
      fsid: CLUSTER_ID,
      cluster: 'ceph',
      carapace_cluster_name: 'prod',
      ceph_repository: 'distribution',
      target_version: '',
      allowed_warnings: [],
      ok_to_stop_timeout: 300,
      daemon_timeout: 600,
      clean_timeout: 900,
    });
    expect(configuration.inventory).toMatchObject({
      mons: { hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13'] },
      osds: { hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21'] },
      ceph: { hosts: ['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21'] },
    });
    expect('onSuccess' in upgradeCephPlugin).toBe(false);
  });

  it('passes a repository, its pin, the target and the warnings allowed', () => {
    const { configuration } = create(upgradeCephPlugin, cluster, [], clusterServers, [
      ...repository,
      { id: 'ceph_repository_pin', value: 'release o=Ceph' },
      { id: 'target_version', value: '18.2.7' },
      { id: 'allowed_warnings', value: 'OSD_DOWN, PG_DEGRADED' },
      { id: 'ok_to_stop_timeout', value: 0 },
    ]);
    expect(configuration.global_vars).toMatchObject({
      ceph_repository: 'repository',
      ceph_repository_url: 'http://mirror.example.net/ceph-reef',
      ceph_repository_suite: 'bookworm',
      ceph_repository_components: 'main',
      ceph_repository_key: KEY,
      ceph_repository_pin: 'release o=Ceph',
      target_version: '18.2.7',
      allowed_warnings: ['OSD_DOWN', 'PG_DEGRADED'],
      ok_to_stop_timeout: 0,
    });
  });

  it.each([
    ['ceph_repository_url', 'ftp://mirror/ceph', 'an http, https or file URI'],
    ['ceph_repository_suite', 'book worm', 'a suite name'],
    ['ceph_repository_key', 'not a key', 'the ASCII-armored signing key'],
    ['ceph_repository_pin', 'release o=Ceph\nPin-Priority: 1001', 'an apt Pin value'],
    ['target_version', '18.2', 'an upstream Ceph version'],
    ['allowed_warnings', 'OSD_DOWN;rm', 'health check codes'],
  ])('refuses a bad %s (%j)', (id, value, expected) => {
    const hints = [...repository.filter((h) => h.id !== id), { id, value }];
    const e = inputError(() => create(upgradeCephPlugin, cluster, [], clusterServers, hints));
    expect(e.errorName).toBe('InvalidHintError');
    expect(e.message).toContain(expected);
  });

  it('refuses a cluster without monitors, part of a cluster, and bad timeouts', () => {
    expect(inputError(() => create(upgradeCephPlugin, EMPTY_CLUSTER, [], [])).errorName).toBe('ClusterHasNoMonitorsError');
    expect(inputError(() => create(upgradeCephPlugin, cluster, [inCluster(S1)], clusterServers)).errorName).toBe('ServerListNotAllowedError');
    expect(inputError(() => create(upgradeCephPlugin, cluster, [], clusterServers, [{ id: 'daemon_timeout', value: 0 }])).errorName).toBe('InvalidHintError');
  });
});

describe('update_ceph_configuration', () => {
  const cluster = deployed([S1, S2, S3, S4]);
  const clusterServers = [S3, S0, S4, S1, S2].map(inCluster);
  const options = (value: string, remove = ''): HintValue[] => [
    { id: 'options', value },
    { id: 'remove_options', value: remove },
  ];

  it('passes the options to set and to remove, on every server of the cluster', () => {
    const { servers, configuration } = create(updateCephConfigurationPlugin, cluster, [], clusterServers, [
      ...options('osd osd_max_backfills 2;\n global  mon-allow-pool-delete   true\nosd.3 log_file /var/log/ceph/$cluster-$name.log', 'client rbd_cache, mon mon_warn_on_pool_no_redundancy'),
      { id: 'ok_to_stop_timeout', value: 60 },
    ]);
    expect(servers.map((s) => s.name)).toEqual(['ceph-00', 'ceph-01', 'ceph-02', 'ceph-03', 'ceph-04']);
    expect(configuration.global_vars).toEqual({
      fsid: CLUSTER_ID,
      cluster: 'ceph',
      carapace_cluster_name: 'prod',
      ceph_options_set: [
        { section: 'osd', name: 'osd_max_backfills', value: '2' },
        { section: 'global', name: 'mon_allow_pool_delete', value: 'true' },
        { section: 'osd.3', name: 'log_file', value: '/var/log/ceph/$cluster-$name.log' },
      ],
      ceph_options_remove: [
        { section: 'client', name: 'rbd_cache' },
        { section: 'mon', name: 'mon_warn_on_pool_no_redundancy' },
      ],
      ok_to_stop_timeout: 60,
      daemon_timeout: 600,
      clean_timeout: 900,
    });
    expect(configuration.inventory).toMatchObject({ ceph: { hosts: ['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21'] } });
  });

  it.each([
    ['', '', 'nothing to change'],
    ['osd osd_max_backfills', '', "is not 'SECTION NAME VALUE'"],
    ['rgw osd_max_backfills 2', '', 'the section must be global, mon, mgr, osd, mds, client'],
    ['osd/class:ssd osd_max_backfills 2', '', 'the section must be'],
    ['osd OSD_MAX 2', '', 'is not an option name'],
    ['global mon_host 10.0.0.1', '', 'written by Carapace when it deploys'],
    ['global public-network 10.0.0.0/24', '', 'written by Carapace when it deploys'],
    ['osd osd_max_backfills 2 # two', '', "without '#'"],
    ['osd log_file /var/log/a\u0001b', '', "without '#'"],
    ['osd log_file C:\\logs', '', "without '#'"],
    ['osd osd_max_backfills 2', 'osd osd-max-backfills', 'named twice'],
    ['', 'osd', "is not 'SECTION NAME'"],
    ['', 'global fsid', 'written by Carapace'],
    [`osd log_file /${'x'.repeat(1024)}`, '', 'at most 1024 characters'],
    [Array.from({ length: 101 }, (_, i) => `osd opt_${i} 1`).join(';'), '', 'at most 100 options'],
  ])('refuses options %j, removals %j', (set, remove, expected) => {
    const e = inputError(() => create(updateCephConfigurationPlugin, cluster, [], clusterServers, options(set, remove)));
    expect(e.errorName).toBe('InvalidHintError');
    expect(e.message).toContain(expected);
  });

  it('refuses a cluster without monitors and a partial server list', () => {
    expect(inputError(() => create(updateCephConfigurationPlugin, EMPTY_CLUSTER, [], [], options('osd osd_max_backfills 2'))).errorName).toBe('ClusterHasNoMonitorsError');
    expect(inputError(() => create(updateCephConfigurationPlugin, cluster, [inCluster(S1)], clusterServers, options('osd osd_max_backfills 2'))).errorName).toBe(
      'ServerListNotAllowedError',
    );
  });

  it("keeps the cluster's options after success: those set added or changed, those removed gone, an emptied section dropped, the roles unchanged", () => {
    const before: PluginCluster = { ...cluster, ceph_options: { osd: { osd_max_backfills: '1', osd_scrub_sleep: '0.1' }, mon: { mon_allow_pool_delete: 'true' } } };
    const { servers, configuration } = create(updateCephConfigurationPlugin, before, [], clusterServers, options('osd osd_max_backfills 3; client rbd_cache false', 'mon mon_allow_pool_delete, osd.9 debug_osd'));
    const effect = updateCephConfigurationPlugin.onSuccess?.(before, servers, configuration);
    expect(effect).toEqual({
      configuration: before.configuration,
      join: [],
      leave: [],
      deleteCluster: false,
      cephOptions: { osd: { osd_max_backfills: '3', osd_scrub_sleep: '0.1' }, client: { rbd_cache: 'false' } },
    });
    // the cluster it was given is not changed
    expect(before.ceph_options).toEqual({ osd: { osd_max_backfills: '1', osd_scrub_sleep: '0.1' }, mon: { mon_allow_pool_delete: 'true' } });
    // a cluster without options yet, and global vars edited into something else, keep what is well formed
    expect(updateCephConfigurationPlugin.onSuccess?.(cluster, servers, { inventory: {}, global_vars: { ceph_options_set: [{ section: 'osd', name: 'a', value: '1' }, { section: 'osd' }, 7], ceph_options_remove: 'x' } })?.cephOptions).toEqual({
      osd: { a: '1' },
    });
  });
});

describe('maintenance_enter and maintenance_exit', () => {
  const cluster = deployed([S1, S2, S3, S4]);
  const clusterServers = [S3, S0, S4, S1, S2].map(inCluster);
  const inMaintenance = (s: PluginServer): PluginServer => ({ ...inCluster(s), state: 'maintenance_no_reconfig' });

  it('enter: the hosts given, worked through the monitors on other hosts; after success they are in maintenance', () => {
    const { servers, configuration } = create(maintenanceEnterPlugin, cluster, [inCluster(S4), inCluster(S2)], clusterServers, [{ id: 'ok_to_stop_timeout', value: 30 }]);
    expect(servers.map((s) => s.name)).toEqual(['ceph-02', 'ceph-04']);
    expect(configuration.global_vars).toEqual({ fsid: CLUSTER_ID, cluster: 'ceph', carapace_cluster_name: 'prod', ok_to_stop_timeout: 30, daemon_timeout: 600, clean_timeout: 900 });
    expect(configuration.inventory).toMatchObject({ mons: { hosts: ['10.0.0.11', '10.0.0.13'] }, maintenance: { hosts: ['10.0.0.12', '10.0.1.21'] } });
    expect(maintenanceEnterPlugin.onSuccess(cluster, servers, configuration)).toEqual({
      configuration: cluster.configuration,
      join: [],
      leave: [],
      deleteCluster: false,
      serverStates: { [ID2]: 'maintenance_no_reconfig', [ID4]: 'maintenance_no_reconfig' },
    });
  });

  it('enter refuses no list, a server of another cluster, one not ready or already in maintenance, and hosts holding every usable monitor', () => {
    expect(inputError(() => create(maintenanceEnterPlugin, cluster, [], clusterServers)).errorName).toBe('ServerListIsRequiredForPlaybookError');
    expect(inputError(() => create(maintenanceEnterPlugin, cluster, [S0], clusterServers)).errorName).toBe('ServerNotInClusterError');
    expect(inputError(() => create(maintenanceEnterPlugin, cluster, [inMaintenance(S2)], clusterServers)).errorName).toBe('ServerNotReadyError');
    expect(inputError(() => create(maintenanceEnterPlugin, cluster, [inCluster(S2), inCluster(S2)], clusterServers)).errorName).toBe('DuplicateServerError');
    const monitors = inputError(() => create(maintenanceEnterPlugin, cluster, [S1, S2, S3].map(inCluster), clusterServers));
    expect(monitors.errorName).toBe('ClusterHasNoMonitorsError');
    expect(monitors.message).toContain('on another host than');
    // the only monitor left outside is itself in maintenance
    const others = clusterServers.map((s) => (s.id === ID1 || s.id === ID3 ? inMaintenance(s) : s));
    expect(inputError(() => create(maintenanceEnterPlugin, cluster, [inCluster(S2)], others)).errorName).toBe('ClusterHasNoMonitorsError');
  });

  it('exit: only servers in maintenance; after success they are operational', () => {
    const others = clusterServers.map((s) => (s.id === ID2 ? inMaintenance(s) : s));
    const { servers, configuration } = create(maintenanceExitPlugin, cluster, [inMaintenance(S2)], others);
    expect(configuration.inventory).toMatchObject({ mons: { hosts: ['10.0.0.11', '10.0.0.13'] }, maintenance: { hosts: ['10.0.0.12'] } });
    expect(maintenanceExitPlugin.onSuccess(cluster, servers, configuration).serverStates).toEqual({ [ID2]: 'operational' });
    const e = inputError(() => create(maintenanceExitPlugin, cluster, [inMaintenance(S2), inCluster(S4)], others));
    expect(e.errorName).toBe('ServerNotInMaintenanceError');
    expect(e.message).toContain('ceph-04');
    expect(e.message).not.toContain('ceph-02');
  });
});

describe('replace_osd', () => {
  const cluster = deployed([S1, S2, S3, S4]);
  const clusterServers = [S3, S0, S4, S1, S2].map(inCluster);
  const replacements = (value: string): HintValue[] => [{ id: 'replacements', value }];

  it('passes the OSDs and their new devices, on the one OSD host given, through the monitors', () => {
    const { servers, configuration } = create(replaceOsdPlugin, cluster, [inCluster(S4)], clusterServers, [
      ...replacements(' 3:/dev/disk/by-id/wwn-0x5000c500a1b2c3d4, 12:/dev/vdc '),
      { id: 'wipe_devices', value: true },
    ]);
    expect(servers.map((s) => s.name)).toEqual(['ceph-04']);
    expect(configuration.global_vars).toEqual({
      fsid: CLUSTER_ID,
      cluster: 'ceph',
      carapace_cluster_name: 'prod',
      replacements: [
        { id: '3', device: '/dev/disk/by-id/wwn-0x5000c500a1b2c3d4' },
        { id: '12', device: '/dev/vdc' },
      ],
      wipe_devices: true,
      dmcrypt: false,
      safe_to_destroy_timeout: 600,
      daemon_timeout: 600,
      clean_timeout: 900,
    });
    expect(configuration.inventory).toMatchObject({ mons: { hosts: ['10.0.0.11', '10.0.0.12', '10.0.0.13'] }, osds: { hosts: ['10.0.1.21'] } });
    expect('onSuccess' in replaceOsdPlugin).toBe(false);
  });

  it.each([
    ['', 'give the OSDs to replace'],
    ['3', "is not 'ID:DEVICE'"],
    ['x:/dev/vdb', "is not 'ID:DEVICE'"],
    ['3:vdb', 'is not a device path under /dev'],
    ['3:/dev/../etc/passwd', 'is not a device path under /dev'],
    ['3:/dev/vdb; rm -rf /', 'is not'],
    ['3:/dev/vdb,3:/dev/vdc', 'osd.3 is given twice'],
    ['3:/dev/vdb,4:/dev/vdb', '/dev/vdb is given twice'],
  ])('refuses replacements %j', (value, expected) => {
    const e = inputError(() => create(replaceOsdPlugin, cluster, [inCluster(S4)], clusterServers, replacements(value)));
    expect(e.errorName).toBe('InvalidHintError');
    expect(e.message).toContain(expected);
  });

  it('refuses no server, two, one that is not an OSD host of the cluster, and a cluster without monitors', () => {
    expect(inputError(() => create(replaceOsdPlugin, cluster, [], clusterServers, replacements('3:/dev/vdb'))).errorName).toBe('ServerListIsRequiredForPlaybookError');
    expect(inputError(() => create(replaceOsdPlugin, cluster, [inCluster(S3), inCluster(S4)], clusterServers, replacements('3:/dev/vdb'))).errorName).toBe('ServerListNotAllowedError');
    expect(inputError(() => create(replaceOsdPlugin, cluster, [inCluster(S0)], clusterServers, replacements('3:/dev/vdb'))).errorName).toBe('ServerNotInRoleError');
    expect(inputError(() => create(replaceOsdPlugin, EMPTY_CLUSTER, [S4], [], replacements('3:/dev/vdb'))).errorName).toBe('ServerNotInRoleError');
  });
});

describe('add_mon, remove_mon, replace_mon', () => {
  // monitors on S1, S2, S3; OSDs on S1..S4; S0 in no cluster
  const cluster = deployed([S1, S2, S3, S4]);
  const clusterServers = [S1, S2, S3, S4].map(inCluster);
  const groups = (configuration: PlaybookConfiguration): Record<string, unknown> =>
    Object.fromEntries(Object.entries(configuration.inventory).filter(([k]) => k !== '_meta').map(([k, v]) => [k, (v as { hosts: string[] }).hosts]));

  it('add_mon: the new host, the monitors to work through, every host of the cluster for ceph.conf; the monitor name from the facts', () => {
    const { servers, configuration } = create(addMonPlugin, cluster, [S0], clusterServers, [{ id: 'join_timeout', value: 900 }]);
    expect(servers.map((s) => s.name)).toEqual(['ceph-00']);
    expect(configuration.global_vars).toEqual({ fsid: CLUSTER_ID, cluster: 'ceph', carapace_cluster_name: 'prod', join_timeout: 900 });
    expect(groups(configuration)).toEqual({
      mons: ['10.0.0.11', '10.0.0.12', '10.0.0.13'],
      new_mons: ['10.0.0.10'],
      old_mons: [],
      ceph_hosts: ['10.0.0.10', '10.0.0.11', '10.0.0.12', '10.0.0.13', '10.0.1.21'],
    });
    const hostvars = (configuration.inventory._meta as { hostvars: Record<string, Record<string, unknown>> }).hostvars;
    expect(hostvars['10.0.0.10']).toMatchObject({ carapace_mon_name: 'ceph-00', carapace_server_id: ID0 });

    const effect = addMonPlugin.onSuccess(cluster, servers, configuration, [
      { name: 'ceph.conf', content: '[global]\n\tfsid = x\n\tmon_host = [v2:10.0.0.10:3300,v1:10.0.0.10:6789]\n' },
      { name: 'other', content: 'ignored' },
    ]);
    expect(effect.configuration.mons?.map((m) => m.server_id)).toEqual([ID1, ID2, ID3, ID0]);
    expect(effect.configuration.osds?.map((m) => m.server_id)).toEqual([ID1, ID2, ID3, ID4]);
    expect(effect.join).toEqual([ID0]);
    expect(effect.leave).toEqual([]);
    expect(effect.refreshFiles?.map((f) => f.name)).toEqual(['ceph.conf']);
    expect(effect.files).toBeUndefined();
  });

  it('add_mon refuses a monitor already, a server of another cluster, one without facts, a cluster host not ready', () => {
    expect(inputError(() => create(addMonPlugin, cluster, [inCluster(S2)], clusterServers)).errorName).toBe('ServerAlreadyInRoleError');
    expect(inputError(() => create(addMonPlugin, cluster, [{ ...S0, cluster_id: 'another' }], clusterServers)).errorName).toBe('ServerInClusterError');
    expect(inputError(() => create(addMonPlugin, cluster, [S6], clusterServers)).errorName).toBe('MissingFactsError');
    expect(inputError(() => create(addMonPlugin, cluster, [], clusterServers)).errorName).toBe('ServerListIsRequiredForPlaybookError');
    const inMaintenance = clusterServers.map((s) => (s.id === ID4 ? { ...s, state: 'maintenance_no_reconfig' } : s));
    const e = inputError(() => create(addMonPlugin, cluster, [S0], inMaintenance));
    expect(e.errorName).toBe('ServerNotReadyError');
    expect(e.message).toContain('rewrites ceph.conf on every host');
    expect(inputError(() => create(addMonPlugin, EMPTY_CLUSTER, [S0], [])).errorName).toBe('ClusterHasNoMonitorsError');
  });

  it('remove_mon: works through the monitors that stay; the host leaves mons, and the cluster when it has no other role', () => {
    const twoRoles = { ...cluster, configuration: { mons: [S1, S2, S3, S0].map((s) => member(s)), osds: [S1, S2, S3, S4].map((s) => member(s)) } };
    const servers5 = [...clusterServers, inCluster(S0)];
    const { servers, configuration } = create(removeMonPlugin, twoRoles, [inCluster(S0), inCluster(S1)], servers5);
    expect(servers.map((s) => s.name)).toEqual(['ceph-00', 'ceph-01']);
    expect(configuration.global_vars).toEqual({ fsid: CLUSTER_ID, cluster: 'ceph', carapace_cluster_name: 'prod', quorum_timeout: 300 });
    expect(groups(configuration)).toMatchObject({ mons: ['10.0.0.12', '10.0.0.13'], new_mons: [], old_mons: ['10.0.0.10', '10.0.0.11'] });
    const effect = removeMonPlugin.onSuccess(twoRoles, servers, configuration, []);
    expect(effect.configuration.mons?.map((m) => m.server_id)).toEqual([ID2, ID3]);
    expect(effect.configuration.osds?.map((m) => m.server_id)).toEqual([ID1, ID2, ID3, ID4]);
    expect(effect.leave).toEqual([ID0]);
    expect(effect.join).toEqual([]);
    expect(effect.refreshFiles).toBeUndefined();
  });

  it('remove_mon refuses the last monitor, all of them, a host that is not a monitor', () => {
    const one = { ...cluster, configuration: { mons: [member(S1)], osds: cluster.configuration.osds ?? [] } };
    const last = inputError(() => create(removeMonPlugin, one, [inCluster(S1)], clusterServers));
    expect(last.errorName).toBe('LastMonitorError');
    expect(last.message).toContain('is its last monitor');
    expect(inputError(() => create(removeMonPlugin, cluster, [S1, S2, S3].map(inCluster), clusterServers)).errorName).toBe('LastMonitorError');
    expect(inputError(() => create(removeMonPlugin, cluster, [inCluster(S4)], clusterServers)).errorName).toBe('ServerNotInRoleError');
  });

  it('replace_mon: one monitor and one new host; adds, then removes', () => {
    const { servers, configuration } = create(replaceMonPlugin, cluster, [inCluster(S2), S0], clusterServers);
    expect(servers.map((s) => s.name)).toEqual(['ceph-00', 'ceph-02']);
    expect(configuration.global_vars).toMatchObject({ join_timeout: 600, quorum_timeout: 300 });
    expect(groups(configuration)).toMatchObject({ mons: ['10.0.0.11', '10.0.0.13'], new_mons: ['10.0.0.10'], old_mons: ['10.0.0.12'] });
    const effect = replaceMonPlugin.onSuccess(cluster, servers, configuration, []);
    expect(effect.configuration.mons?.map((m) => m.server_id)).toEqual([ID1, ID3, ID0]);
    expect(effect.join).toEqual([ID0]);
    expect(effect.leave).toEqual([]);
    for (const requested of [[inCluster(S2)], [S0], [inCluster(S1), inCluster(S2)], [S0, inCluster(S4)], [inCluster(S1), inCluster(S2), S0]]) {
      expect(inputError(() => create(replaceMonPlugin, cluster, requested, clusterServers)).errorName, requested.map((s) => s.name).join()).toBe('ServerListNotAllowedError');
    }
  });
});

// ---------------------------------------------------------------------------------------

describe('registry', () => {
  it('has one plugin per descriptor, in the descriptors order', () => {
    expect([...PLUGINS.keys()]).toEqual(PLAYBOOK_DESCRIPTORS.map((d) => d.id));
    expect([...PLUGINS.keys()].sort()).toEqual(['add_mon', 'add_osd', 'add_pool', 'cinder_integration', 'cluster_deploy', 'hello_world', 'maintenance_enter', 'maintenance_exit', 'purge_cluster', 'remove_mon', 'remove_osd', 'remove_pool', 'replace_mon', 'replace_osd', 'restart_services', 'update_ceph_configuration', 'upgrade_ceph']);
    for (const [id, plugin] of PLUGINS) {
      expect(plugin.descriptor).toBe(findPlaybook(id));
      expect(getPlugin(id)).toBe(plugin);
    }
    expect(getPlugin('nope')).toBeUndefined();
    expect(getPlugin('toString')).toBeUndefined();
  });

  it('a full life: deploy, add, remove, purge', () => {
    let cluster: PluginCluster = EMPTY_CLUSTER;
    let servers = [S0, S1, S2, S3, S4];
    const apply = (plugin: ChangingPlaybookPlugin, requested: readonly PluginServer[], hints: HintValue[] = []): void => {
      const clusterServers = servers.filter((s) => s.cluster_id === cluster.id);
      const created = create(plugin, cluster, requested, clusterServers, hints);
      const effect = plugin.onSuccess(cluster, created.servers, created.configuration);
      cluster = { ...cluster, configuration: effect.configuration };
      servers = servers.map((s) =>
        effect.join.includes(s.id) ? { ...s, cluster_id: cluster.id } : effect.leave.includes(s.id) ? { ...s, cluster_id: null } : s,
      );
    };
    const byId = (id: string): PluginServer => servers.find((s) => s.id === id) ?? S0;
    apply(clusterDeployPlugin, [byId(ID1), byId(ID2), byId(ID3)], [{ id: 'mon_count', value: 1 }]);
    expect(cluster.configuration).toEqual({ mons: [member(S1)], osds: [member(S1), member(S2), member(S3)] });
    apply(addOsdPlugin, [byId(ID4)]);
    expect(cluster.configuration.osds?.map((m) => m.server_name)).toEqual(['ceph-01', 'ceph-02', 'ceph-03', 'ceph-04']);
    apply(removeOsdPlugin, [byId(ID1), byId(ID2)]);
    expect(cluster.configuration).toEqual({ mons: [member(S1)], osds: [member(S3), member(S4)] });
    expect(servers.filter((s) => s.cluster_id === CLUSTER_ID).map((s) => s.name)).toEqual(['ceph-01', 'ceph-03', 'ceph-04']);
    apply(purgeClusterPlugin, []);
    expect(cluster.configuration).toEqual({});
    expect(servers.every((s) => s.cluster_id === null)).toBe(true);
  });
});
