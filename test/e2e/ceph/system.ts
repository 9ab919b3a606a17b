// The Ceph end-to-end system: a control plane with its embedded runner (as `npm start`), on
// the lab bridge, and lab hosts of the Ceph-ready image with disks that discovered themselves
// the documented way. Playbooks run only through the public API; what Ceph says is read on
// the hosts themselves.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { getPriority, setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CEPH_IMAGE } from '../../lab/ceph.js';
import { controlPlaneAccess, discoverLab } from '../../lab/discover.js';
import { ensureBridge, LAB_GATEWAY, LAB_RUN_DIR, type Lab, type LabHost } from '../../lab/lab.js';
import { acquireFileLock, type HeldLock } from '../../lab/sys.js';
import { ADMIN_PASSWORD, Api, ControlPlane } from '../system.js';
import { eventually } from '@carapace/test-support/eventually';

export type Json = Record<string, any>;

/** 6 GiB: BlueStore's minimum is far below, and sparse files cost only what is written. */
export const DISK_BYTES = 6 * 1024 ** 3;
/** A VM host's memory: the guest and an OSD or two (BlueStore's cache stays far below osd_memory_target under the tests' light load). */
export const VM_MEMORY_MIB = 3072;

/** One host's line of the PLAY RECAP. */
export interface RecapLine {
  ok: number;
  changed: number;
  unreachable: number;
  failed: number;
  skipped: number;
  rescued: number;
  ignored: number;
}

/** The PLAY RECAP of a log, by inventory host (the server's IP). */
export function parseRecap(log: string): Map<string, RecapLine> {
  const recap = new Map<string, RecapLine>();
  const at = log.lastIndexOf('PLAY RECAP');
  if (at < 0) return recap;
  for (const line of log.slice(at).split('\n').slice(1)) {
    const m = /^(\S+)\s+:\s+(.*)$/.exec(line.trim());
    if (!m) continue;
    const counts: Json = {};
    for (const pair of (m[2] ?? '').split(/\s+/)) {
      const [k, v] = pair.split('=');
      if (k && v !== undefined) counts[k] = Number(v);
    }
    recap.set(m[1] ?? '', counts as RecapLine);
  }
  return recap;
}

/** What a run through the API left: the execution, its log, steps and recap, and its wall time. */
export interface PlaybookRun {
  id: string;
  configurationId: string;
  execution: Json;
  log: string;
  steps: Json[];
  recap: Map<string, RecapLine>;
  seconds: number;
}

/** Sum of a recap column over every host. */
export function recapTotal(run: PlaybookRun, column: keyof RecapLine): number {
  return [...run.recap.values()].reduce((sum, line) => sum + (line[column] ?? 0), 0);
}

export interface CephSystemOptions {
  /** Lab name (distinct per test file). */
  name: string;
  hosts: number;
  /** Disks per host (DISK_BYTES each). */
  disks: number;
  /**
   * Virtual machines (test/lab/README.md, VM hosts) after the containers, for what needs a
   * kernel of its own: LVM and dm-crypt OSDs, reboots. They boot while the containers do.
   */
  vms?: { count: number; disks: number; memoryMiB?: number };
  log?: (line: string) => void;
  /** More of the control plane's environment, and a configuration file (YAML, CARAPACE_CONFIG). */
  controlPlane?: { env?: Record<string, string>; config?: string };
}

/**
 * At most one Ceph system of each kind at a time on this machine: one with containers only,
 * one with VM hosts (whose emulated CPU is the machine's other core). The suite's queue starts
 * one of each side by side (test/sequencer.ts, lanes); these locks make sure two of a kind,
 * or a bench beside a test, never run at once.
 */
const cephSystemLock = (vms: boolean): string => join(LAB_RUN_DIR, vms ? 'ceph-vm-system.lock' : 'ceph-system.lock');
/** Longer than the longest file that holds one (test/sequencer.ts, HEAVY_FILES: the VM file, 26 min in a whole run). */
const CEPH_SYSTEM_LOCK_WAIT_MS = 40 * 60_000;
/**
 * How much more CPU priority a Ceph system of containers takes (nice, inherited by what it
 * starts: the control plane, ansible-playbook, the containers' daemons): the Ceph files are
 * the suite's longest path, their clients time out an operation after 10 s, and the light
 * files beside them have time to spare. A system with VM hosts keeps the priority it has: its
 * emulated CPU (QEMU under TCG, a core at full load while the guest formats LUKS or runs
 * ceph-volume) must not take the CPU from the containers' daemons. At the same priority it
 * did, once: a write of the repair e2e's client timed out at 10 s while nothing of its cluster
 * was stopped yet (the first seconds of maintenance_enter), beside the VM host's encrypted
 * add_osd.
 */
const CEPH_SYSTEM_NICE_BOOST = 5;

/** Raises this process's priority (root only; elsewhere nothing changes); returns how to put it back. */
function boostPriority(): () => void {
  const before = getPriority();
  try {
    setPriority(Math.max(-20, before - CEPH_SYSTEM_NICE_BOOST));
  } catch {
    return () => undefined;
  }
  return () => {
    try {
      setPriority(before);
    } catch {
      // lowering back never fails for root; nothing to do otherwise
    }
  };
}

/** A running control plane and its discovered Ceph-ready hosts. */
export class CephSystem {
  private constructor(
    readonly cp: ControlPlane,
    readonly api: Api,
    readonly lab: Lab,
    /** Server models (from the API, after discovery), in the order of `lab.hosts`. */
    readonly servers: Json[],
    private readonly dir: string,
    private readonly lock: HeldLock,
    private readonly restorePriority: () => void,
  ) {}

  static async start(opts: CephSystemOptions): Promise<CephSystem> {
    const waitStarted = Date.now();
    const lock = await acquireFileLock(cephSystemLock((opts.vms?.count ?? 0) > 0), CEPH_SYSTEM_LOCK_WAIT_MS, `a Ceph system (${opts.name})`);
    const waited = (Date.now() - waitStarted) / 1000;
    if (waited > 1) (opts.log ?? ((l: string) => process.stderr.write(`[ceph-system] ${l}\n`)))(`${opts.name}: waited ${waited.toFixed(0)} s for another Ceph system to end`);
    const restorePriority = (opts.vms?.count ?? 0) > 0 ? () => undefined : boostPriority();
    const dir = mkdtempSync(join(tmpdir(), `carapace-${opts.name}-`));
    let cp: ControlPlane | undefined;
    try {
      await ensureBridge();
      // No CARAPACE_DISCOVERY_TOKEN: the control plane generates one in its data dir, where the lab reads it.
      const env: Record<string, string> = { CARAPACE_DISCOVERY_TOKEN: '', ...opts.controlPlane?.env };
      if (opts.controlPlane?.config !== undefined) {
        env.CARAPACE_CONFIG = join(dir, 'carapace.yaml');
        writeFileSync(env.CARAPACE_CONFIG, opts.controlPlane.config, { mode: 0o600 });
      }
      cp = await ControlPlane.start({ httpHost: LAB_GATEWAY, runner: 'embedded', env });
      const api = new Api(cp.url);
      await api.login();
      const access = await controlPlaneAccess({ dataDir: cp.dataDir, url: cp.url, env: { CARAPACE_ADMIN_PASSWORD: ADMIN_PASSWORD } });
      const discovered = await discoverLab({
        name: opts.name,
        hosts: [
          ...Array.from({ length: opts.hosts }, () => ({ kind: 'container' as const, disks: Array.from({ length: opts.disks }, () => DISK_BYTES) })),
          ...Array.from({ length: opts.vms?.count ?? 0 }, () => ({ kind: 'vm' as const, disks: Array.from({ length: opts.vms?.disks ?? 0 }, () => DISK_BYTES) })),
        ],
        access,
        image: CEPH_IMAGE,
        vm: opts.vms ? { memoryMiB: opts.vms.memoryMiB ?? VM_MEMORY_MIB } : undefined,
        // A VM boots in 1.5 to 3 minutes under TCG, then cloud-init and discovery run in it.
        timeoutMs: opts.vms ? 600_000 : 240_000,
        log: opts.log,
      });
      const servers: Json[] = [];
      for (const h of discovered.hosts) servers.push(await api.ok('GET', `/v1/server/${h.serverId}/`));
      return new CephSystem(cp, api, discovered.lab, servers, dir, lock, restorePriority);
    } catch (err) {
      await cp?.stop().catch(() => undefined);
      cp?.removeData();
      rmSync(dir, { recursive: true, force: true });
      restorePriority();
      await lock.release();
      throw err;
    }
  }

  /** The lab host of a server. */
  host(serverId: string): LabHost {
    const i = this.servers.findIndex((s) => s.id === serverId);
    const host = this.lab.hosts[i];
    if (!host) throw new Error(`no lab host for server ${serverId}`);
    return host;
  }

  /** Creates a cluster; returns its id. */
  async createCluster(name: string): Promise<string> {
    return (await this.api.ok('POST', '/v1/cluster/', { name })).id as string;
  }

  /** The cluster model (latest version). */
  async cluster(id: string): Promise<Json> {
    return this.api.ok('GET', `/v1/cluster/${id}/`);
  }

  /** The server model (latest version). */
  async server(id: string): Promise<Json> {
    return this.api.ok('GET', `/v1/server/${id}/`);
  }

  /** Creates a playbook configuration through the API (400s are thrown with their body). */
  async configure(playbookId: string, clusterId: string, serverIds: string[], hints: { id: string; value: unknown }[] = [], name = playbookId): Promise<Json> {
    return this.api.ok('POST', '/v1/playbook_configuration/', { name, cluster_id: clusterId, playbook_id: playbookId, server_ids: serverIds, hints });
  }

  /** Runs the latest version of a configuration and waits (bounded) for the end of the execution. */
  async execute(configuration: Json, timeoutMs = 15 * 60_000): Promise<PlaybookRun> {
    const started = Date.now();
    const created = await this.api.ok('POST', '/v1/execution/', { playbook_configuration: { id: configuration.id, version: configuration.version } });
    const id = created.id as string;
    const execution = await eventually(
      `execution ${id} (${configuration.data?.playbook_id}) to end`,
      async () => {
        const e = await this.api.ok('GET', `/v1/execution/${id}/`);
        return ['completed', 'failed', 'canceled'].includes(e.data.state) ? e : undefined;
      },
      timeoutMs,
    );
    const seconds = (Date.now() - started) / 1000;
    const log = (await this.api.call('GET', `/v1/execution/${id}/log/`, undefined, true, { accept: 'text/plain' })).text;
    const steps = (await this.api.ok('GET', `/v1/execution/${id}/steps/?all=true`)).items as Json[];
    return { id, configurationId: configuration.id, execution, log, steps, recap: parseRecap(log), seconds };
  }

  /** Configures and runs a playbook. */
  async run(playbookId: string, clusterId: string, serverIds: string[], hints: { id: string; value: unknown }[] = []): Promise<PlaybookRun> {
    return this.execute(await this.configure(playbookId, clusterId, serverIds, hints));
  }

  /** Runs a `ceph` command on a host (as root, its admin keyring) and parses its JSON output. */
  async ceph<T = any>(host: LabHost, args: string): Promise<T> {
    const { stdout } = await host.exec(`timeout 60 ceph --connect-timeout 30 ${args} -f json`, { timeoutMs: 90_000 });
    return JSON.parse(stdout) as T;
  }

  async stop(): Promise<void> {
    await this.cp.stop().catch(() => undefined);
    await this.lab.destroy().catch(() => undefined);
    this.cp.removeData();
    rmSync(this.dir, { recursive: true, force: true });
    this.restorePriority();
    await this.lock.release();
  }
}

/** Where a run's time went: its steps that took half a second or more, one line each. */
export function logSteps(run: PlaybookRun, log: (line: string) => void): void {
  for (const s of run.steps) {
    const took = Number(s.data.time_finished) - Number(s.data.time_started);
    if (took >= 0.5) log(`  ${took.toFixed(1)} s  ${s.data.name}`);
  }
}

/** Explains a failed run: its reason and the end of its log (for assertion messages). */
export function why(run: PlaybookRun): string {
  return `${run.execution.data.state}: ${run.execution.data.reason ?? ''}\n--- end of the log ---\n${run.log.slice(-4000)}`;
}
