// npm run bench:ceph — how fast Carapace makes OSDs (issue 9).
//
// Real lab hosts of the Ceph-ready image that discovered themselves, a control plane with its
// embedded runner, everything through the API:
//   - cluster_deploy of 3 hosts x 2 disks (3 monitors, 6 OSDs), then
//   - add_osd of a fourth host with 2 disks,
// each broken down by phase from the execution's steps (pre-flight, packages and ceph.conf,
// monitors, managers, OSDs, health wait: the span of each role's steps), printed as seconds
// per OSD. The anchor is cephadm's published 8–11 s per OSD at scale.
//
// Baseline in the same run: a fifth host of the same image where a shell script makes a
// one-monitor cluster and the same number of OSDs by hand (the commands the playbooks run,
// no Ansible, no SSH, one after the other), timed the same way; the ratio says what the
// automation costs over the bare commands.
//
// Then host maintenance (issue 28): maintenance_enter and maintenance_exit of the fourth host
// (OSDs only), in seconds from started to completed, against the goal of 30 s for both; the
// baseline, in the same run, is the bare commands of a maintenance by hand on the cluster's
// own hosts (ok-to-stop, set-group noout, stop, wait down; start, wait up and every PG
// active+clean, unset-group), timed the same way.
//
// And a failed disk replaced (issue 28): replace_osd of one OSD of the fourth host onto a new
// lab disk, in seconds from started to completed, the backfill (the wait for every PG
// active+clean at the end) printed apart, against the goal of 60 s without it.
//
// And OSDs on a VM host (issue 29: a kernel of its own, under TCG here): add_osd of one
// plain LVM OSD, remove_osd, then add_osd of one encrypted OSD (dmcrypt) on the same host and
// disk, each in seconds from started to completed; the encrypted one reads as a ratio to the
// plain one (`BENCH_VM=0` leaves this part out; where no VM can start it says why).
//
// Needs root and the lab's packages (scripts/install-system-deps.sh); the first run builds the
// lab images (a few minutes).
import { CephSystem, DISK_BYTES, recapTotal, type Json, type PlaybookRun } from '../e2e/ceph/system.js';
import { createLab } from '../lab/lab.js';
import { CEPH_IMAGE, oneMonBootstrapScript } from '../lab/ceph.js';
import { checkVmRequirements } from '../lab/vm.js';

const DISKS = 2;
const PHASES: readonly [string, string][] = [
  ['pre-flight', 'ceph_preflight'],
  ['packages, ceph.conf', 'ceph_common'],
  ['monitors', 'ceph_mon'],
  ['managers', 'ceph_mgr'],
  ['OSDs', 'ceph_osd'],
  ['health wait', 'ceph_health'],
];

const s = (v: number) => `${v.toFixed(1)} s`;

/**
 * Wall seconds of each phase: a run of consecutive steps of one role (first start to last end),
 * labelled by its role; a role that runs again later (the standby managers) is a phase of its
 * own, labelled "(again)".
 */
function phases(run: PlaybookRun): [string, number][] {
  const labels = new Map(PHASES.map(([label, role]) => [role, label]));
  const steps = [...run.steps].sort((x: Json, y: Json) => Number(x.data.time_started) - Number(y.data.time_started));
  const out: { role: string; start: number; end: number }[] = [];
  for (const st of steps) {
    const role = st.data.role as string;
    if (!labels.has(role)) continue;
    const last = out[out.length - 1];
    if (last?.role === role) last.end = Math.max(last.end, Number(st.data.time_finished));
    else out.push({ role, start: Number(st.data.time_started), end: Number(st.data.time_finished) });
  }
  const seen = new Set<string>();
  return out.map(({ role, start, end }) => {
    const label = `${labels.get(role) ?? role}${seen.has(role) ? ' (again)' : ''}`;
    seen.add(role);
    return [label, end - start];
  });
}

function report(title: string, run: PlaybookRun, osds: number): void {
  const state = run.execution.data.state as string;
  if (state !== 'completed') throw new Error(`${title}: ${state}: ${run.execution.data.reason}\n${run.log.slice(-3000)}`);
  const total = Number(run.execution.data.time_finished) - Number(run.execution.data.time_started);
  process.stdout.write(`${title}: ${s(total)} from started to completed (${s(run.seconds)} from POST), ${osds} OSDs: ${(total / osds).toFixed(1)} s/OSD\n`);
  for (const [label, seconds] of phases(run)) process.stdout.write(`  ${label.padEnd(28)} ${s(seconds)}\n`);
  process.stdout.write(`  changed tasks: ${recapTotal(run, 'changed')}\n`);
}

async function byHand(): Promise<{ bootstrap: number; osds: number; total: number }> {
  const lab = await createLab({ name: 'bench-ceph-hand', hosts: [{ disks: Array.from({ length: DISKS }, () => DISK_BYTES) }], image: CEPH_IMAGE });
  try {
    const host = lab.hosts[0];
    if (!host) throw new Error('no host');
    const t0 = Date.now();
    await host.exec(oneMonBootstrapScript(host), { timeoutMs: 300_000 });
    const t1 = Date.now();
    const devices = Array.from({ length: DISKS }, (_, i) => `/dev/vd${String.fromCharCode(98 + i)}`);
    const script = [
      'set -eu',
      ...devices.map((d) => `ceph-volume raw prepare --bluestore --data ${d} --no-tmpfs >/dev/null 2>&1`),
      'for id in $(ceph osd ls); do chown ceph:ceph /var/lib/ceph/osd/ceph-$id/block; chown -h ceph:ceph /var/lib/ceph/osd/ceph-$id/block; systemctl enable --now ceph-osd@$id >/dev/null 2>&1; done',
      `until [ "$(ceph osd stat -f json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["num_up_osds"] == s["num_osds"] == ${DISKS} and s["num_in_osds"] == ${DISKS})')" = True ]; do sleep 1; done`,
      'for id in $(ceph osd ls); do until timeout 10 ceph tell osd.$id version >/dev/null 2>&1; do sleep 1; done; done',
    ].join('\n');
    await host.exec(script, { timeoutMs: 600_000 });
    const t2 = Date.now();
    return { bootstrap: (t1 - t0) / 1000, osds: (t2 - t1) / 1000, total: (t2 - t0) / 1000 };
  } finally {
    await lab.destroy();
  }
}

const runSeconds = (run: PlaybookRun): number => Number(run.execution.data.time_finished) - Number(run.execution.data.time_started);

/** maintenance_enter and maintenance_exit of a host, each started to completed; then the same by hand, through a monitor host. */
async function maintain(sys: CephSystem, clusterId: string, serverId: string, monId: string): Promise<{ enter: number; exit: number; byHand: number }> {
  const enter = await sys.run('maintenance_enter', clusterId, [serverId]);
  report('maintenance_enter 1 host', enter, DISKS);
  const exit = await sys.run('maintenance_exit', clusterId, [serverId]);
  report('maintenance_exit 1 host', exit, DISKS);
  const host = sys.host(serverId);
  const mon = sys.host(monId);
  const ids = (await sys.ceph<number[]>(mon, `osd ls-tree ${host.name}`)).join(' ');
  const osdsUp = (up: number) =>
    `until ceph osd dump -f json | python3 -c 'import json,sys; d=json.load(sys.stdin); ids={${ids.split(' ').join(',')}}; sys.exit(0 if all(o["up"] == ${up} for o in d["osds"] if o["osd"] in ids) else 1)'; do sleep 1; done`;
  const clean = `until ceph pg stat -f json | python3 -c 'import json,sys; d=json.load(sys.stdin); s=d.get("pg_summary", d); sys.exit(0 if sum(x["num"] for x in s["num_pg_by_state"] if x["name"].startswith("active+clean")) == s["num_pgs"] else 1)'; do sleep 1; done`;
  const t0 = Date.now();
  await mon.exec(`set -e; ceph osd ok-to-stop ${ids} >/dev/null; ceph osd set-group noout ${host.name}`, { timeoutMs: 120_000 });
  await host.exec(`systemctl stop ${ids.split(' ').map((i) => `ceph-osd@${i}`).join(' ')}`, { timeoutMs: 120_000 });
  await mon.exec(osdsUp(0), { timeoutMs: 300_000 });
  await host.exec(`systemctl start ${ids.split(' ').map((i) => `ceph-osd@${i}`).join(' ')}`, { timeoutMs: 120_000 });
  await mon.exec(`${osdsUp(1)}; ${clean}; ceph osd unset-group noout ${host.name}`, { timeoutMs: 600_000 });
  return { enter: runSeconds(enter), exit: runSeconds(exit), byHand: (Date.now() - t0) / 1000 };
}

/** replace_osd of the first OSD of a host, after its disk failed (stopped, overwritten), onto a new lab disk. */
async function replace(sys: CephSystem, clusterId: string, serverId: string, monId: string): Promise<{ total: number; backfill: number }> {
  const host = sys.host(serverId);
  const mon = sys.host(monId);
  const id = String((await sys.ceph<number[]>(mon, `osd ls-tree ${host.name}`))[0]);
  const old = (await host.exec(`readlink -f /var/lib/ceph/osd/ceph-${id}/block`)).stdout.trim();
  await host.exec(`systemctl stop ceph-osd@${id} && dd if=/dev/urandom of=${old} bs=1M count=8 conv=fsync status=none`);
  const disk = await host.addDisk(DISK_BYTES);
  const run = await sys.run('replace_osd', clusterId, [serverId], [{ id: 'replacements', value: `${id}:${disk.device}` }]);
  report('replace_osd 1 OSD', run, 1);
  const clean = run.steps.find((st: Json) => /^Every PG active\+clean after /.test(String(st.data.name)));
  const backfill = clean ? Number(clean.data.time_finished) - Number(clean.data.time_started) : 0;
  return { total: runSeconds(run), backfill };
}

/** add_osd of one plain LVM OSD on a VM host, remove_osd, add_osd of one encrypted OSD on the same disk: seconds of each add. */
async function onVm(sys: CephSystem, clusterId: string, serverId: string): Promise<{ lvm: number; dmcrypt: number }> {
  const lvm = await sys.run('add_osd', clusterId, [serverId]);
  report('add_osd 1 LVM OSD on a VM host', lvm, 1);
  const removed = await sys.run('remove_osd', clusterId, [serverId]);
  report('remove_osd 1 LVM OSD on a VM host', removed, 1);
  const dmcrypt = await sys.run('add_osd', clusterId, [serverId], [{ id: 'dmcrypt', value: true }]);
  report('add_osd 1 encrypted OSD on a VM host', dmcrypt, 1);
  return { lvm: runSeconds(lvm), dmcrypt: runSeconds(dmcrypt) };
}

async function main(): Promise<void> {
  const hand = await byHand();
  process.stdout.write(`baseline by hand (one host, ${DISKS} OSDs, shell in the host): mon+mgr ${s(hand.bootstrap)}, OSDs ${s(hand.osds)}: ${(hand.total / DISKS).toFixed(1)} s/OSD\n`);

  const vmMissing = process.env.BENCH_VM === '0' ? ['BENCH_VM=0'] : await checkVmRequirements();
  const vms = vmMissing.length === 0 ? { count: 1, disks: 1 } : undefined;
  const sys = await CephSystem.start({ name: 'bench-ceph', hosts: 4, disks: DISKS, vms, log: () => undefined });
  try {
    const ids = sys.servers.map((x) => x.id as string);
    const clusterId = await sys.createCluster('bench');
    const deploy = await sys.run('cluster_deploy', clusterId, ids.slice(0, 3));
    report('cluster_deploy 3 hosts x 2 disks', deploy, 3 * DISKS);
    const add = await sys.run('add_osd', clusterId, ids.slice(3, 4));
    report('add_osd 1 host x 2 disks', add, DISKS);
    const maintenance = await maintain(sys, clusterId, ids[3] as string, ids[0] as string);
    const replacement = await replace(sys, clusterId, ids[3] as string, ids[0] as string);
    const vm = vms ? await onVm(sys, clusterId, ids[4] as string) : undefined;
    const deployTotal = Number(deploy.execution.data.time_finished) - Number(deploy.execution.data.time_started);
    const addTotal = Number(add.execution.data.time_finished) - Number(add.execution.data.time_started);
    const perOsd = deployTotal / (3 * DISKS);
    process.stdout.write(
      [
        '',
        `cluster_deploy: ${perOsd.toFixed(1)} s/OSD; add_osd: ${(addTotal / DISKS).toFixed(1)} s/OSD; cephadm anchor: 8-11 s/OSD`,
        `ratio to the by-hand baseline (s/OSD, same run): cluster_deploy x${(perOsd / (hand.total / DISKS)).toFixed(2)}, add_osd x${(addTotal / DISKS / (hand.osds / DISKS)).toFixed(2)} (against the OSD part alone)`,
        `replace_osd of one OSD: ${s(replacement.total)}, of which backfill ${s(replacement.backfill)}: ${s(replacement.total - replacement.backfill)} without it (goal < 60 s: ${replacement.total - replacement.backfill < 60 ? 'PASS' : 'MISS'})`,
        `maintenance of one OSD host: enter ${s(maintenance.enter)} + exit ${s(maintenance.exit)} = ${s(maintenance.enter + maintenance.exit)} (goal < 30 s: ${maintenance.enter + maintenance.exit < 30 ? 'PASS' : 'MISS'}); by hand ${s(maintenance.byHand)}: x${((maintenance.enter + maintenance.exit) / maintenance.byHand).toFixed(2)}`,
        vm
          ? `one OSD on a VM host (TCG): encrypted ${s(vm.dmcrypt)}, plain LVM ${s(vm.lvm)}: encryption x${(vm.dmcrypt / vm.lvm).toFixed(2)}`
          : `one OSD on a VM host: not measured (${vmMissing.join('; ')})`,
        '',
      ].join('\n'),
    );
  } finally {
    await sys.stop();
  }
}

await main();
