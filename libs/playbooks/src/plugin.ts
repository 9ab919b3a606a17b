import type { CephOptions, ClusterMember, ServerFacts } from '@carapace/models';
import type { Descriptor } from './descriptors.js';

/** A server as a playbook plugin sees it: the latest stored version. */
export interface PluginServer {
  readonly id: string;
  readonly version: number;
  readonly name: string;
  readonly fqdn: string;
  readonly ip: string;
  readonly username: string;
  readonly state: string;
  readonly cluster_id: string | null;
  /** `{}` until facts were gathered. */
  readonly facts: ServerFacts | Record<string, never>;
}

/** A cluster as a playbook plugin sees it. */
export interface PluginCluster {
  readonly id: string;
  readonly name: string;
  /** Role name (`mons`, `osds`, ...) → members. */
  readonly configuration: Readonly<Record<string, readonly ClusterMember[]>>;
  /** The Ceph options Carapace set (`update_ceph_configuration`): section → name → value; absent or `{}` when none. */
  readonly ceph_options?: Readonly<CephOptions>;
}

/** A hint as given in a playbook configuration request. */
export interface HintValue {
  readonly id: string;
  readonly value: unknown;
}

/** The hints of a configuration after validation, with defaults filled in. */
export type ResolvedHints = Readonly<Record<string, unknown>>;

/** The `configuration` of a playbook configuration: extra vars and an Ansible inventory. */
export interface PlaybookConfiguration {
  /** Passed to ansible-playbook as extra vars. */
  readonly global_vars: Record<string, unknown>;
  /**
   * An Ansible inventory in the JSON form: group name → `{hosts: [ip, ...], vars?}`, plus
   * `_meta.hostvars` keyed by server IP (`ansible_host`, `ansible_user`, ...). Every host is
   * also in the group `all` implicitly.
   */
  readonly inventory: Record<string, unknown>;
}

/**
 * A file a run handed back to the control plane (the runner's artifacts directory, see
 * `RunArtifact` of the runner protocol): a plain file name and its text.
 */
export interface RunArtifact {
  readonly name: string;
  readonly content: string;
}

/** What a successful run changes in the cluster model and in its servers. */
export interface ClusterEffect {
  /** The new `configuration` of the cluster. */
  readonly configuration: Record<string, ClusterMember[]>;
  /** Servers whose `cluster_id` becomes this cluster. */
  readonly join: readonly string[];
  /** Servers whose `cluster_id` becomes null. */
  readonly leave: readonly string[];
  /** Whether the cluster is deleted (purge). */
  readonly deleteCluster: boolean;
  /**
   * The cluster's client files (`GET /v1/cinder_integration/{id}/`), when the run produced
   * them: they replace every file the cluster had. Absent: the files stay as they are.
   */
  readonly files?: readonly RunArtifact[];
  /**
   * Files that replace the cluster's files of the same name, only when the cluster has client
   * files already (the monitor playbooks hand back the client `ceph.conf` naming the monitors
   * as they now are). Absent: the files stay as they are.
   */
  readonly refreshFiles?: readonly RunArtifact[];
  /** The cluster's new `ceph_options` (`update_ceph_configuration`). Absent: they stay as they are. */
  readonly cephOptions?: CephOptions;
  /** New states of servers, by id (`maintenance_enter`, `maintenance_exit`). */
  readonly serverStates?: Readonly<Record<string, string>>;
}

/**
 * A refusal of a request by a plugin; the control plane answers 400 with `name` as the
 * error name (api-v1 §2, e.g. `ServerListIsRequiredForPlaybookError`).
 */
export class PlaybookInputError extends Error {
  constructor(
    readonly errorName: string,
    message: string,
  ) {
    super(message);
    this.name = errorName;
  }
}

/** A playbook plugin (ARCHITECTURE.md "Playbooks"). */
export interface PlaybookPlugin {
  readonly descriptor: Descriptor;
  /**
   * Whether a relaunch of a failed run may run on its failed and unreachable hosts only
   * (Ansible `--limit`; `POST /v1/execution/{id}/relaunch/` with `hosts: "failed"`). False
   * where the playbook cannot safely run on a subset of its hosts: such a relaunch runs the
   * whole playbook again, and its answer says why (`relaunchSubsetReason`).
   */
  readonly relaunchSubset: boolean;
  /** Why a subset is not allowed; required when `relaunchSubset` is false. */
  readonly relaunchSubsetReason?: string;
  /**
   * Inventory groups a relaunch on a subset runs on too (Ansible `--limit` names them beside
   * the failed hosts): the hosts the playbook works through, whose plays only read, wait or
   * are delegated to (the monitors of add_osd: its pre-flight reads their host names, its
   * last play waits there for the new OSDs). Without them those plays would have no host.
   */
  readonly relaunchWith?: readonly string[];
  /**
   * The servers the playbook runs on, given the servers named in the request (possibly
   * none) and all live servers of the cluster. Throws PlaybookInputError when the request
   * breaks the playbook's server rules.
   */
  selectServers(cluster: PluginCluster, requested: readonly PluginServer[], clusterServers: readonly PluginServer[]): PluginServer[];
  /**
   * Builds the configuration; throws PlaybookInputError on missing facts or bad hints.
   *
   * `servers` are those `selectServers` returned. `clusterServers` are all live servers of
   * the cluster, as given to `selectServers`: `add_osd` and `remove_osd` need them (the
   * inventory names the cluster's monitors, with their host variables, so that Ansible can
   * delegate to one) and throw a plain Error without them; the other plugins ignore them.
   */
  buildConfiguration(
    cluster: PluginCluster,
    servers: readonly PluginServer[],
    hints: ResolvedHints,
    clusterServers?: readonly PluginServer[],
  ): PlaybookConfiguration;
  /**
   * What a successful run of this configuration changes. `artifacts` are the files the run
   * handed back (`[]` when none; only `cinder_integration` makes some). A plugin without it
   * changes nothing when its run succeeds (`hello_world`): the control plane then neither
   * reads nor locks the cluster at the run's end, and such runs of one cluster end side by
   * side instead of one at a time.
   */
  onSuccess?(
    cluster: PluginCluster,
    servers: readonly PluginServer[],
    configuration: PlaybookConfiguration,
    artifacts?: readonly RunArtifact[],
  ): ClusterEffect;
}

/** A plugin whose successful runs change the cluster or its servers (every one but `hello_world`). */
export type ChangingPlaybookPlugin = PlaybookPlugin & Required<Pick<PlaybookPlugin, 'onSuccess'>>;
