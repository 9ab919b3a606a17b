// upgrade_ceph through the API, checked on the daemons: every daemon on the new release,
// require_osd_release raised, no flag left, every object back, and a client that wrote and
// read all along without one failed operation.
import { expect } from 'vitest';
import { REEF_REPOSITORY } from '../../lab/ceph.js';
import type { LabHost } from '../../lab/lab.js';

import { expectOsds, LAB_HEALTH_CHECKS, waitHealthy, type DeployedCluster } from './deploy.checks.js';
import { why, type CephSystem, type Json, type PlaybookRun } from './system.js';
import { eventually } from '@carapace/test-support/eventually';

/** The pool the client and the objects written before the upgrade live in (size 3, min_size 2). */
export const PROBE_POOL = 'probe';
const OBJECTS = 20;

/**
 * A client of the cluster on a host outside it: writes an object and reads it back every
 * 200 ms, each operation bounded at `opTimeoutS` (rados_osd_op_timeout, rados_mon_op_timeout;
 * 10 s by default, issue 27's client), and logs each one as a JSON line with the
 * objecter_timeout its librados runs with at that moment (the monitors hand it Carapace's
 * setting while OSDs restart: docs/day2/upgrade-and-restart.md, "Clients while OSDs
 * restart"). It runs as a transient systemd unit on the host until /root/probe.stop exists.
 * Its librados keeps Ceph's defaults otherwise and logs at debug_objecter 2 to
 * /root/probe-objecter.log: the lines "tid N on osd.M is laggy" of its own check for late
 * operations, after which it asks the monitors for the newest OSD map and resends (an
 * operation dropped when its PG changes primary, as a restarted OSD returns, is resent only
 * so).
 */
function probeScript(opTimeoutS: number): string {
  return `import json, os, time
import rados
cluster = rados.Rados(conffile="/etc/ceph/ceph.conf", rados_id="admin",
                      conf={"rados_osd_op_timeout": "${opTimeoutS}", "rados_mon_op_timeout": "${opTimeoutS}", "client_mount_timeout": "30",
                            "log_file": "/root/probe-objecter.log", "debug_objecter": "2/2"})
cluster.connect(timeout=10)
io = cluster.open_ioctx("${PROBE_POOL}")
out = open("/root/probe.log", "a", buffering=1)
i = 0
while not os.path.exists("/root/probe.stop"):
    i += 1
    started = time.time()
    payload = b"%d" % i
    try:
        io.write_full("client-probe", payload)
        got = io.read("client-probe")
        ok, err = got == payload, "" if got == payload else "read back %r" % got
    except Exception as e:
        ok, err = False, "%s: %s" % (type(e).__name__, e)
    out.write(json.dumps({"t": started, "ms": (time.time() - started) * 1000, "ok": ok, "err": err,
                          "ot": float(cluster.conf_get("objecter_timeout"))}) + "\\n")
    time.sleep(max(0.0, 0.2 - (time.time() - started)))
`;
}

/** What the client saw. */
export interface ProbeReport {
  operations: number;
  failures: { t: number; err: string }[];
  /** The longest time between the starts of two operations that succeeded, less the 200 ms pace. */
  longestStallMs: number;
  /** The operations that succeeded after more than SLOW_MS: when each began, how long it took. */
  slow: { t: number; ms: number }[];
  /** Its librados' own lines about operations it found late ("is laggy"), with their times. */
  laggy: string[];
  /** The objecter_timeout values its librados ran with, in the order they came (a change recorded once). */
  objecterTimeouts: number[];
}

/** An operation slower than this is reported with what librados said meanwhile. */
const SLOW_MS = 5_000;
/** The longest stall a client may see through an upgrade (bench:ceph's and issue 27's goal). */
export const LONGEST_STALL_MS = 20_000;

/** When each test of a file began (beforeEach), to say in which one a client operation failed. */
export class TestPhases {
  private readonly marks: { name: string; at: number }[] = [];

  mark(name: string): void {
    this.marks.push({ name, at: Date.now() / 1000 });
  }

  /** Each failure the client saw: its time, the test it happened in, the error. */
  failures(report: ProbeReport): string[] {
    return report.failures.map((f) => `${new Date(f.t * 1000).toISOString()} during "${this.marks.filter((m) => m.at <= f.t).at(-1)?.name ?? 'before the tests'}": ${f.err}`);
  }
}

/**
 * What the cluster log said (a monitor's /var/log/ceph/ceph.log, its debug lines left out)
 * from 20 s before to 5 s after each of times (epoch seconds): why a client operation waited.
 */
export async function clusterLogAround(mon: LabHost, times: number[]): Promise<string[]> {
  if (times.length === 0) return [];
  const { stdout } = await mon.exec("grep -v '\\[DBG\\]' /var/log/ceph/ceph.log || true", { timeoutMs: 60_000 });
  return stdout.split('\n').filter((line) => {
    // the indented lines of a health detail (each PG, each OSD) say nothing the headline does not
    if (/ : cluster \[[A-Z]{3}\] {2,}/.test(line)) return false;
    const at = Date.parse(line.slice(0, line.indexOf(' '))) / 1000;
    return Number.isFinite(at) && times.some((t) => at >= t - 20 && at <= t + 5);
  });
}

/** The client of the flow: a host with the cluster's ceph.conf and admin keyring, not a member. */
export class IoProbe {
  constructor(
    private readonly client: LabHost,
    private readonly mon: LabHost,
    /** The bound of each operation, in seconds. */
    private readonly opTimeoutS = 10,
  ) {}

  async start(): Promise<void> {
    for (const file of ['/etc/ceph/ceph.conf', '/etc/ceph/ceph.client.admin.keyring']) {
      const { stdout } = await this.mon.exec(`cat ${file}`);
      await this.client.exec(`umask 077 && cat > ${file}`, { input: stdout });
    }
    await this.client.exec('rm -f /root/probe.log /root/probe.stop /root/probe-objecter.log && cat > /root/probe.py', { input: probeScript(this.opTimeoutS) });
    await this.client.exec('systemd-run --unit=carapace-io-probe --collect python3 /root/probe.py');
    // Running once it has logged a good operation.
    await eventually('the client to write and read', async () => ((await this.report()).operations > 3 ? true : undefined), 60_000);
  }

  /** What the client logged so far (librados' own lines are read once it stopped). */
  async report(): Promise<Omit<ProbeReport, 'laggy'>> {
    const { stdout } = await this.client.exec('cat /root/probe.log 2>/dev/null || true');
    const lines = stdout
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { t: number; ms: number; ok: boolean; err: string; ot: number });
    let longest = 0;
    let lastOk: number | undefined;
    for (const op of lines) {
      if (!op.ok) continue;
      if (lastOk !== undefined) longest = Math.max(longest, (op.t - lastOk) * 1000 - 200);
      longest = Math.max(longest, op.ms);
      lastOk = op.t;
    }
    return {
      operations: lines.length,
      failures: lines.filter((op) => !op.ok).map(({ t, err }) => ({ t, err })),
      longestStallMs: Math.round(longest),
      slow: lines.filter((op) => op.ok && op.ms > SLOW_MS).map(({ t, ms }) => ({ t, ms: Math.round(ms) })),
      objecterTimeouts: lines.map((op) => op.ot).filter((v, i, all) => i === 0 || v !== all[i - 1]),
    };
  }

  /** The objecter_timeout of its last operation (what its librados runs with now). */
  async objecterTimeoutNow(): Promise<number | undefined> {
    const { stdout } = await this.client.exec('tail -n 1 /root/probe.log 2>/dev/null || true');
    const line = stdout.trim();
    return line ? (JSON.parse(line) as { ot: number }).ot : undefined;
  }

  /**
   * Gives the client, through the monitors, the late-operation check Carapace holds while it
   * restarts OSDs (HELD_OPTIONS), for a restart a test makes itself, outside any execution;
   * resolves once the client runs with it. `releaseCheck` removes it again.
   */
  async holdCheck(): Promise<void> {
    await this.mon.exec('ceph config set client objecter_timeout 3 && ceph config set client objecter_tick_interval 1');
    await eventually('the client told to look for late operations after 3 s', async () => ((await this.objecterTimeoutNow()) === 3 ? true : undefined), 60_000);
  }

  async releaseCheck(): Promise<void> {
    await this.mon.exec('ceph config rm client objecter_timeout && ceph config rm client objecter_tick_interval');
    await eventually('the client back on Ceph\'s default', async () => ((await this.objecterTimeoutNow()) === 10 ? true : undefined), 60_000);
  }

  async stop(): Promise<ProbeReport> {
    await this.client.exec('touch /root/probe.stop');
    await eventually(
      'the client to stop',
      async () => ((await this.client.exec('systemctl is-active carapace-io-probe', { check: false })).stdout.trim() === 'active' ? undefined : true),
      60_000,
    );
    const { stdout } = await this.client.exec("grep -h 'is laggy' /root/probe-objecter.log 2>/dev/null || true");
    return { ...(await this.report()), laggy: stdout.split('\n').filter((l) => l.trim() !== '') };
  }
}

/**
 * The verdict on what the client saw through a file's tests: more than 100 operations, every
 * one of them done within its bound (none failed, none read back wrong), and no stall of
 * `longestStallMs` or more. Each slow operation is logged with the test it happened in, the cluster log around it
 * and the late-operation lines its librados wrote (the evidence of a stranded operation).
 */
export async function expectClientNeverInterrupted(
  report: ProbeReport,
  phases: TestPhases,
  mon: LabHost,
  log: (line: string) => void,
  /** The longest stall allowed (an operation past the client's bound fails anyway). */
  longestStallMs = LONGEST_STALL_MS,
): Promise<void> {
  log(`client: ${report.operations} operations, ${report.failures.length} failed, ${report.slow.length} slower than ${SLOW_MS} ms, longest stall ${report.longestStallMs} ms; objecter_timeout ${report.objecterTimeouts.join(' → ')} s`);
  const failures = phases.failures(report);
  const slow = phases.failures({ ...report, failures: report.slow.map(({ t, ms }) => ({ t, err: `took ${ms} ms` })) });
  for (const f of [...failures, ...slow]) log(`client: ${f}`);
  for (const line of report.laggy) log(`client librados: ${line}`);
  const clusterLog = await clusterLogAround(mon, [...report.failures, ...report.slow].map((f) => f.t));
  for (const line of clusterLog) log(`cluster log: ${line}`);
  const context = `; librados said: ${report.laggy.join(' | ') || 'nothing'}; the cluster log then:\n${clusterLog.slice(-40).join('\n')}`;
  expect(report.operations).toBeGreaterThan(100);
  expect(failures, `operations that failed${context}`).toEqual([]);
  expect(report.longestStallMs, `the longest stall (slow operations: ${slow.join('; ')})${context}`).toBeLessThan(longestStallMs);
}

/**
 * The client ran with the late-operation check Carapace holds while OSDs restart under its
 * noout (objecter_timeout 3 s from the monitors' central configuration, HELD_OPTIONS of
 * module_utils/carapace_ceph_cluster.py), handed to it while it ran, and with Ceph's default
 * (10 s) again at the end: the setting reached a running client, and was removed.
 */
export function expectHeldCheckSeen(report: ProbeReport): void {
  expect(report.objecterTimeouts, 'the objecter_timeout values the running client had, in order').toContain(3);
  expect(report.objecterTimeouts[0], 'before the first restart').toBe(10);
  expect(report.objecterTimeouts.at(-1), 'at the end').toBe(10);
}

/** Creates the probe pool and writes OBJECTS objects of known content. */
export async function writeObjects(sys: CephSystem, mon: LabHost): Promise<void> {
  await mon.exec(`ceph osd pool create ${PROBE_POOL} 16 16 replicated && ceph osd pool application enable ${PROBE_POOL} rados`);
  const writes = Array.from({ length: OBJECTS }, (_, i) => `echo object-${i}-content | rados -p ${PROBE_POOL} put object-${i} -`).join(' && ');
  await mon.exec(writes, { timeoutMs: 180_000 });
  const pool = await sys.ceph<Json>(mon, `osd pool get ${PROBE_POOL} all`);
  expect({ size: pool.size, min_size: pool.min_size }).toEqual({ size: 3, min_size: 2 });
}

/** Every object written by writeObjects reads back as written. */
export async function expectObjects(mon: LabHost): Promise<void> {
  const reads = Array.from({ length: OBJECTS }, (_, i) => `rados -p ${PROBE_POOL} get object-${i} - | grep -qx object-${i}-content || echo missing object-${i}`).join('; ');
  const { stdout } = await mon.exec(reads, { timeoutMs: 180_000 });
  expect(stdout.trim(), 'objects that do not read back').toBe('');
}

/**
 * The hints of an upgrade to the lab image's Reef repository: the lab's health checks
 * allowed, and `warnings` besides; `extra` hints after.
 */
export async function reefHints(
  host: LabHost,
  opts: { warnings?: string[]; extra?: { id: string; value: unknown }[] } = {},
): Promise<{ id: string; value: unknown }[]> {
  const key = (await host.exec(`cat ${REEF_REPOSITORY.keyFile}`)).stdout;
  return [
    { id: 'ceph_repository', value: 'repository' },
    { id: 'ceph_repository_url', value: REEF_REPOSITORY.url },
    { id: 'ceph_repository_suite', value: REEF_REPOSITORY.suite },
    { id: 'ceph_repository_key', value: key },
    { id: 'allowed_warnings', value: [...LAB_HEALTH_CHECKS, ...(opts.warnings ?? [])].join(',') },
    ...(opts.extra ?? []),
  ];
}

/** `ceph versions`: {mon: [versions], ...} of the running daemons (the short versions). */
export async function runningVersions(sys: CephSystem, mon: LabHost): Promise<Record<string, string[]>> {
  const versions = await sys.ceph<Record<string, Record<string, number>>>(mon, 'versions');
  const result: Record<string, string[]> = {};
  for (const [kind, counts] of Object.entries(versions)) {
    result[kind] = Object.keys(counts).map((v) => /ceph version (\S+)/.exec(v)?.[1] ?? v);
  }
  return result;
}

/** When each Ceph daemon unit of the hosts last became active (systemd's monotonic clock). */
export async function daemonStarts(hosts: readonly LabHost[]): Promise<Record<string, string>> {
  const starts: Record<string, string> = {};
  for (const host of hosts) {
    const { stdout } = await host.exec(
      "for u in $(systemctl list-units --plain --no-legend --state=active 'ceph-mon@*' 'ceph-mgr@*' 'ceph-osd@*' | awk '{print $1}'); do echo \"$u $(systemctl show -p ActiveEnterTimestampMonotonic --value $u)\"; done",
    );
    for (const line of stdout.trim().split('\n')) {
      const [unit, since] = line.split(' ');
      if (unit && since) starts[`${host.name}/${unit}`] = since;
    }
  }
  return starts;
}

/** No noout flag anywhere: not cluster-wide, not on a host, not on an OSD, no mark of Carapace's. */
export async function expectNoNoout(sys: CephSystem, mon: LabHost): Promise<void> {
  const dump = await sys.ceph<Json>(mon, 'osd dump');
  expect(String(dump.flags ?? '')).not.toMatch(/noout/);
  expect(dump.crush_node_flags ?? {}).toEqual({});
  for (const osd of dump.osds as Json[]) expect(osd.state).not.toContain('noout');
  const marks = await sys.ceph<Json>(mon, 'config-key dump carapace/noout/');
  expect(marks).toEqual({});
  await expectNoHeldOptions(sys, mon);
}

/** None of the options Carapace holds while OSDs restart is left set, nor marked as Carapace's. */
export async function expectNoHeldOptions(sys: CephSystem, mon: LabHost): Promise<void> {
  expect(await sys.ceph<Json>(mon, 'config-key dump carapace/config/')).toEqual({});
  const held = (await sys.ceph<Json[]>(mon, 'config dump')).filter((e) => e.section === 'client' && /^objecter_(timeout|tick_interval)$/.test(String(e.name)));
  expect(held).toEqual([]);
}

/** Runs an upgrade and checks the cluster is all on Reef, healthy, flagless, its data intact. */
export async function upgradeAndCheck(sys: CephSystem, deployed: DeployedCluster, configuration: Json, disksPerHost: number): Promise<PlaybookRun> {
  const run = await sys.execute(configuration, 30 * 60_000);
  expect(run.execution.data.state, why(run)).toBe('completed');
  const monHost = sys.host(deployed.monIds[0] as string);
  const versions = await runningVersions(sys, monHost);
  for (const kind of ['mon', 'mgr', 'osd', 'overall']) {
    expect(versions[kind], `${kind}: ${JSON.stringify(versions)}`).toBeDefined();
    for (const v of versions[kind] ?? []) expect(v, `${kind}: ${JSON.stringify(versions)}`).toMatch(/^18\.2\./);
  }
  expect((await sys.ceph<Json>(monHost, 'osd dump')).require_osd_release).toBe('reef');
  await expectOsds(sys, deployed.monIds[0] as string, deployed.serverIds.length * disksPerHost);
  await waitHealthy(sys, deployed.monIds[0] as string, 'healthy after the upgrade');
  await expectNoNoout(sys, monHost);
  await expectObjects(monHost);
  return run;
}
