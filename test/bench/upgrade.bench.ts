// npm run bench:upgrade — how long a rolling Ceph upgrade takes, and what Carapace adds (issue 27).
//
// Real lab hosts of the Ceph-ready image that discovered themselves, a control plane with its
// embedded runner, everything through the API: cluster_deploy of Debian 12's Ceph 16
// (Pacific) on 3 hosts x 2 disks, then upgrade_ceph to Debian 13's Ceph 18 (Reef) from the
// lab image's repository while a client on a fourth host writes and reads every 200 ms.
//
// The baseline, measured in the same run from the execution's own steps: the time each
// daemon itself needs, the package install of its host (apt, dpkg: the steps "Install Ceph
// ..."; a host already done reports "Ceph ... already installed", which counts as overhead)
// and its stop and start until it is back (in quorum, up). What is left of the upgrade's wall time, divided by the
// daemons restarted, is Carapace's overhead per daemon: pre-flight, the plan, the gates, the
// SSH round trips, the waits' polling. The PGs' recovery after each OSD host (Ceph's own,
// waited for before the next host) is printed apart and not counted as overhead.
// Goals: overhead at most 10 s per daemon; the client's longest stall under 20 s.
//
// Needs root and the lab's packages (scripts/install-system-deps.sh); the first run builds the
// lab images (a few minutes).
import { deployAndCheck } from '../e2e/ceph/deploy.checks.js';
import { CephSystem, type Json } from '../e2e/ceph/system.js';
import { IoProbe, reefHints, upgradeAndCheck, writeObjects } from '../e2e/ceph/upgrade.checks.js';

const DISKS = 2;
const HOSTS = 3;
const DAEMON = /^(mon|mgr|osd)\.(\S+) on (\S+): \S+ → \S+, down (\d+(?:\.\d+)?) s$/;
const s = (v: number) => `${v.toFixed(1)} s`;

async function main(): Promise<void> {
  const sys = await CephSystem.start({ name: 'bench-upgrade', hosts: HOSTS + 1, disks: DISKS });
  try {
    const deployed = await deployAndCheck(
      sys,
      sys.servers.slice(0, HOSTS).map((x) => x.id as string),
      DISKS,
    );
    const mon = sys.host(deployed.monIds[0] as string);
    await writeObjects(sys, mon);
    const client = new IoProbe(sys.lab.hosts[HOSTS] as (typeof sys.lab.hosts)[number], mon);
    await client.start();
    const configuration = await sys.configure('upgrade_ceph', deployed.clusterId, [], await reefHints(mon));
    let run;
    let probe;
    try {
      run = await upgradeAndCheck(sys, deployed, configuration, DISKS);
    } finally {
      probe = await client.stop();
    }
    const steps = [...run.steps].sort((a: Json, b: Json) => Number(a.data.time_started) - Number(b.data.time_started));
    const span = (st: Json) => Number(st.data.time_finished) - Number(st.data.time_started);
    const wall = Number(run.execution.data.time_finished) - Number(run.execution.data.time_started);
    const installs = steps.filter((st: Json) => /^Install Ceph .* on this host/.test(st.data.name) && st.data.result === 'ok');
    const installSeconds = installs.reduce((sum: number, st: Json) => sum + span(st), 0);
    // Daemons restarted together (a host's OSDs) are down at the same time: one span per restart.
    const downs = new Map<string, number>();
    const daemons: { name: string; down: number }[] = [];
    for (const st of steps) {
      const m = DAEMON.exec(st.data.name as string);
      if (!m) continue;
      const down = Number(m[4]);
      daemons.push({ name: `${m[1]}.${m[2]} on ${m[3]}`, down });
      const key = String(st.data.time_started);
      downs.set(key, Math.max(downs.get(key) ?? 0, down));
    }
    const downSeconds = [...downs.values()].reduce((a, b) => a + b, 0);
    const cleanSeconds = steps
      .filter((st: Json) => /^PGs active\+clean again/.test(st.data.name))
      .reduce((sum: number, st: Json) => sum + span(st), 0);
    const overhead = wall - installSeconds - downSeconds - cleanSeconds;
    const perDaemon = overhead / Math.max(1, daemons.length);

    const lines = [
      `upgrade_ceph, Ceph 16.2 (Pacific) → 18.2 (Reef), ${HOSTS} hosts x ${DISKS} OSDs, ${daemons.length} daemons restarted`,
      `  wall time                                    ${s(wall)}  (${s(wall / Math.max(1, daemons.length))} per daemon)`,
      `  baseline: package installs (${installs.length} hosts)             ${s(installSeconds)}`,
      `  baseline: daemons down, stop to back (${downs.size} restarts) ${s(downSeconds)}`,
      `  Ceph's recovery after each OSD host          ${s(cleanSeconds)}`,
      `  Carapace's overhead                          ${s(overhead)}  = ${s(perDaemon)} per daemon (goal ≤ 10 s: ${perDaemon <= 10 ? 'PASS' : 'MISS'})`,
      `  client: ${probe.operations} operations, ${probe.failures.length} failed, longest stall ${(probe.longestStallMs / 1000).toFixed(1)} s (goal < 20 s: ${probe.longestStallMs < 20_000 && probe.failures.length === 0 ? 'PASS' : 'MISS'})`,
      '  each daemon, down:',
      ...daemons.map((d) => `    ${d.name.padEnd(24)} ${s(d.down)}`),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await sys.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
