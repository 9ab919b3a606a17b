import { Type, type Static } from 'typebox';

// The status of a cluster as Ceph reports it (`GET /v1/cluster/{id}/status/`, a Carapace
// extension): collected by a runner near the cluster from one monitor host, in one SSH round
// trip (`ceph status`, `ceph df`, `ceph osd tree`, `ceph osd dump`, all `-f json`), every
// `status.interval` seconds and at once after an execution on the cluster ends.
// Times are Unix seconds, as everywhere in the API; sizes are bytes.

/** Ceph's overall health. */
export const CephHealthStatusSchema = Type.Union([Type.Literal('HEALTH_OK'), Type.Literal('HEALTH_WARN'), Type.Literal('HEALTH_ERR')], {
  description: 'Ceph\'s overall health, as `ceph status` reports it.',
});
export type CephHealthStatus = Static<typeof CephHealthStatusSchema>;

/** One of Ceph's health checks (`ceph status` → `health.checks`). */
export const HealthCheckSchema = Type.Object(
  {
    code: Type.String({ description: 'Ceph\'s code of the check, for example `OSD_DOWN` or `MON_DOWN`.' }),
    severity: Type.Union([Type.Literal('HEALTH_WARN'), Type.Literal('HEALTH_ERR')], { description: 'How bad the check is.' }),
    summary: Type.String({ description: 'Ceph\'s one-line summary, for example `1 osds down`.' }),
    count: Type.Integer({ minimum: 0, description: 'How many things the check counts (Ceph\'s `summary.count`), 0 when it says none.' }),
    muted: Type.Boolean({ description: 'The check is muted (`ceph health mute`).' }),
    playbook: Type.Union([Type.String(), Type.Null()], { description: 'The Carapace playbook that addresses this check, where one does (for example `replace_osd` for `OSD_DOWN`), else null.' }),
  },
  { description: 'One health check of Ceph.' },
);
export type HealthCheck = Static<typeof HealthCheckSchema>;

/** One OSD in `ceph osd tree`. */
export const StatusOsdSchema = Type.Object({
  id: Type.Integer({ minimum: 0, description: 'The OSD\'s id (`osd.ID`).' }),
  up: Type.Boolean({ description: 'The OSD is up.' }),
  in: Type.Boolean({ description: 'The OSD is in (holds data).' }),
  device_class: Type.Union([Type.String(), Type.Null()], { description: 'Its CRUSH device class (`hdd`, `ssd`, `nvme`), null when none.' }),
});
export type StatusOsd = Static<typeof StatusOsdSchema>;

/** The OSDs of one host of the CRUSH tree. */
export const StatusOsdHostSchema = Type.Object({
  host: Type.String({ description: 'The host\'s name in the CRUSH tree.' }),
  server_id: Type.Union([Type.String(), Type.Null()], { description: 'The Carapace server of that name (its FQDN or short name), null when none.' }),
  total: Type.Integer({ minimum: 0, description: 'OSDs of the host.' }),
  up: Type.Integer({ minimum: 0, description: 'Of them, up.' }),
  in: Type.Integer({ minimum: 0, description: 'Of them, in.' }),
  osds: Type.Array(StatusOsdSchema, { description: 'The OSDs, by id. The host `""` holds OSDs of the OSD map that are in no host of the CRUSH tree.' }),
}, { description: 'The OSDs of one host of the CRUSH tree.' });
export type StatusOsdHost = Static<typeof StatusOsdHostSchema>;

/** One pool's use (`ceph df` → `pools`). */
export const StatusPoolSchema = Type.Object({
  id: Type.Integer({ minimum: 0, description: 'The pool\'s id.' }),
  name: Type.String({ description: 'The pool\'s name.' }),
  stored_bytes: Type.Number({ minimum: 0, description: 'Data stored by clients (before replication).' }),
  used_bytes: Type.Number({ minimum: 0, description: 'Raw space used, replicas included.' }),
  max_available_bytes: Type.Number({ minimum: 0, description: 'How much more clients could store in this pool (Ceph\'s `max_avail`).' }),
  objects: Type.Number({ minimum: 0, description: 'Objects in the pool.' }),
  percent_used: Type.Number({ minimum: 0, maximum: 100, description: 'Percent of the pool\'s available space used.' }),
  size: Type.Integer({ minimum: 0, description: 'Replicas of each object (`ceph osd dump` → `size`).' }),
}, { description: 'One pool\'s use.' });
export type StatusPool = Static<typeof StatusPoolSchema>;

/** What Ceph reported, at `collected_at`. */
export const CephReportSchema = Type.Object({
  fsid: Type.String({ description: 'The cluster\'s fsid.' }),
  health: Type.Object(
    { status: CephHealthStatusSchema, checks: Type.Array(HealthCheckSchema, { description: 'The checks, the worst first, then by code.' }) },
    { description: 'Ceph\'s health and its checks.' },
  ),
  monitors: Type.Object({
    total: Type.Integer({ minimum: 0, description: 'Monitors of the monitor map.' }),
    in_quorum: Type.Array(Type.String(), { description: 'Names of the monitors in quorum.' }),
    out_of_quorum: Type.Array(Type.String(), { description: 'Names of the monitors of the map that are not in quorum.' }),
  }, { description: 'The monitors.' }),
  managers: Type.Object({
    active: Type.Union([Type.String(), Type.Null()], { description: 'The active manager, null when none is.' }),
    standbys: Type.Array(Type.String(), { description: 'Names of the standby managers.' }),
  }, { description: 'The managers.' }),
  osds: Type.Object({
    total: Type.Integer({ minimum: 0, description: 'OSDs of the OSD map.' }),
    up: Type.Integer({ minimum: 0, description: 'Of them, up.' }),
    in: Type.Integer({ minimum: 0, description: 'Of them, in.' }),
    by_host: Type.Array(StatusOsdHostSchema, { description: 'The OSDs by host of the CRUSH tree, by host name.' }),
  }, { description: 'The OSDs.' }),
  pgs: Type.Object({
    total: Type.Integer({ minimum: 0, description: 'Placement groups of every pool.' }),
    states: Type.Array(
      Type.Object({
        state: Type.String({ description: 'A combination of PG states, as Ceph writes it (`active+clean`).' }),
        count: Type.Integer({ minimum: 0, description: 'PGs in that state.' }),
      }),
      { description: 'PGs by state, the most first.' },
    ),
  }, { description: 'The placement groups.' }),
  capacity: Type.Object({
    raw_total_bytes: Type.Number({ minimum: 0, description: 'Raw capacity of every OSD (`ceph df` → `total_bytes`).' }),
    raw_used_bytes: Type.Number({ minimum: 0, description: 'Raw space used, replicas and overhead included (`total_used_raw_bytes`).' }),
    raw_available_bytes: Type.Number({ minimum: 0, description: 'Raw space available (`total_avail_bytes`).' }),
    usable_total_bytes: Type.Number({ minimum: 0, description: 'The raw total divided by the largest replica count of the pools (by `osd_pool_default_size`, 3, when there is no pool): what clients could store.' }),
    usable_available_bytes: Type.Number({ minimum: 0, description: 'The raw available space divided by the same replica count.' }),
    pools: Type.Array(StatusPoolSchema, { description: 'Each pool\'s use.' }),
  }, { description: 'Capacity, raw and usable.' }),
  io: Type.Object({
    read_bytes_per_second: Type.Number({ minimum: 0, description: 'Bytes read by clients a second.' }),
    write_bytes_per_second: Type.Number({ minimum: 0, description: 'Bytes written by clients a second.' }),
    read_operations_per_second: Type.Number({ minimum: 0, description: 'Read operations of clients a second.' }),
    write_operations_per_second: Type.Number({ minimum: 0, description: 'Write operations of clients a second.' }),
  }, { description: 'Client IO rates, as `ceph status` reports them.' }),
}, { description: 'What Ceph reported: `ceph status`, `df`, `osd tree`, `osd dump`, `mon dump` and `mgr dump` of one monitor host.' });
export type CephReport = Static<typeof CephReportSchema>;

/** `GET /v1/cluster/{id}/status/`. */
export const ClusterStatusSchema = Type.Object(
  {
    cluster_id: Type.String({ description: 'The cluster\'s id.' }),
    state: Type.Union([Type.Literal('collected'), Type.Literal('unreachable'), Type.Literal('pending'), Type.Literal('not_deployed')], {
      description:
        '`collected`: `ceph` is what the monitors said at `collected_at`. `unreachable`: the last attempts failed (`unreachable` says why and since when; `ceph` stays the last report, if any). `pending`: nothing collected yet. `not_deployed`: the cluster has no monitor.',
    }),
    collected_at: Type.Union([Type.Integer(), Type.Null()], { description: 'When `ceph` was collected, null when never.' }),
    attempted_at: Type.Union([Type.Integer(), Type.Null()], { description: 'When the last attempt ended, successful or not.' }),
    unreachable: Type.Union(
      [
        Type.Object({
          reason: Type.String({ description: 'Why the monitors did not answer, as the runner saw it.' }),
          since: Type.Integer({ description: 'The first failed attempt of this run of failures.' }),
        }),
        Type.Null(),
      ],
      { description: 'Set while the monitors do not answer.' },
    ),
    collection: Type.Union(
      [
        Type.Object({
          runner: Type.String({ description: 'The runner that collected.' }),
          monitor: Type.String({ description: 'The address of the monitor host that answered (or was last tried).' }),
          duration_ms: Type.Integer({ minimum: 0, description: 'The round trip, SSH included.' }),
        }),
        Type.Null(),
      ],
      { description: 'The last attempt: who collected, from which monitor, how long it took; null before any.' },
    ),
    ceph: Type.Union([CephReportSchema, Type.Null()], { description: 'The last report Ceph gave, null when none yet.' }),
  },
  { description: 'The status of a cluster as Ceph reports it.' },
);
export type ClusterStatus = Static<typeof ClusterStatusSchema>;

/** One point of `GET /v1/cluster/{id}/status/history/`: one a minute, and one at each change of health; kept 24 hours. */
export const ClusterStatusPointSchema = Type.Object({
  at: Type.Integer({ description: 'When it was collected.' }),
  health: Type.Union([CephHealthStatusSchema, Type.Literal('UNREACHABLE')], { description: 'Ceph\'s health then, `UNREACHABLE` when the monitors did not answer (the numbers are then the last known).' }),
  raw_total_bytes: Type.Number({ minimum: 0, description: 'Raw capacity.' }),
  raw_used_bytes: Type.Number({ minimum: 0, description: 'Raw space used.' }),
  osds_up: Type.Integer({ minimum: 0, description: 'OSDs up.' }),
  osds_in: Type.Integer({ minimum: 0, description: 'OSDs in.' }),
  osds_total: Type.Integer({ minimum: 0, description: 'OSDs of the OSD map.' }),
}, { description: 'One point of a cluster\'s history.' });
export type ClusterStatusPoint = Static<typeof ClusterStatusPointSchema>;

export const ClusterStatusHistorySchema = Type.Object({
  cluster_id: Type.String({ description: 'The cluster\'s id.' }),
  points: Type.Array(ClusterStatusPointSchema, { description: 'Oldest first.' }),
});
export type ClusterStatusHistory = Static<typeof ClusterStatusHistorySchema>;

/** Query of the history: `hours` back from now (1 to 24, default 24). */
export const ClusterStatusHistoryQuerySchema = Type.Object({
  hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 24, description: 'How many hours back from now (1 to 24, default 24).' })),
});

/** `GET /v1/cluster_status/`: the status of every cluster the caller may view (the dashboard, `carapace cluster status`). */
export const ClusterStatusListSchema = Type.Object({ items: Type.Array(ClusterStatusSchema, { description: 'Every cluster, in the order of their names.' }) });
export type ClusterStatusList = Static<typeof ClusterStatusListSchema>;
