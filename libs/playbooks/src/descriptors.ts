import type { PlaybookDescriptor, PlaybookPermission } from '@carapace/models';

const dmcrypt = {
  id: 'dmcrypt',
  description: 'Encrypt the data of the OSDs at rest (dm-crypt).',
  type: 'boolean',
  values: [],
  default_value: false,
};

/** The bounded waits of the gates of the rolling playbooks (`upgrade_ceph`, `restart_services`). */
const gateTimeouts = [
  {
    id: 'ok_to_stop_timeout',
    description: 'How long (seconds) to keep asking Ceph whether a daemon may stop while it says no; past it the run fails with its answer.',
    type: 'integer',
    values: [],
    default_value: 300,
  },
  {
    id: 'daemon_timeout',
    description: 'How long (seconds) a restarted daemon may take to be back (in quorum, up).',
    type: 'integer',
    values: [],
    default_value: 600,
  },
  {
    id: 'clean_timeout',
    description: "How long (seconds) to wait after a host's OSDs are back for every PG to be active+clean again.",
    type: 'integer',
    values: [],
    default_value: 900,
  },
];

/** The bounded waits of the monitor playbooks (`add_mon`, `remove_mon`, `replace_mon`). */
const monitorTimeouts = {
  join: {
    id: 'join_timeout',
    description: "How long (seconds) a new monitor may take to sync the cluster's store and join the quorum; past it the run fails and names its state.",
    type: 'integer',
    values: [],
    default_value: 600,
  },
  quorum: {
    id: 'quorum_timeout',
    description: 'How long (seconds) the remaining monitors may take to form their quorum again after a monitor is removed.',
    type: 'integer',
    values: [],
    default_value: 300,
  },
};

/** Descriptor of a playbook, with its id narrowed to the known playbook permissions. */
export interface Descriptor extends PlaybookDescriptor {
  id: PlaybookPermission;
}

/** The descriptors of every playbook Carapace ships, sorted by name. */
export const PLAYBOOK_DESCRIPTORS: readonly Descriptor[] = [
  {
    id: 'add_mon',
    name: 'Add monitor',
    description:
      "Adds monitors to a running cluster, one at a time, on hosts that are not monitors yet: only while every monitor is in quorum and Ceph says the addition cannot break it, the new monitor made from the cluster's own map and key, waited for in quorum, then every host's ceph.conf names the monitors as they are.",
    required_server_list: true,
    hints: [monitorTimeouts.join],
  },
  {
    id: 'add_osd',
    name: 'Add OSD host',
    description: 'Adds new hosts with OSDs to a cluster.',
    required_server_list: true,
    hints: [dmcrypt],
  },
  {
    id: 'cinder_integration',
    name: 'OpenStack integration (Cinder, Glance, Nova)',
    description:
      'Creates the RBD pools volumes, images, vms and backups and the keys client.cinder, client.glance and client.cinder-backup that OpenStack uses, and keeps ceph.conf and the keyrings with the cluster as its Cinder integration files.',
    required_server_list: false,
    hints: [],
  },
  {
    id: 'cluster_deploy',
    name: 'Deploy Ceph cluster',
    description: 'Deploys a new Ceph cluster: monitors, managers and OSDs on the given servers.',
    required_server_list: true,
    hints: [
      dmcrypt,
      {
        id: 'mon_count',
        description: 'How many of the servers become monitors.',
        type: 'integer',
        values: [],
        default_value: 3,
      },
    ],
  },
  {
    id: 'hello_world',
    name: 'Hello world',
    description: 'Installs a tiny service answering {"result": "ok"} on port 8085: checks that hosts can be managed.',
    required_server_list: false,
    hints: [],
  },
  {
    id: 'add_pool',
    name: 'Add or converge pool',
    description:
      'Creates a replicated or erasure-coded pool, or converges an existing one to the hints (never recreated): size and min_size, PG autoscaling, the application, quotas. Refused before anything changes when Ceph could not place its copies (fewer failure domains than copies), when the pool exists with another type, erasure-code profile or failure domain, or when an application other than the one asked is enabled; size is lowered only when allowed. Ends when its PGs are active+clean.',
    required_server_list: false,
    hints: [
      { id: 'name', description: 'The pool name (letters, digits, _, . and -, not starting with . or -).', type: 'string', values: [], default_value: '' },
      { id: 'type', description: 'replicated or erasure (erasure coded, with a profile of k data and m coding chunks).', type: 'string', values: ['replicated', 'erasure'], default_value: 'replicated' },
      { id: 'size', description: "Replicated: the number of copies (2 to 10); 0: Ceph's default when the pool is made, left as it is on an existing pool. Not for erasure coding (its size is k+m).", type: 'integer', values: [], default_value: 0 },
      {
        id: 'min_size',
        description: "The copies (replicated: 1 to size; erasure: k to k+m) that must be up for I/O; 0: Ceph's default for the size. Replicated pools need size with it.",
        type: 'integer',
        values: [],
        default_value: 0,
      },
      { id: 'ec_k', description: 'Erasure coding: data chunks (k, 2 to 16).', type: 'integer', values: [], default_value: 2 },
      { id: 'ec_m', description: 'Erasure coding: coding chunks (m, 1 to 8).', type: 'integer', values: [], default_value: 1 },
      { id: 'ec_profile', description: "Erasure coding: the profile's name; empty: POOL_profile. An existing profile must have the same k, m and failure domain.", type: 'string', values: [], default_value: '' },
      {
        id: 'crush_failure_domain',
        description: 'The CRUSH bucket type that holds at most one copy (or chunk): host, osd, rack, ... An existing pool keeps its own: a different one is refused.',
        type: 'string',
        values: [],
        default_value: 'host',
      },
      { id: 'pg_autoscale_mode', description: "Ceph's PG autoscaler for the pool: on, off or warn.", type: 'string', values: ['on', 'off', 'warn'], default_value: 'on' },
      { id: 'pg_num', description: "The PG count, with pg_autoscale_mode off or warn only (a power of two); 0: Ceph's default, left as it is on an existing pool.", type: 'integer', values: [], default_value: 0 },
      { id: 'target_size_ratio', description: "The autoscaler's expected share of the cluster's capacity (a decimal, e.g. 0.2; 0 removes it); empty: left as it is.", type: 'string', values: [], default_value: '' },
      { id: 'application', description: 'The application enabled on the pool: rbd, cephfs, rgw or another name. One that is already enabled is never replaced.', type: 'string', values: [], default_value: 'rbd' },
      { id: 'quota_max_bytes', description: 'Quota: the most bytes the pool may hold; 0: no quota.', type: 'integer', values: [], default_value: 0 },
      { id: 'quota_max_objects', description: 'Quota: the most objects the pool may hold; 0: no quota.', type: 'integer', values: [], default_value: 0 },
      { id: 'allow_size_decrease', description: 'Allow lowering the size of an existing replicated pool (fewer copies of its data).', type: 'boolean', values: [], default_value: false },
      { id: 'allow_min_size_one', description: 'Allow min_size 1 with 2 or more copies (I/O on a single copy: the last copy lost loses writes).', type: 'boolean', values: [], default_value: false },
      { ...(gateTimeouts[2] as (typeof gateTimeouts)[number]), description: "How long (seconds) to wait at the end for the pool's PGs to be active+clean.", default_value: 600 },
    ],
  },
  {
    id: 'purge_cluster',
    name: 'Purge whole cluster',
    description: 'Removes Ceph from every server of the cluster and deletes the cluster.',
    required_server_list: false,
    hints: [],
  },
  {
    id: 'remove_mon',
    name: 'Remove monitor',
    description:
      "Removes the monitors of the given hosts, one at a time: refuses the last monitor, any removal while another monitor is out of quorum, and any that Ceph says would break the quorum (mon ok-to-rm); the monitor is removed from the map while it runs, then stopped and its store archived; every host's ceph.conf names the monitors as they are.",
    required_server_list: true,
    hints: [monitorTimeouts.quorum],
  },
  {
    id: 'remove_osd',
    name: 'Remove OSD host',
    description: 'Removes hosts with OSDs from a cluster.',
    required_server_list: true,
    hints: [
      {
        id: 'safe_to_destroy_timeout',
        description:
          'How long to wait (seconds) after marking the OSDs out until Ceph says their data is safe elsewhere; past it the run fails and leaves the OSDs in place.',
        type: 'integer',
        values: [],
        default_value: 600,
      },
    ],
  },
  {
    id: 'remove_pool',
    name: 'Remove pool',
    description:
      "Deletes a pool and all its data, once: the hint confirm_name must repeat its name. Refused for Ceph's own pools, the pools of a CephFS, tiers and pools with the nodelete flag, for the OpenStack pools of the cinder integration unless allow_cinder_pools, and for a pool that holds objects unless allow_non_empty. Pool deletion is allowed on the monitors for this deletion only, then set back as it was. A pool that does not exist: nothing to do.",
    required_server_list: false,
    hints: [
      { id: 'name', description: 'The pool to delete.', type: 'string', values: [], default_value: '' },
      { id: 'confirm_name', description: 'The same name again: the deletion cannot be undone.', type: 'string', values: [], default_value: '' },
      { id: 'allow_non_empty', description: 'Delete the pool even if Ceph says it holds objects (they are lost).', type: 'boolean', values: [], default_value: false },
      { id: 'allow_cinder_pools', description: 'Allow deleting a pool of the OpenStack (cinder) integration: volumes, images, vms, backups.', type: 'boolean', values: [], default_value: false },
    ],
  },
  {
    id: 'replace_mon',
    name: 'Replace monitor',
    description:
      'Replaces a monitor by one on another host in one run: two servers, the monitor to replace and the host that replaces it. The new monitor is added and waited for in quorum (as add_mon) before the old one is removed (as remove_mon).',
    required_server_list: true,
    hints: [monitorTimeouts.join, monitorTimeouts.quorum],
  },
  {
    id: 'replace_osd',
    name: 'Replace OSD disk',
    description:
      "Replaces the disks of OSDs of one host, each OSD keeping its id: marked out and stopped only once Ceph says its data is safe elsewhere, destroyed (not purged), then made again on the new device with the same id.",
    required_server_list: true,
    hints: [
      {
        id: 'replacements',
        description: "The OSDs and the device that replaces each, comma-separated 'ID:DEVICE' (e.g. '3:/dev/disk/by-id/wwn-0x5000c500a1b2c3d4'); all on the one server given.",
        type: 'string',
        values: [],
        default_value: '',
      },
      { id: 'wipe_devices', description: 'Wipe a new device that holds something (a file system, a partition table, an OSD of another cluster).', type: 'boolean', values: [], default_value: false },
      { ...dmcrypt, description: 'Encrypt the new OSDs at rest (dm-crypt; needs device-mapper on the host).' },
      {
        id: 'safe_to_destroy_timeout',
        description: 'How long to wait (seconds) after marking the OSDs out until Ceph says their data is safe elsewhere; past it the run fails and marks them in again.',
        type: 'integer',
        values: [],
        default_value: 600,
      },
      gateTimeouts[1] as (typeof gateTimeouts)[number],
      gateTimeouts[2] as (typeof gateTimeouts)[number],
    ],
  },
  {
    id: 'upgrade_ceph',
    name: 'Upgrade Ceph',
    description:
      'Upgrades a running cluster to the Ceph version a package source offers, one daemon at a time: monitors, managers, then OSD hosts, each stopped only once Ceph says it may; a run that stopped midway is finished by running it again.',
    required_server_list: false,
    hints: [
      {
        id: 'ceph_repository',
        description: "Where the new version comes from: 'distribution' (the OS's own package sources) or 'repository' (the apt repository of the hints below).",
        type: 'string',
        values: ['distribution', 'repository'],
        default_value: 'distribution',
      },
      { id: 'ceph_repository_url', description: 'The apt repository (http, https or file URI).', type: 'string', values: [], default_value: '' },
      { id: 'ceph_repository_suite', description: "The repository's suite (e.g. bookworm, reef).", type: 'string', values: [], default_value: '' },
      { id: 'ceph_repository_components', description: "The repository's components.", type: 'string', values: [], default_value: 'main' },
      { id: 'ceph_repository_key', description: "The repository's ASCII-armored signing key (its text).", type: 'string', values: [], default_value: '' },
      {
        id: 'ceph_repository_pin',
        description: "An apt pin of the repository at priority 100 (e.g. 'release o=Ceph'): the hosts take from it only the packages the upgrade installs.",
        type: 'string',
        values: [],
        default_value: '',
      },
      { id: 'target_version', description: 'The Ceph version to upgrade to (e.g. 18.2.7); empty: the highest the source offers.', type: 'string', values: [], default_value: '' },
      {
        id: 'allowed_warnings',
        description: 'Health check codes, comma-separated (e.g. OSD_DOWN,PG_DEGRADED), that do not refuse the upgrade when the cluster is not HEALTH_OK.',
        type: 'string',
        values: [],
        default_value: '',
      },
      ...gateTimeouts,
    ],
  },
  {
    id: 'restart_services',
    name: 'Restart Ceph services',
    description:
      'Restarts the chosen Ceph daemon types one host at a time, each daemon stopped only once Ceph says it may: managers, monitors, then OSD hosts with noout set for that host only.',
    required_server_list: false,
    hints: [
      {
        id: 'services',
        description: 'The daemon types to restart, comma-separated: mgr, mon, osd.',
        type: 'string',
        values: [],
        default_value: 'mgr,mon,osd',
      },
      ...gateTimeouts,
    ],
  },
  {
    id: 'maintenance_enter',
    name: 'Enter maintenance',
    description:
      "Takes hosts down for maintenance without data movement: once Ceph says every daemon of them may stop (ok-to-stop), noout is set for those hosts only and their Ceph daemons are stopped and kept from starting at boot; the servers are then in maintenance, and no other playbook touches them until maintenance_exit.",
    required_server_list: true,
    hints: [...gateTimeouts],
  },
  {
    id: 'maintenance_exit',
    name: 'Exit maintenance',
    description:
      'Brings hosts back from maintenance: their monitors and managers started, then their OSDs, waits until they are up and every PG is active+clean, then unsets the noout flags of those hosts.',
    required_server_list: true,
    hints: [...gateTimeouts],
  },
  {
    id: 'update_ceph_configuration',
    name: 'Update Ceph configuration',
    description:
      "Sets or removes Ceph configuration options on a running cluster: in Ceph's central configuration where the option allows it, in ceph.conf on every host otherwise; daemons that read an option only at start are restarted one at a time, each once Ceph says it may.",
    required_server_list: false,
    hints: [
      {
        id: 'options',
        description: "Options to set, one per line or separated by ';', each 'SECTION NAME VALUE' as for ceph config set (e.g. 'osd osd_max_backfills 2; global mon_allow_pool_delete true').",
        type: 'string',
        values: [],
        default_value: '',
      },
      {
        id: 'remove_options',
        description: "Options to remove, separated by ',', ';' or lines, each 'SECTION NAME' (e.g. 'osd osd_max_backfills').",
        type: 'string',
        values: [],
        default_value: '',
      },
      ...gateTimeouts,
    ],
  },
].sort((a, b) => a.name.localeCompare(b.name)) as Descriptor[];

/** Finds a playbook descriptor by id. */
export function findPlaybook(id: string): Descriptor | undefined {
  return PLAYBOOK_DESCRIPTORS.find((p) => p.id === id);
}
