// Putting a cluster status into a TestControlPlane the way the status branch's own tests do
// (apps/control-plane/test/cluster-status.test.ts): the cluster gets monitors in its
// configuration (as cluster_deploy's effects leave it), the scheduler hands its collection
// to a runner (`take`), and the runner's answer (`complete`) is the Pacific outputs of
// test/fixtures/ceph-pacific or an error. Parsing, storing, history and notifications are
// the control plane's.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterData } from '@carapace/models';
import { schema, VersionedRepository } from '@carapace/control-plane/testing';
import type { TestControlPlane } from '@carapace/test-support/control-plane';

const FIXTURES = join(import.meta.dirname, '../fixtures/ceph-pacific');
/** The runner that collects: it serves every address of TestControlPlane.addServer (10.0.x.y). */
const RUNNERS = [{ name: 'near', labels: { networks: '10.0.0.0/8' } }];

type Outputs = { status: string; df: string; osdTree: string; osdDump: string; monDump: string; mgrDump: string };
type Answer = { ok: true; outputs: Outputs } | { ok: false; error: string };

const read = (kind: string, name: string) => readFileSync(join(FIXTURES, kind, `${name}.json`), 'utf8');

/** The six outputs of a collection, `ceph status` changed by `edit` (a parsed JSON object). */
export function cephOutputs(kind: 'ok' | 'warn', edit: (status: Record<string, unknown>) => Record<string, unknown> = (s) => s): Outputs {
  return {
    status: JSON.stringify(edit(JSON.parse(read(kind, 'status')) as Record<string, unknown>)),
    df: read(kind, 'df'),
    osdTree: read(kind, 'osd_tree'),
    osdDump: read(kind, 'osd_dump'),
    monDump: read(kind, 'mon_dump'),
    mgrDump: read(kind, 'mgr_dump'),
  };
}

const deployedOf = new WeakMap<TestControlPlane, Set<string>>();
const lastAnswers = new WeakMap<TestControlPlane, Map<string, Answer>>();
let nextServer = 500;

/** Gives the cluster two servers as monitors and OSDs in its configuration, once. */
export async function deploy(cp: TestControlPlane, clusterId: string): Promise<void> {
  const done = deployedOf.get(cp) ?? new Set<string>();
  deployedOf.set(cp, done);
  if (done.has(clusterId)) return;
  const ids = [await cp.addServer(nextServer++), await cp.addServer(nextServer++)];
  const { found: servers } = await cp.services.servers.liveMany(ids);
  const members = servers.map((s) => ({ server_id: s.id, version: s.version, fqdn: s.data.fqdn, ip: s.data.ip, server_name: s.data.name }));
  const repo = new VersionedRepository<ClusterData>(cp.db, schema.clusters, { data: ['name', 'configuration'], defaultSort: [['name', 1]] });
  const latest = await repo.get(clusterId);
  if (!latest) throw new Error(`no cluster ${clusterId}`);
  await cp.db.transaction(() => repo.append(latest, { data: { ...latest.data, configuration: { mons: members, osds: members } } }, null, Math.floor(cp.clock.nowMs() / 1000)));
  done.add(clusterId);
}

/**
 * One collection of the cluster answered with `answer`: asked for at once (as after an
 * execution), handed to the runner, answered. Other clusters the scheduler hands out at the
 * same time (their interval passed) get their last answer again.
 */
async function collect(cp: TestControlPlane, clusterId: string, answer: Answer): Promise<void> {
  await deploy(cp, clusterId);
  const answers = lastAnswers.get(cp) ?? new Map<string, Answer>();
  lastAnswers.set(cp, answers);
  answers.set(clusterId, answer);
  const status = cp.services.status;
  await status.executionEnded(clusterId);
  const jobs = await status.take(RUNNERS);
  if (!jobs.some((j) => j.request.clusterId === clusterId)) throw new Error(`the scheduler did not hand out the collection of ${clusterId}`);
  for (const job of jobs) {
    const given = answers.get(job.request.clusterId) ?? { ok: false as const, error: 'no answer prepared' };
    await status.complete(job.runner, { requestId: job.request.requestId, clusterId: job.request.clusterId, monitor: job.request.monitors[0]?.address ?? '', durationMs: 42, ...given });
  }
}

/** A successful collection: the Pacific outputs `kind` (`ok`: HEALTH_OK; `warn`: an OSD and a monitor down), `ceph status` edited by `edit`. */
export async function collectedStatus(cp: TestControlPlane, clusterId: string, kind: 'ok' | 'warn', edit?: (status: Record<string, unknown>) => Record<string, unknown>): Promise<void> {
  await collect(cp, clusterId, { ok: true, outputs: cephOutputs(kind, edit) });
}

/** A failed collection: the monitors did not answer, for `reason`. */
export async function unreachableStatus(cp: TestControlPlane, clusterId: string, reason: string): Promise<void> {
  await collect(cp, clusterId, { ok: false, error: reason });
}
