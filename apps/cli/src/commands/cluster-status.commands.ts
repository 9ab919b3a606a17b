import { ServiceError } from '@carapace/client';
import type { ClusterStatus } from '@carapace/models';
import type { Command } from 'commander';
import { StatusUnknown, type Cli } from '../context.js';
import { renderTable } from '../table.js';

/**
 * The exit status of `carapace cluster status`, Nagios-style so that monitoring can run it
 * as a check: the worst of the clusters shown decides.
 */
export const STATUS_EXIT = {
  /** Every cluster shown is `HEALTH_OK` (or not deployed: no monitor, nothing to check), or none is shown. */
  ok: 0,
  /** At least one is `HEALTH_WARN`, none worse. */
  warn: 1,
  /** At least one is `HEALTH_ERR`, unreachable (its monitors do not answer) or pending (nothing collected yet). */
  critical: 2,
  /** The status could not be read: the API could not be reached or answered with an error. */
  unknown: 3,
} as const;

/** What one cluster's status counts as for the exit status. */
export function statusExit(status: ClusterStatus): number {
  if (status.state === 'not_deployed') return STATUS_EXIT.ok;
  if (status.state !== 'collected' || status.ceph === null) return STATUS_EXIT.critical;
  const health = status.ceph.health.status;
  return health === 'HEALTH_OK' ? STATUS_EXIT.ok : health === 'HEALTH_WARN' ? STATUS_EXIT.warn : STATUS_EXIT.critical;
}

/** The health column: Ceph's word when collected, else the state. */
export function healthWord(status: ClusterStatus): string {
  if (status.state === 'collected' && status.ceph) return status.ceph.health.status;
  return { unreachable: 'UNREACHABLE', pending: 'PENDING', not_deployed: 'NOT_DEPLOYED', collected: 'PENDING' }[status.state];
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

/** A size in bytes, in binary units with up to one decimal: `1.5 TiB`, `512 B`. */
export function bytes(value: number): string {
  let n = value;
  let unit = 0;
  while (n >= 1024 && unit < UNITS.length - 1) {
    n /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${Math.round(n)} B` : `${n >= 100 ? Math.round(n) : Number(n.toFixed(1))} ${UNITS[unit]}`;
}

/** A percentage of `total` with one decimal (`0.0%` of nothing). */
function percent(part: number, total: number): string {
  return `${total > 0 ? ((part / total) * 100).toFixed(1) : '0.0'}%`;
}

/** A Unix time as `YYYY-MM-DD HH:MM:SS` (UTC), with how long ago it was; empty for none. */
export function when(value: number | null, now = Date.now() / 1000): string {
  if (value === null || value <= 0) return '';
  return `${new Date(value * 1000).toISOString().replace('T', ' ').slice(0, 19)} (${ago(now - value)})`;
}

function ago(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.round(s / 60)}m ago`;
  if (s < 172_800) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86_400)}d ago`;
}

/** One line of the list: a cluster's health at a glance. */
function listRow(status: ClusterStatus, names: ReadonlyMap<string, string>): Record<string, string> {
  const ceph = status.ceph;
  const capacity = ceph?.capacity;
  return {
    cluster: names.get(status.cluster_id) ?? '',
    id: status.cluster_id,
    health: healthWord(status),
    mons: ceph ? `${ceph.monitors.in_quorum.length}/${ceph.monitors.total}` : '',
    'osds up/in/total': ceph ? `${ceph.osds.up}/${ceph.osds.in}/${ceph.osds.total}` : '',
    'raw used': capacity ? `${bytes(capacity.raw_used_bytes)} / ${bytes(capacity.raw_total_bytes)} (${percent(capacity.raw_used_bytes, capacity.raw_total_bytes)})` : '',
    collected: when(status.collected_at),
    problem: status.unreachable ? `unreachable since ${when(status.unreachable.since)}: ${status.unreachable.reason}` : '',
  };
}

/** A titled section of the detail view. */
function section(title: string, body: string): string {
  return `\n${title}\n${'='.repeat(title.length)}\n${body}`;
}

/** The detail view of one cluster: summary, health checks, daemons by host, PGs, capacity and pools, IO. */
export function renderDetail(status: ClusterStatus, name: string, width: number): string {
  const ceph = status.ceph;
  const summary: Record<string, string> = {
    cluster: name,
    id: status.cluster_id,
    state: status.state,
    health: healthWord(status),
    collected: when(status.collected_at),
    attempted: when(status.attempted_at),
  };
  if (status.unreachable) {
    summary.unreachable_since = when(status.unreachable.since);
    summary.unreachable_reason = status.unreachable.reason;
  }
  if (status.collection) {
    summary.runner = status.collection.runner;
    summary.monitor = status.collection.monitor;
    summary.round_trip = `${status.collection.duration_ms} ms`;
  }
  if (ceph) summary.fsid = ceph.fsid;
  let out = renderTable(summary, { width });
  if (!ceph) return out;
  if (status.state !== 'collected') out += `\n(the last report, of ${when(status.collected_at)}: the monitors do not answer now)\n`;

  const checks = ceph.health.checks.map((c) => ({
    code: c.code,
    severity: c.severity,
    summary: c.summary,
    count: String(c.count),
    muted: c.muted ? 'yes' : '',
    playbook: c.playbook ?? '',
  }));
  out += section('Health checks', checks.length ? renderTable(checks, { width }) : '(none)\n');

  const daemons: Record<string, string> = {
    monitors: `${ceph.monitors.in_quorum.length}/${ceph.monitors.total} in quorum${ceph.monitors.in_quorum.length ? `: ${ceph.monitors.in_quorum.join(', ')}` : ''}`,
    out_of_quorum: ceph.monitors.out_of_quorum.join(', '),
    manager_active: ceph.managers.active ?? '(none)',
    manager_standbys: ceph.managers.standbys.join(', '),
    osds: `${ceph.osds.up} up, ${ceph.osds.in} in, ${ceph.osds.total} in all`,
  };
  out += section('Daemons', renderTable(daemons, { width }));
  const hosts = ceph.osds.by_host.map((h) => ({
    host: h.host,
    server: h.server_id ?? '',
    up: String(h.up),
    in: String(h.in),
    total: String(h.total),
    down: h.osds
      .filter((o) => !o.up)
      .map((o) => `osd.${o.id}`)
      .join(','),
    out: h.osds
      .filter((o) => !o.in)
      .map((o) => `osd.${o.id}`)
      .join(','),
  }));
  out += section('OSDs by host', hosts.length ? renderTable(hosts, { width }) : '(none)\n');
  out += section(
    'Placement groups',
    ceph.pgs.states.length ? renderTable(ceph.pgs.states.map((s) => ({ state: s.state, count: String(s.count) })), { width }) + `${ceph.pgs.total} in all\n` : `${ceph.pgs.total} in all\n`,
  );

  const c = ceph.capacity;
  out += section(
    'Capacity',
    renderTable(
      {
        raw: `${bytes(c.raw_used_bytes)} used of ${bytes(c.raw_total_bytes)} (${percent(c.raw_used_bytes, c.raw_total_bytes)}), ${bytes(c.raw_available_bytes)} available`,
        usable: `${bytes(c.usable_available_bytes)} available of ${bytes(c.usable_total_bytes)}`,
      },
      { width },
    ),
  );
  const pools = c.pools.map((p) => ({
    pool: p.name,
    id: String(p.id),
    size: String(p.size),
    stored: bytes(p.stored_bytes),
    used: bytes(p.used_bytes),
    'max avail': bytes(p.max_available_bytes),
    '%used': `${p.percent_used.toFixed(1)}%`,
    objects: String(p.objects),
  }));
  out += section('Pools', pools.length ? renderTable(pools, { width }) : '(none)\n');
  out += section(
    'Client IO',
    renderTable(
      {
        read: `${bytes(ceph.io.read_bytes_per_second)}/s, ${Math.round(ceph.io.read_operations_per_second)} op/s`,
        write: `${bytes(ceph.io.write_bytes_per_second)}/s, ${Math.round(ceph.io.write_operations_per_second)} op/s`,
      },
      { width },
    ),
  );
  return out;
}

/** Whether the command prints the API's JSON: `--json`, or `-o json` given on the command line or in `CARAPACE_OUTPUT`. */
function wantsJson(command: Command, json: boolean | undefined): boolean {
  if (json) return true;
  const source = command.getOptionValueSourceWithGlobals('output');
  return source !== undefined && source !== 'default' && command.optsWithGlobals<{ output?: string }>().output === 'json';
}

/** `carapace cluster status [cluster-id]` (issue 30; a Carapace extension). */
export function clusterStatusCommand(group: Command, cli: Cli): void {
  group
    .command('status')
    .summary('Show the health of every cluster, or the details of one; the exit status says how healthy they are.')
    .description(
      'Show what Ceph says about the clusters (a Carapace extension). Without an id: every cluster you may view, one line each: ' +
        'health, monitors in quorum/total, OSDs up/in/total, raw capacity used, when it was collected and, for an unreachable one, why and since when. ' +
        'With an id: that cluster in detail: its health checks (code, severity, summary, the playbook that addresses it), ' +
        'monitors, managers, OSDs by host, placement groups, capacity and pools, client IO. ' +
        'Prints a table unless --json (or -o json) asks for the API\'s JSON. ' +
        'Exit status (the worst cluster shown decides, as a Nagios check): 0 every cluster HEALTH_OK (clusters without monitors do not count; also when there is none); ' +
        '1 at least one HEALTH_WARN, none worse; 2 at least one HEALTH_ERR, unreachable, or pending (nothing collected yet); ' +
        '3 the status could not be read (the API could not be reached or answered with an error, printed on stderr); 2 also for wrong usage.',
    )
    .argument('[cluster-id]', 'the cluster to show in detail')
    .option('--json', "print the API's JSON (GET /v1/cluster_status/, or GET /v1/cluster/ID/status/ with an id)")
    .action(async (id: string | undefined, options: { json?: boolean }, command: Command) => {
      const json = wantsJson(command, options.json);
      try {
        const client = await cli.client(command);
        if (id !== undefined) {
          const [status, cluster] = await Promise.all([client.getClusterStatus(id), json ? null : client.getCluster(id)]);
          cli.io.stdout.write(json ? `${JSON.stringify(status, null, 2)}\n` : renderDetail(status, cluster?.data.name ?? '', cli.width));
          cli.exitStatus = statusExit(status);
          return;
        }
        const [list, names] = await Promise.all([client.getClusterStatuses(), json ? new Map<string, string>() : clusterNames(cli, command)]);
        cli.io.stdout.write(json ? `${JSON.stringify(list, null, 2)}\n` : renderTable(list.items.map((s) => listRow(s, names)), { width: cli.width }));
        cli.exitStatus = Math.max(STATUS_EXIT.ok, ...list.items.map(statusExit));
      } catch (err) {
        if (err instanceof ServiceError) throw new StatusUnknown(err);
        throw err;
      }
    });
}

async function clusterNames(cli: Cli, command: Command): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  for await (const cluster of (await cli.client(command)).iterClusters()) names.set(cluster.id, cluster.data.name);
  return names;
}
