import type { CephHealthStatus, CephReport, HealthCheck, StatusOsdHost, StatusPool } from '@carapace/models';

/** The JSON text of each `ceph … -f json` command of a collection, as a runner sent it. */
export interface CephOutputs {
  /** `ceph status` */
  readonly status: string;
  /** `ceph df` */
  readonly df: string;
  /** `ceph osd tree` */
  readonly osdTree: string;
  /** `ceph osd dump` */
  readonly osdDump: string;
  /** `ceph mon dump` */
  readonly monDump: string;
  /** `ceph mgr dump`, whole or as the runner reduces it (`active_name`, `available`, `standbys[].name`). */
  readonly mgrDump: string;
}

/** Why outputs are not a report: what Ceph printed is not what Pacific prints. */
export class CephOutputError extends Error {
  override readonly name = 'CephOutputError';
}

/** The replica count assumed when the cluster has no pool (`osd_pool_default_size`). */
const DEFAULT_POOL_SIZE = 3;

/**
 * The playbook that addresses a health check, by Ceph's code (the web UI links the check to
 * it): a down OSD is replaced, a down monitor too, `noout` left behind by maintenance is
 * cleared by ending it, a pool's settings are set again by `add_pool`, a full cluster gets
 * OSDs. Null where no playbook helps.
 */
export function playbookForCheck(code: string, summary: string): string | null {
  switch (code) {
    case 'OSD_DOWN':
    case 'OSD_HOST_DOWN':
    case 'OSD_ROOT_DOWN':
    case 'OSD_CHASSIS_DOWN':
    case 'OSD_RACK_DOWN':
    case 'OSD_ORPHAN':
    case 'BLUESTORE_DISK_SIZE_MISMATCH':
    case 'DEVICE_HEALTH':
    case 'DEVICE_HEALTH_IN_USE':
      return 'replace_osd';
    case 'MON_DOWN':
      return 'replace_mon';
    case 'OSDMAP_FLAGS':
    case 'OSD_FLAGS':
      return /\bnoout\b/.test(summary) ? 'maintenance_exit' : null;
    case 'OSD_NEARFULL':
    case 'OSD_BACKFILLFULL':
    case 'OSD_FULL':
    case 'POOL_NEAR_FULL':
    case 'POOL_FULL':
      return 'add_osd';
    case 'AUTH_INSECURE_GLOBAL_ID_RECLAIM_ALLOWED':
    case 'OSD_NO_SORTBITWISE':
      return 'update_ceph_configuration';
    default:
      return code.startsWith('POOL_') ? 'add_pool' : null;
  }
}

type Json = Record<string, unknown>;

function parse(what: string, text: string): Json {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new CephOutputError(`ceph ${what} did not print JSON: ${JSON.stringify(text.trim().slice(0, 80))}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new CephOutputError(`ceph ${what} did not print a JSON object`);
  return value as Json;
}

function obj(v: unknown): Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
}
function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
}
function int(v: unknown): number {
  return Math.round(num(v));
}
function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function healthStatus(v: unknown): CephHealthStatus {
  if (v === 'HEALTH_OK' || v === 'HEALTH_WARN' || v === 'HEALTH_ERR') return v;
  throw new CephOutputError(`ceph status: health.status is ${JSON.stringify(v)}, not HEALTH_OK, HEALTH_WARN or HEALTH_ERR`);
}

function checks(health: Json): HealthCheck[] {
  const out: HealthCheck[] = [];
  for (const [code, raw] of Object.entries(obj(health.checks))) {
    const c = obj(raw);
    const summary = obj(c.summary);
    const message = str(summary.message);
    out.push({
      code: code.slice(0, 128),
      severity: c.severity === 'HEALTH_ERR' ? 'HEALTH_ERR' : 'HEALTH_WARN',
      summary: message.slice(0, 1024),
      count: int(summary.count),
      muted: c.muted === true,
      playbook: playbookForCheck(code, message),
    });
  }
  // The worst first, then by code: a stable order for the UI and the alerts.
  return out.sort((a, b) => (a.severity === b.severity ? (a.code < b.code ? -1 : a.code > b.code ? 1 : 0) : a.severity === 'HEALTH_ERR' ? -1 : 1));
}

/**
 * What a collection's outputs say, as `CephReport`: a pure function of the six outputs of
 * Ceph 16.2 (Pacific) and of the Carapace servers by host name (FQDN and short name → server
 * id), which names each CRUSH host's server. Throws `CephOutputError` when an output is not
 * JSON, or `ceph status` has no fsid or health (a report that cannot be trusted at all);
 * other missing fields count as zero or none.
 */
export function parseCephReport(outputs: CephOutputs, serverByHost: ReadonlyMap<string, string> = new Map()): CephReport {
  const status = parse('status', outputs.status);
  const df = parse('df', outputs.df);
  const tree = parse('osd tree', outputs.osdTree);
  const dump = parse('osd dump', outputs.osdDump);
  const mon = parse('mon dump', outputs.monDump);
  const mgr = parse('mgr dump', outputs.mgrDump);

  const fsid = str(status.fsid);
  if (!fsid) throw new CephOutputError('ceph status: no fsid');
  const health = obj(status.health);

  // Monitors: the monmap's names; the quorum by name.
  const quorum = arr(status.quorum_names).map(str).filter(Boolean);
  const inQuorum = new Set(quorum);
  const monNames = arr(mon.mons).map((m) => str(obj(m).name)).filter(Boolean);
  const names = monNames.length > 0 ? monNames : quorum;
  const monTotal = Math.max(names.length, int(obj(status.monmap).num_mons));

  // OSDs: up and in from the OSD map; host and device class from the CRUSH tree.
  const state = new Map<number, { up: boolean; in: boolean }>();
  for (const raw of arr(dump.osds)) {
    const o = obj(raw);
    if (typeof o.osd === 'number') state.set(o.osd, { up: o.up === 1 || o.up === true, in: o.in === 1 || o.in === true });
  }
  const nodes = new Map<number, Json>();
  for (const raw of arr(tree.nodes)) {
    const n = obj(raw);
    if (typeof n.id === 'number') nodes.set(n.id, n);
  }
  const placed = new Set<number>();
  const byHost: StatusOsdHost[] = [];
  const osdOf = (id: number) => {
    const node = nodes.get(id) ?? {};
    const s = state.get(id) ?? { up: node.status === 'up', in: num(node.reweight) > 0 };
    const deviceClass = str(node.device_class);
    return { id, up: s.up, in: s.in, device_class: deviceClass || null };
  };
  for (const node of nodes.values()) {
    if (node.type !== 'host') continue;
    const osds = arr(node.children)
      .filter((c): c is number => typeof c === 'number' && c >= 0)
      .sort((a, b) => a - b)
      .map((id) => {
        placed.add(id);
        return osdOf(id);
      });
    const host = str(node.name);
    byHost.push({
      host,
      server_id: serverByHost.get(host) ?? serverByHost.get(host.split('.')[0] ?? host) ?? null,
      total: osds.length,
      up: osds.filter((o) => o.up).length,
      in: osds.filter((o) => o.in).length,
      osds,
    });
  }
  byHost.sort((a, b) => a.host.localeCompare(b.host));
  // OSDs in no host of the tree (`stray`, or created but never placed): listed under no host.
  const unplaced = [...state.keys(), ...arr(tree.stray).map((s) => obj(s).id).filter((id): id is number => typeof id === 'number')]
    .filter((id, i, all) => id >= 0 && !placed.has(id) && all.indexOf(id) === i)
    .sort((a, b) => a - b);
  if (unplaced.length > 0) {
    const osds = unplaced.map(osdOf);
    byHost.push({ host: '', server_id: null, total: osds.length, up: osds.filter((o) => o.up).length, in: osds.filter((o) => o.in).length, osds });
  }
  const osdmap = obj(status.osdmap);
  const allOsds = byHost.flatMap((h) => h.osds);
  const osdTotal = state.size > 0 ? state.size : int(osdmap.num_osds);
  const osdUp = state.size > 0 ? [...state.values()].filter((s) => s.up).length : int(osdmap.num_up_osds);
  const osdIn = state.size > 0 ? [...state.values()].filter((s) => s.in).length : int(osdmap.num_in_osds);

  // PGs.
  const pgmap = obj(status.pgmap);
  const pgStates = arr(pgmap.pgs_by_state)
    .map((s) => ({ state: str(obj(s).state_name), count: int(obj(s).count) }))
    .filter((s) => s.state !== '')
    .sort((a, b) => b.count - a.count || a.state.localeCompare(b.state));

  // Capacity: raw from `ceph df`, pools with their replica count from the OSD map.
  const stats = obj(df.stats);
  const sizeOf = new Map<number, number>();
  for (const raw of arr(dump.pools)) {
    const p = obj(raw);
    if (typeof p.pool === 'number') sizeOf.set(p.pool, int(p.size));
  }
  const pools: StatusPool[] = arr(df.pools).map((raw) => {
    const p = obj(raw);
    const s = obj(p.stats);
    const id = int(p.id);
    return {
      id,
      name: str(p.name),
      stored_bytes: num(s.stored),
      used_bytes: num(s.bytes_used),
      max_available_bytes: num(s.max_avail),
      objects: num(s.objects),
      // Ceph writes a ratio in JSON (the plain format shows percent).
      percent_used: Math.min(100, num(s.percent_used) * 100),
      size: sizeOf.get(id) ?? 0,
    };
  });
  const rawTotal = num(stats.total_bytes);
  const rawUsed = num(stats.total_used_raw_bytes) || num(stats.total_used_bytes);
  const rawAvail = num(stats.total_avail_bytes);
  const replicas = Math.max(1, ...pools.map((p) => p.size), pools.length === 0 ? DEFAULT_POOL_SIZE : 1);

  // Managers.
  const active = str(mgr.active_name);
  const standbys = arr(mgr.standbys)
    .map((s) => str(obj(s).name))
    .filter(Boolean)
    .sort();

  return {
    fsid,
    health: { status: healthStatus(health.status), checks: checks(health) },
    monitors: { total: monTotal, in_quorum: names.filter((n) => inQuorum.has(n)), out_of_quorum: names.filter((n) => !inQuorum.has(n)) },
    managers: { active: active && mgr.available !== false ? active : null, standbys },
    osds: { total: Math.max(osdTotal, allOsds.length), up: osdUp, in: osdIn, by_host: byHost },
    pgs: { total: int(pgmap.num_pgs), states: pgStates },
    capacity: {
      raw_total_bytes: rawTotal,
      raw_used_bytes: rawUsed,
      raw_available_bytes: rawAvail,
      usable_total_bytes: Math.floor(rawTotal / replicas),
      usable_available_bytes: Math.floor(rawAvail / replicas),
      pools,
    },
    io: {
      read_bytes_per_second: num(pgmap.read_bytes_sec),
      write_bytes_per_second: num(pgmap.write_bytes_sec),
      read_operations_per_second: num(pgmap.read_op_per_sec),
      write_operations_per_second: num(pgmap.write_op_per_sec),
    },
  };
}
