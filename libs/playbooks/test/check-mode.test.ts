// Check mode (a preview, issue 31) of every module of libs/playbooks/ansible/library/, each
// run on its own by Ansible itself (`ansible localhost -m MODULE --check --diff`) as root on
// this machine, which has no Ceph. The Ceph tools and systemctl are stand-ins
// (fixtures/fake-ceph-cluster.py) that answer the reads a test gives and log every call: a
// module in check mode must ask only those, write no file, report what a real run would
// change (changed, would_change, a diff of each file), say check_mode_unknown where it
// cannot know, and fail exactly as a real run where a gate of Ceph says no.
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ansibleEnv, run, scratchDirs } from './fixtures/ansible.js';

const makeTmp = scratchDirs('carapace-check-mode-');
const FAKE = fileURLToPath(new URL('./fixtures/fake-ceph-cluster.py', import.meta.url));
const FSID = '0b5c2c35-6d3e-4f38-9e0b-1f1f9a6f2a11';
const TOOLS = ['ceph', 'rbd', 'rados', 'ceph-volume', 'ceph-bluestore-tool', 'blkid', 'systemctl', 'ceph-mon', 'ceph-authtool', 'monmaptool', 'apt-get', 'umount', 'dmsetup', 'blockdev'];

type Result = Record<string, any>;
type Answer = { rc?: number; out?: unknown; err?: string };

interface Cluster {
  tmp: string;
  /** Every call the stand-ins received, one line each ("ceph osd dump", "systemctl is-active ..."). */
  calls(): Promise<string[]>;
  /** Runs a module on localhost, in check mode with diffs unless check is false. */
  module(name: string, args: Record<string, unknown>, options?: { check?: boolean; env?: NodeJS.ProcessEnv }): Promise<Result>;
}

/** A scratch dir whose bin/ holds the stand-ins (all but those in without), answering with answers. */
async function cluster(answers: Record<string, Answer>, without: string[] = []): Promise<Cluster> {
  const tmp = await makeTmp();
  const bin = join(tmp, 'bin');
  await mkdir(bin);
  for (const tool of TOOLS.filter((t) => !without.includes(t))) await symlink(FAKE, join(bin, tool));
  const file = join(tmp, 'answers.json');
  await writeFile(file, JSON.stringify(answers));
  return {
    tmp,
    async calls() {
      return existsSync(`${file}.calls`) ? (await readFile(`${file}.calls`, 'utf8')).split('\n').filter(Boolean) : [];
    },
    async module(name, args, options = {}) {
      const env = {
        ...ansibleEnv(tmp),
        ...options.env,
        PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin`,
        FAKE_CEPH_ANSWERS: file,
        ANSIBLE_LOAD_CALLBACK_PLUGINS: '1',
        ANSIBLE_STDOUT_CALLBACK: 'oneline',
        ANSIBLE_PYTHON_INTERPRETER: '/usr/bin/python3',
      };
      const flags = options.check === false ? [] : ['--check', '--diff'];
      // -vvv: the oneline callback keeps the diff of a result only from verbosity 3 on
      const result = await run('ansible', ['localhost', '-i', 'localhost,', '-c', 'local', '-vvv', ...flags, '-m', name, '-a', JSON.stringify(args)], tmp, env);
      const line = /^localhost \| ([A-Z!]+) => (\{.*\})$/m.exec(result.stdout);
      if (line?.[2] === undefined) throw new Error(`no result from ${name}: ${result.stdout}\n${result.stderr}`);
      return { ...(JSON.parse(line[2]) as Result), failed: line[1] === 'FAILED!' };
    },
  };
}

const ok = (out: unknown, rc = 0): Answer => ({ rc, out });
/** The options the cluster runs with while OSDs restart under Carapace's noout (HELD_OPTIONS of module_utils/carapace_ceph_cluster.py). */
const HELD = [
  { who: 'client', name: 'objecter_timeout', value: '3' },
  { who: 'client', name: 'objecter_tick_interval', value: '1' },
];
const markOf = (o: { who: string; name: string }) => `carapace/config/${o.who}/${o.name}`;
const HELD_MARKS = Object.fromEntries(HELD.map((o) => [markOf(o), '1700000000 upgrade to 18.2.7']));
/** The calls that are not reads: what a module in check mode must never make. */
const WRITES = /^(ceph (osd (out|in|down|destroy|purge|set-group|unset-group|require-osd-release|pool (create|rm|set|set-quota|application enable)|crush (rule create|rule rm|reweight|rm)|erasure-code-profile (set|rm))|config-key (set|rm)|config (set|rm)|mgr fail|mon (rm|add)|auth (get-or-create|caps|del))|systemctl (enable|disable|start|stop|restart|mask|unmask|reset-failed|daemon-reload)|ceph-volume (raw prepare|lvm (create|zap))|ceph-authtool|monmaptool|ceph-mon --cluster|rbd pool init|apt-get (install|update)|umount|dmsetup remove)/;

function writesIn(calls: string[]): string[] {
  return calls.filter((c) => WRITES.test(c));
}

/** Whether a path is absent, as it must stay after a check-mode run. */
function absent(path: string): boolean {
  return !existsSync(path);
}

const MON_METADATA = [{ name: 'a', hostname: 'h1', ceph_version_short: '16.2.15' }];
const MGR_METADATA = [{ name: 'a', hostname: 'h1', ceph_version_short: '16.2.15' }, { name: 'b', hostname: 'h2', ceph_version_short: '16.2.15' }];
const OSD_METADATA = [
  { id: 0, hostname: 'h1', ceph_version_short: '16.2.15', osd_objectstore: 'bluestore' },
  { id: 1, hostname: 'h2', ceph_version_short: '16.2.15', osd_objectstore: 'bluestore' },
];
const MGR_DUMP = { active_name: 'a', active_gid: 11, available: true, standbys: [{ name: 'b', gid: 12 }] };
const OSD_DUMP = {
  require_osd_release: 'pacific',
  crush_node_flags: {},
  osds: [
    { osd: 0, up: 1, in: 1, up_from: 5, uuid: '00000000-0000-0000-0000-000000000000' },
    { osd: 1, up: 1, in: 1, up_from: 6, uuid: '00000000-0000-0000-0000-000000000000' },
  ],
  pools: [{ pool_name: 'rbd', size: 2, crush_rule: 0 }],
};
const CRUSH_RULES = [{ rule_id: 0, rule_name: 'replicated_rule', type: 1, steps: [{ op: 'take', item: -1, item_name: 'default' }, { op: 'chooseleaf_firstn', num: 0, type: 'host' }, { op: 'emit' }] }];
/** An OSD tree of hosts h1..hN under default, one OSD each (osd.i on h(i+1)). */
function osdTree(hosts: number) {
  const nodes: Record<string, unknown>[] = [{ id: -1, name: 'default', type: 'root', children: Array.from({ length: hosts }, (_, i) => -2 - i) }];
  for (let i = 0; i < hosts; i++) {
    nodes.push({ id: -2 - i, name: `h${i + 1}`, type: 'host', children: [i] });
    nodes.push({ id: i, name: `osd.${i}`, type: 'osd', status: 'up', reweight: 1 });
  }
  return { nodes };
}
const READS = {
  'ceph mon metadata': ok(MON_METADATA),
  'ceph mgr metadata': ok(MGR_METADATA),
  'ceph osd metadata': ok(OSD_METADATA),
  'ceph mgr dump': ok(MGR_DUMP),
  'ceph osd dump': ok(OSD_DUMP),
  'ceph quorum_status': ok({ quorum_names: ['a'], election_epoch: 4, monmap: { mons: [{ name: 'a', rank: 0, public_addrs: { addrvec: [{ type: 'v2', addr: '10.0.0.11:3300' }] } }] } }),
  'ceph health detail': ok({ status: 'HEALTH_OK', checks: {} }),
  'ceph config-key dump carapace/noout/': ok({}),
  'ceph config-key dump carapace/config/': ok({}),
  'ceph config dump': ok([]),
  'ceph osd crush rule dump': ok(CRUSH_RULES),
  'ceph osd tree': ok(osdTree(2)),
  'ceph pg stat': ok({ pg_summary: { num_pgs: 32, num_pg_by_state: [{ name: 'active+clean', num: 32 }] } }),
};

describe('check mode: files', () => {
  it('carapace_file: reports the file it would write with its diff, writes nothing; the same content is no change', async () => {
    const c = await cluster({});
    const dest = join(c.tmp, 'etc', 'ceph', 'ceph.conf');
    const args = { dest, content: '[global]\nfsid = x\n', mode: '0644', owner: 'root', group: 'root' };
    const preview = await c.module('carapace_file', args);
    expect(preview.failed, JSON.stringify(preview)).toBe(false);
    expect(preview.changed).toBe(true);
    expect(preview.diff).toEqual([{ before: '', after: '[global]\nfsid = x\n', before_header: dest, after_header: dest }]);
    expect(preview.would_change).toEqual([`create directory ${join(c.tmp, 'etc', 'ceph')}`, `create ${dest} (mode 0644, root:root)`]);
    expect(absent(join(c.tmp, 'etc'))).toBe(true);

    expect((await c.module('carapace_file', args, { check: false })).changed).toBe(true);
    const same = await c.module('carapace_file', args);
    expect(same.changed).toBe(false);
    expect(same.diff).toBeUndefined();

    const other = await c.module('carapace_file', { ...args, content: '[global]\nfsid = y\n', mode: '0640' });
    expect(other.changed).toBe(true);
    expect(other.diff).toEqual([{ before: '[global]\nfsid = x\n', after: '[global]\nfsid = y\n', before_header: dest, after_header: dest }]);
    expect(await readFile(dest, 'utf8')).toBe('[global]\nfsid = x\n');
    expect((await stat(dest)).mode & 0o7777).toBe(0o644);

    const mode = await c.module('carapace_file', { ...args, mode: '0600' });
    expect(mode.changed).toBe(true);
    expect(mode.diff).toEqual([{ before: { path: dest, mode: '0644', owner: 'root:root' }, after: { path: dest, mode: '0600', owner: 'root:root' }, before_header: dest, after_header: dest }]);
    expect((await stat(dest)).mode & 0o7777).toBe(0o644);
  }, 120_000);

  it('carapace_ceph_conf: the options it would set and remove, with the diff of the file, which stays as it is', async () => {
    const c = await cluster({});
    const path = join(c.tmp, 'ceph.conf');
    const conf = '[global]\nfsid = x\nosd pool default size = 3\n\n[client]\nrbd cache = true\n';
    await writeFile(path, conf);
    const args = { path, set: [{ section: 'global', name: 'osd_pool_default_size', value: '2' }], remove: [{ section: 'client', name: 'rbd_cache' }] };
    const preview = await c.module('carapace_ceph_conf', args);
    expect(preview.changed, JSON.stringify(preview)).toBe(true);
    expect(preview.changes).toEqual(['global osd_pool_default_size = 2', 'client rbd_cache removed']);
    expect(preview.diff.before).toBe(conf);
    expect(preview.diff.after).toBe('[global]\nfsid = x\nosd_pool_default_size = 2\n\n[client]\n');
    expect(await readFile(path, 'utf8')).toBe(conf);
    expect((await c.module('carapace_ceph_conf', { path, set: [{ section: 'global', name: 'fsid', value: 'x' }] })).changed).toBe(false);
  }, 120_000);
});

describe('check mode: what only reads', () => {
  it('carapace_step: reports its steps, and check_mode_unknown only in check mode', async () => {
    const c = await cluster({});
    const preview = await c.module('carapace_step', { names: ['the OSDs on /dev/vdb'], unknown: 'not made in check mode' });
    expect(preview.changed).toBe(false);
    expect(preview.check_mode_unknown).toBe('not made in check mode');
    expect(preview.carapace_steps.map((s: Result) => s.name)).toEqual(['the OSDs on /dev/vdb']);
    const real = await c.module('carapace_step', { names: ['x'], unknown: 'not made in check mode' }, { check: false });
    expect(real.check_mode_unknown).toBeUndefined();
  }, 120_000);

  it('carapace_ceph_host: the same checks and facts in check mode, changing nothing', async () => {
    const c = await cluster({});
    const preview = await c.module('carapace_ceph_host', { daemon_address: '10.0.0.11', packages: ['coreutils', 'ceph-mon'] });
    expect(preview.failed, JSON.stringify(preview)).toBe(false);
    expect(preview.changed).toBe(false);
    expect(preview.packages_missing).toEqual(['ceph-mon']);
    const refused = await c.module('carapace_ceph_host', { osd_devices: ['/dev/null'] });
    expect(refused.failed).toBe(true);
    expect(refused.msg).toContain('not block devices: /dev/null');
  }, 120_000);

  it('carapace_ceph_daemons and carapace_ceph_upgrade_check: the plan, read for real', async () => {
    const c = await cluster(READS);
    const plan = await c.module('carapace_ceph_daemons', { types: ['osd'], hosts: ['h1', 'h2'] });
    expect(plan.failed, JSON.stringify(plan)).toBe(false);
    expect(plan.changed).toBe(false);
    expect(plan.daemons.filter((d: Result) => d.restart).map((d: Result) => `${d.type}.${d.id}`)).toEqual(['osd.0', 'osd.1']);
    const elsewhere = await c.module('carapace_ceph_daemons', { types: ['osd'], hosts: ['h1'] });
    expect(elsewhere.failed).toBe(true);
    expect(elsewhere.msg).toContain('osd.1 on h2');

    const check = await c.module('carapace_ceph_upgrade_check', {
      offered: { h1: { candidate: '17.2.7-1', candidate_upstream: '17.2.7' }, h2: { candidate: '17.2.7-1', candidate_upstream: '17.2.7' } },
      hosts: ['h1', 'h2'],
    });
    expect(check.failed, JSON.stringify(check)).toBe(false);
    expect(check.changed).toBe(false);
    expect(check.release).toBe('quincy');
    const downgrade = await c.module('carapace_ceph_upgrade_check', { offered: { h1: { candidate: '15.2.1-1', candidate_upstream: '15.2.1' } }, hosts: ['h1', 'h2'] });
    expect(downgrade.failed).toBe(true);
    expect(downgrade.msg).toContain('upgrade refused before anything changed');
    expect(writesIn(await c.calls())).toEqual([]);
  }, 120_000);
});

describe('check mode: the gates are asked, and a no fails as in a real run', () => {
  const REFUSED = { ...READS, 'ceph mon ok-to-stop a': { rc: 16, err: 'Error EBUSY: not enough monitors would be available (b) after stopping mons [a]' } };

  it('carapace_ceph_gate type=mon: the refusal, with the same message as a real run', async () => {
    const c = await cluster(REFUSED);
    const args = { type: 'mon', ids: ['a'], timeout: 0 };
    const preview = await c.module('carapace_ceph_gate', args);
    const real = await c.module('carapace_ceph_gate', args, { check: false });
    expect(preview.failed).toBe(true);
    expect(preview.msg).toBe('Ceph says mon mon.a may not stop (asked for 0 s): Error EBUSY: not enough monitors would be available (b) after stopping mons [a]');
    expect(preview.msg).toBe(real.msg);
    expect(writesIn(await c.calls())).toEqual([]);
  }, 120_000);

  it('carapace_ceph_gate type=osd: a yes, and the noout flag it would set without setting it', async () => {
    const c = await cluster({ ...READS, 'ceph osd ok-to-stop 0': ok({ ok_to_stop: true, num_ok_pgs: 32, num_not_ok_pgs: 0 }) });
    const preview = await c.module('carapace_ceph_gate', { type: 'osd', ids: ['0'], host_bucket: 'h1', timeout: 0 });
    expect(preview.failed, JSON.stringify(preview)).toBe(false);
    expect(preview.changed).toBe(true);
    expect(preview.noout_set).toBe(true);
    expect(preview.answer).toBe('ok_to_stop=True, 32 PGs fine, 0 PGs not');
    expect(preview.would_change).toEqual([
      ...HELD.map((o) => `set ${o.who} ${o.name}=${o.value} in the central configuration while OSDs restart (marked as Carapace's)`),
      "set noout on the CRUSH bucket h1 only (marked as Carapace's)",
    ]);
    expect(preview.before).toEqual({ 0: 5 });
    expect(writesIn(await c.calls())).toEqual([]);
  }, 120_000);

  it('carapace_ceph_gate type=mgr: the hand-over it would make, not made', async () => {
    const c = await cluster(READS);
    const preview = await c.module('carapace_ceph_gate', { type: 'mgr', ids: ['a'] });
    expect(preview.changed, JSON.stringify(preview)).toBe(true);
    expect(preview.would_change).toEqual(['hand the active manager mgr.a over to a standby (ceph mgr fail)']);
    expect(writesIn(await c.calls())).toEqual([]);
  }, 120_000);

  it('carapace_ceph_gate type=destroy: refused when the rest could not hold the data, unknown when it could, yes when Ceph says so', async () => {
    const notSafe = { rc: 16, err: 'Error EBUSY: OSD(s) 1 have 32 pgs currently mapped to them.' };
    const two = await cluster({ ...READS, 'ceph osd safe-to-destroy 1': notSafe });
    const refused = await two.module('carapace_ceph_gate', { type: 'destroy', ids: ['1'], timeout: 0 });
    expect(refused.failed).toBe(true);
    expect(refused.msg).toBe(
      'Ceph would not say osd.1 may be destroyed: their data has nowhere else to go: pool rbd keeps 2 copies, one per host, and without them 1 host with up and in OSDs would be left (h1) (Ceph says now: Error EBUSY: OSD(s) 1 have 32 pgs currently mapped to them.)',
    );
    expect(writesIn(await two.calls())).toEqual([]);

    const dump = { ...OSD_DUMP, osds: [...OSD_DUMP.osds, { osd: 2, up: 1, in: 1, up_from: 7 }] };
    const three = await cluster({ ...READS, 'ceph osd dump': ok(dump), 'ceph osd tree': ok(osdTree(3)), 'ceph osd safe-to-destroy 1': notSafe });
    const unknown = await three.module('carapace_ceph_gate', { type: 'destroy', ids: ['1'], timeout: 600 });
    expect(unknown.failed, JSON.stringify(unknown)).toBe(false);
    expect(unknown.changed).toBe(false);
    expect(unknown.check_mode_unknown).toContain('Ceph says now that osd.1 may not be destroyed (Error EBUSY: OSD(s) 1 have 32 pgs currently mapped to them.)');
    expect(unknown.check_mode_unknown).toContain('waits up to 600 s');

    // A pool pinned to one host (its rule takes that host, one copy per OSD): the other hosts
    // do not count, however many OSDs they have (the Ceph e2e's pool of size 1).
    const pinnedRules = [...CRUSH_RULES, { rule_id: 1, rule_name: 'only-h2', type: 1, steps: [{ op: 'take', item: -3, item_name: 'h2' }, { op: 'choose_firstn', num: 0, type: 'osd' }, { op: 'emit' }] }];
    const pinnedDump = { ...dump, pools: [{ pool_name: 'rbd', size: 2, crush_rule: 0 }, { pool_name: 'pinned', size: 1, crush_rule: 1 }] };
    const pinned = await cluster({ ...READS, 'ceph osd dump': ok(pinnedDump), 'ceph osd tree': ok(osdTree(3)), 'ceph osd crush rule dump': ok(pinnedRules), 'ceph osd safe-to-destroy 1': notSafe });
    const pinnedRefused = await pinned.module('carapace_ceph_gate', { type: 'destroy', ids: ['1'], timeout: 0 });
    expect(pinnedRefused.failed, JSON.stringify(pinnedRefused)).toBe(true);
    expect(pinnedRefused.msg).toContain('their data has nowhere else to go: pool pinned keeps 1 copy, one per osd, and without them 0 up and in OSDs would be left');
    expect(pinnedRefused.msg).not.toContain('pool rbd');

    const safe = await cluster({ ...READS, 'ceph osd safe-to-destroy 1': ok({ safe_to_destroy: [1], active: [], missing_stats: [], stored_pgs: [] }) });
    const yes = await safe.module('carapace_ceph_gate', { type: 'destroy', ids: ['1'] });
    expect(yes.failed, JSON.stringify(yes)).toBe(false);
    expect(yes.check_mode_unknown).toBeUndefined();
    expect(yes.answer).toBe("safe_to_destroy=['1']");
  }, 120_000);

  it('carapace_ceph_maintenance mode=gate: a refusal fails as in a real run; a yes reports the flags and records it would make', async () => {
    const reads = {
      ...READS,
      'ceph osd ls-tree h1': ok([0]),
      'ceph config-key dump carapace/maintenance/': ok({}),
      'ceph mon ok-to-stop a': { rc: 16, err: 'Error EBUSY: not enough monitors would be available' },
    };
    const c = await cluster(reads);
    const args = { mode: 'gate', hosts: ['h1'], ok_to_stop_timeout: 0 };
    const refused = await c.module('carapace_ceph_maintenance', args);
    const real = await c.module('carapace_ceph_maintenance', args, { check: false });
    expect(refused.failed).toBe(true);
    expect(refused.msg).toBe('Ceph says mon mon.a may not stop (asked for 0 s): Error EBUSY: not enough monitors would be available');
    expect(refused.msg).toBe(real.msg);

    const yes = await cluster({ ...reads, 'ceph mon ok-to-stop a': ok(''), 'ceph osd ok-to-stop 0': ok({ ok_to_stop: true, num_ok_pgs: 32, num_not_ok_pgs: 0 }) });
    const preview = await yes.module('carapace_ceph_maintenance', { mode: 'gate', hosts: ['h1'] });
    expect(preview.failed, JSON.stringify(preview)).toBe(false);
    expect(preview.changed).toBe(true);
    expect(preview.daemons).toEqual({ h1: { mon: ['a'], mgr: ['a'], osd: ['0'] } });
    expect(preview.carapace_steps.map((s: Result) => s.name)).toEqual([
      'Ceph says mon.a may stop: ok',
      'Ceph says osd.0 may stop: ok_to_stop=True, 32 PGs fine, 0 PGs not',
      'mgr.a would hand over to a manager on another host (b)',
      'noout would be set on h1 only',
      `clients would be told to look for late operations sooner until the exit: ${HELD.map((o) => `${o.who} ${o.name}=${o.value}`).join(', ')}`,
      'the maintenance of h1 would be recorded (config-key carapace/maintenance/h1)',
    ]);
    expect(writesIn(await yes.calls())).toEqual([]);

    const record = join(yes.tmp, 'maintenance.json');
    const stop = await yes.module('carapace_ceph_maintenance', { mode: 'stop', daemons: { osd: ['0'] }, kinds: ['osd'], record });
    expect(stop.changed, JSON.stringify(stop)).toBe(true);
    expect(stop.carapace_steps[0].name).toBe('ceph-osd@0.service would be stopped and masked');
    const down = await yes.module('carapace_ceph_maintenance', { mode: 'down', daemons: { osd: ['0'] } });
    expect(down.check_mode_unknown).toBe('nothing is stopped in check mode: whether osd.0 go down (and the quorum holds) is known only after a real run');
    expect(absent(record)).toBe(true);
    expect(writesIn(await yes.calls())).toEqual([]);
  }, 180_000);

  it('carapace_ceph_maintenance mode=down, for real: waits until every PG is active again without the stopped OSDs before the monitors may stop', async () => {
    const downDump = { ...OSD_DUMP, osds: [{ ...OSD_DUMP.osds[0], up: 0 }, OSD_DUMP.osds[1]] };
    const repeered = await cluster({
      ...READS,
      'ceph osd dump': ok(downDump),
      'ceph pg dump pgs_brief': ok({ pg_stats: [{ pgid: '1.0', state: 'active+undersized+degraded', acting: [1] }, { pgid: '1.1', state: 'active+undersized+degraded', acting: [1] }] }),
    });
    const done = await repeered.module('carapace_ceph_maintenance', { mode: 'down', daemons: { osd: ['0'] }, daemon_timeout: 5 }, { check: false });
    expect(done.failed, JSON.stringify(done)).toBe(false);
    expect(done.carapace_steps.map((s: Result) => s.name)).toEqual(['osd.0 down (noout: not marked out, no data moves)', 'Every PG active again without them: all 2 PGs active without osd.0']);

    // the managers' statistics still name osd.0 in an acting set, and one PG peers: not yet, and after the bound a refusal saying which
    const stale = await cluster({
      ...READS,
      'ceph osd dump': ok(downDump),
      'ceph pg dump pgs_brief': ok({ pg_stats: [{ pgid: '1.0', state: 'active+clean', acting: [0, 1] }, { pgid: '1.1', state: 'peering', acting: [1] }] }),
    });
    const refused = await stale.module('carapace_ceph_maintenance', { mode: 'down', daemons: { osd: ['0'] }, daemon_timeout: 2 }, { check: false });
    expect(refused.failed).toBe(true);
    expect(refused.msg).toBe('the PGs did not all become active again without osd.0: 2 of 2 PGs not active again yet: 1.0 acting [0, 1], 1.1 peering');
  }, 180_000);

  it('carapace_ceph_mons: a refused removal fails; a removal and a retirement are reported, not made; joined is unknown for a monitor not there', async () => {
    const c = await cluster(READS);
    const last = await c.module('carapace_ceph_mons', { mode: 'gate_remove', name: 'a', address: '10.0.0.11' });
    expect(last.failed).toBe(true);
    expect(last.msg).toBe('mon.a is the last monitor of the cluster: a cluster cannot live without one');
    const remove = await c.module('carapace_ceph_mons', { mode: 'remove', name: 'a' });
    expect(remove.failed, JSON.stringify(remove)).toBe(false);
    expect(remove.changed).toBe(true);
    expect(remove.would_change).toEqual(['ceph mon rm a, then wait for the quorum of the others']);
    const joined = await c.module('carapace_ceph_mons', { mode: 'joined', name: 'b' });
    expect(joined.failed, JSON.stringify(joined)).toBe(false);
    expect(joined.check_mode_unknown).toContain('mon.b is not made or started in check mode');
    const here = await c.module('carapace_ceph_mons', { mode: 'joined', name: 'a' });
    expect(here.check_mode_unknown).toBeUndefined();
    expect(writesIn(await c.calls())).toEqual([]);
  }, 120_000);
});

describe('check mode: changes reported, not made', () => {
  const SYSTEMD_OFF = (units: string[]): Record<string, Answer> => ({
    [`systemctl is-enabled ${units.join(' ')}`]: { rc: 1, out: units.map(() => 'disabled').join('\n') },
    [`systemctl is-active ${units.join(' ')}`]: { rc: 3, out: units.map(() => 'inactive').join('\n') },
  });

  it('carapace_ceph_mgr and carapace_ceph_mon: the directories, keyrings (never their keys) and units they would make', async () => {
    const mgrUnits = ['ceph-mgr.target', 'ceph-mgr@x.service'];
    const monUnits = ['ceph-mon.target', 'ceph-mon@x.service'];
    const c = await cluster({ ...SYSTEMD_OFF(mgrUnits), ...SYSTEMD_OFF(monUnits) });
    const mgr = await c.module('carapace_ceph_mgr', { name: 'x', keyring: '[mgr.x]\n\tkey = MGRSECRETKEY==\n' });
    expect(mgr.failed, JSON.stringify(mgr)).toBe(false);
    expect(mgr.changed).toBe(true);
    expect(mgr.would_change).toEqual([
      'create directory /var/lib/ceph/mgr/ceph-x (mode 0750, ceph:ceph)',
      'create /var/lib/ceph/mgr/ceph-x/keyring (mode 0600, ceph:ceph)',
      'enable ceph-mgr.target ceph-mgr@x.service',
      'start ceph-mgr.target ceph-mgr@x.service',
    ]);
    expect(mgr.diff[1]).toEqual({ before: '', after: '(a secret of 30 bytes: not shown)\n', before_header: '/var/lib/ceph/mgr/ceph-x/keyring', after_header: '/var/lib/ceph/mgr/ceph-x/keyring' });
    expect(JSON.stringify(mgr)).not.toContain('MGRSECRETKEY');

    const mon = await c.module('carapace_ceph_mon', { name: 'x', fsid: FSID, admin_keyring: '[client.admin]\n\tkey = ADMINSECRET==\n', mon_keyring: '[mon.]\n\tkey = MONSECRET==\n', monmap: 'AAAA' });
    expect(mon.failed, JSON.stringify(mon)).toBe(false);
    expect(mon.changed).toBe(true);
    expect(mon.would_change).toEqual([
      'create directory /etc/ceph (mode 0755, root:root)',
      'create /etc/ceph/ceph.client.admin.keyring (mode 0600, root:root)',
      'make the store of mon.x (ceph-mon --mkfs) in /var/lib/ceph/mon/ceph-x',
      'enable ceph-mon.target ceph-mon@x.service',
      'start ceph-mon.target ceph-mon@x.service',
    ]);
    expect(JSON.stringify(mon)).not.toMatch(/ADMINSECRET|MONSECRET/);
    expect(absent('/var/lib/ceph')).toBe(true);
    expect(absent('/etc/ceph')).toBe(true);
    expect(writesIn(await c.calls())).toEqual([]);
  }, 120_000);

  it('carapace_ceph_keys: the keys and the monitor map it would generate, none generated', async () => {
    const c = await cluster({});
    const keys = await c.module('carapace_ceph_keys', { fsid: FSID, mon_names: ['a'], mon_addresses: ['10.0.0.11'], mgrs: ['a'] });
    expect(keys.failed, JSON.stringify(keys)).toBe(false);
    expect(keys.changed).toBe(true);
    expect(keys.would_change).toContain('generate the client.admin key in /etc/ceph/ceph.client.admin.keyring');
    expect(keys.would_change).toContain('generate the initial monitor map of a [v2:10.0.0.11:3300,v1:10.0.0.11:6789] in /var/lib/ceph/tmp/monmap');
    expect(keys.admin_keyring).toBe('');
    expect(keys.mgr_keyrings).toEqual({ a: '' });
    expect(keys.monmap).toBe('');
    expect(absent('/var/lib/ceph')).toBe(true);
    expect(await c.calls()).toEqual([]);
  }, 120_000);

  it('carapace_ceph_osds: the devices it would prepare; a device that is not free fails as in a real run; without the Ceph tools a used device is unknown', async () => {
    const units = ['ceph-osd.target'];
    const answers = {
      ...SYSTEMD_OFF(units),
      'ceph-bluestore-tool show-label --dev /dev/vdb': { rc: 1, err: 'unable to read label' },
      'ceph-bluestore-tool show-label --dev /dev/vdc': { rc: 1, err: 'unable to read label' },
      'blkid -p -o export /dev/vdb': { rc: 2 },
      'blkid -p -o export /dev/vdc': ok('DEVNAME=/dev/vdc\nTYPE=ext4'),
    };
    const c = await cluster(answers);
    const args = { fsid: FSID, devices: ['/dev/vdb'], mode: 'raw', bootstrap_keyring: '[client.bootstrap-osd]\n\tkey = BOOTSECRET==\n' };
    const preview = await c.module('carapace_ceph_osds', args);
    expect(preview.failed, JSON.stringify(preview)).toBe(false);
    expect(preview.changed).toBe(true);
    expect(preview.would_prepare).toEqual(['/dev/vdb']);
    expect(preview.would_change).toContain('prepare a BlueStore OSD on /dev/vdb (ceph-volume raw prepare), enable and start it');
    expect(preview.would_change).toContain("reload systemd's units (systemctl daemon-reload)");
    expect(preview.osds).toEqual([{ device: '/dev/vdb', state: 'free', osd_id: null, detail: 'no signature' }]);
    expect(JSON.stringify(preview)).not.toContain('BOOTSECRET');

    // the words of the real run's refusal (a real run here would write the keyring first)
    const foreign = await c.module('carapace_ceph_osds', { ...args, devices: ['/dev/vdb', '/dev/vdc'] });
    expect(foreign.failed).toBe(true);
    expect(foreign.msg).toBe('these devices are not free, nothing was written to them: /dev/vdc: holds ext4');
    expect(writesIn(await c.calls())).toEqual([]);
    expect(absent('/var/lib/ceph')).toBe(true);

    const bare = await cluster(answers, ['ceph-bluestore-tool', 'ceph-volume']);
    const unknown = await bare.module('carapace_ceph_osds', { ...args, devices: ['/dev/vdb', '/dev/vdc'] });
    expect(unknown.failed, JSON.stringify(unknown)).toBe(false);
    expect(unknown.would_prepare).toEqual(['/dev/vdb']);
    expect(unknown.check_mode_unknown).toBe(
      'cannot tell what these devices hold before the Ceph packages are installed: /dev/vdc: holds ext4; ceph-bluestore-tool is not installed yet to tell whether it is an OSD of this cluster',
    );
    expect(writesIn(await bare.calls())).toEqual([]);
  }, 180_000);

  it('the options held while OSDs restart: set with the first noout of Carapace, removed with the last; an operator\'s setting neither changed nor removed', async () => {
    const osdYes = { 'ceph osd ok-to-stop 0': ok({ ok_to_stop: true, num_ok_pgs: 32, num_not_ok_pgs: 0 }) };
    const writes = { 'ceph config-key set *': ok(''), 'ceph config-key rm *': ok(''), 'ceph config set *': ok(''), 'ceph config rm *': ok(''), 'ceph osd set-group noout h1': ok(''), 'ceph osd unset-group noout h1': ok('') };
    const gate = { type: 'osd', ids: ['0'], host_bucket: 'h1', timeout: 0 };
    const flagged = { ...OSD_DUMP, crush_node_flags: { h1: ['noout'] } };

    // set by no one: the gate marks it and sets it, also when the host's noout is an operator's
    // (the stand-in's dump shows the flag set and no mark of Carapace's, so the flag is left to its owner)
    const fresh = await cluster({ ...READS, ...osdYes, ...writes, 'ceph osd dump': ok(flagged) });
    const set = await fresh.module('carapace_ceph_gate', gate, { check: false });
    expect(set.failed, JSON.stringify(set)).toBe(false);
    expect(set.noout_set).toBe(false);
    expect(writesIn(await fresh.calls())).toEqual(HELD.flatMap((o) => [expect.stringMatching(new RegExp(`^ceph config-key set ${markOf(o)} \\d+ `)), `ceph config set ${o.who} ${o.name} ${o.value}`]));

    // an operator's own setting of one: left as it is (and not marked); the other is held
    const [mine, theirs] = HELD as [(typeof HELD)[0], (typeof HELD)[0]];
    const operator = await cluster({ ...READS, ...osdYes, ...writes, 'ceph osd dump': ok(flagged), 'ceph config dump': ok([{ section: theirs.who, name: theirs.name, value: '5', level: 'dev' }]) });
    expect((await operator.module('carapace_ceph_gate', gate, { check: false })).failed).toBe(false);
    expect(writesIn(await operator.calls()).filter((w) => w.startsWith('ceph config'))).toEqual([expect.stringMatching(new RegExp(`^ceph config-key set ${markOf(mine)} \\d+ `)), `ceph config set ${mine.who} ${mine.name} ${mine.value}`]);

    // the last host's flag unset: the option goes too, mark and all
    const marked = { 'ceph config-key dump carapace/config/': ok(HELD_MARKS), 'ceph osd dump': ok(flagged) };
    const heldNames = HELD.map((o) => `${o.who} ${o.name}`).sort();
    const last = await cluster({ ...READS, ...writes, ...marked, 'ceph config-key dump carapace/noout/': ok({ 'carapace/noout/h1': '1700000000 upgrade' }) });
    const released = await last.module('carapace_ceph_noout', { buckets: ['h1'] }, { check: false });
    expect(released.failed, JSON.stringify(released)).toBe(false);
    expect(released).toMatchObject({ changed: true, unset: ['h1'], released: heldNames });
    expect(writesIn(await last.calls())).toEqual([
      'ceph osd unset-group noout h1',
      'ceph config-key rm carapace/noout/h1',
      ...[...HELD].sort((a, b) => a.name.localeCompare(b.name)).flatMap((o) => [`ceph config rm ${o.who} ${o.name}`, `ceph config-key rm ${markOf(o)}`]),
    ]);
    // ...and a preview says so, changing nothing
    const preview = await last.module('carapace_ceph_noout', { buckets: ['h1'] });
    expect(preview.would_change).toEqual(['unset noout on h1', ...heldNames.map((n) => `remove ${n} from the central configuration (Carapace set it while OSDs restarted)`)]);

    // another host still under Carapace's noout (a maintenance): the option stays
    const other = await cluster({ ...READS, ...writes, ...marked, 'ceph config-key dump carapace/noout/': ok({ 'carapace/noout/h1': '1700000000 upgrade', 'carapace/noout/h2': '1700000000 maintenance' }) });
    const kept = await other.module('carapace_ceph_noout', { buckets: ['h1'] }, { check: false });
    expect(kept).toMatchObject({ changed: true, unset: ['h1'], released: [] });
    expect(writesIn(await other.calls()).filter((w) => w.startsWith('ceph config'))).toEqual(['ceph config-key rm carapace/noout/h1']);

    // cleanup after a failed run with no flag of Carapace's left (the host's noout was an operator's): the option still goes
    const leftover = await cluster({ ...READS, ...writes, ...marked });
    const cleaned = await leftover.module('carapace_ceph_noout', { cli_timeout: 30 }, { check: false });
    expect(cleaned).toMatchObject({ changed: true, unset: [], released: heldNames });
  }, 180_000);

  it('carapace_ceph_restart, carapace_ceph_settle and carapace_ceph_noout: a restart is a change not made; its outcome is unknown; the flags it would unset', async () => {
    const c = await cluster({ ...READS, 'ceph config-key dump carapace/noout/': ok({ 'carapace/noout/h1': '1700000000 upgrade' }), 'ceph osd dump': ok({ ...OSD_DUMP, crush_node_flags: { h1: ['noout'] } }) });
    const restart = await c.module('carapace_ceph_restart', { units: ['ceph-osd@0.service'] });
    expect(restart.failed, JSON.stringify(restart)).toBe(false);
    expect(restart.changed).toBe(true);
    expect(restart.would_change).toEqual(['restart ceph-osd@0.service']);

    const settle = await c.module('carapace_ceph_settle', { type: 'osd', ids: ['0'], host: 'h1', before: { 0: 5 }, restarted_at: 1, expect: '17.2.7' });
    expect(settle.failed, JSON.stringify(settle)).toBe(false);
    expect(settle.changed).toBe(false);
    expect(settle.check_mode_unknown).toBe('nothing is restarted in check mode: whether osd.0 on h1 would come back at 17.2.7 is known only after a real restart');
    expect(settle.pgs_now).toBe('active+clean: 32 active+clean');

    const noout = await c.module('carapace_ceph_noout', { cli_timeout: 30 });
    expect(noout.changed, JSON.stringify(noout)).toBe(true);
    expect(noout.unset).toEqual(['h1']);
    expect(noout.would_change).toEqual(['unset noout on h1']);
    expect(writesIn(await c.calls())).toEqual([]);
  }, 120_000);

  it('carapace_ceph_upgrade_finish: unknown while the daemons run the old version; the release it would require once they all run the new one', async () => {
    const c = await cluster(READS);
    const behind = await c.module('carapace_ceph_upgrade_finish', { target: '17.2.7' });
    expect(behind.failed, JSON.stringify(behind)).toBe(false);
    expect(behind.changed).toBe(false);
    expect(behind.check_mode_unknown).toContain('nothing is upgraded in check mode, so mon.a 16.2.15');
    const done = await c.module('carapace_ceph_upgrade_finish', { target: '16.2.15' });
    expect(done.failed, JSON.stringify(done)).toBe(false);
    expect(done.changed).toBe(false);
    const older = await cluster({ ...READS, 'ceph osd dump': ok({ ...OSD_DUMP, require_osd_release: 'octopus' }) });
    const raise = await older.module('carapace_ceph_upgrade_finish', { target: '16.2.15' });
    expect(raise.changed, JSON.stringify(raise)).toBe(true);
    expect(raise.would_change).toEqual(['ceph osd require-osd-release pacific (now octopus)']);
    expect(writesIn([...(await c.calls()), ...(await older.calls())])).toEqual([]);
  }, 120_000);

  it('carapace_ceph_packages mode=install: the source it would write (with its diff) and the packages it would install, nothing written', async () => {
    const c = await cluster({});
    const key = '-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQINBF\n-----END PGP PUBLIC KEY BLOCK-----';
    const preview = await c.module('carapace_ceph_packages', { mode: 'install', kind: 'repository', url: 'https://download.ceph.invalid/debian-reef', suite: 'bookworm', key, version: '18.2.7-1~bpo12+1' });
    expect(preview.failed, JSON.stringify(preview)).toBe(false);
    expect(preview.changed).toBe(true);
    expect(preview.would_change).toContain('create /etc/apt/sources.list.d/carapace-ceph.sources (mode 0644, root:root)');
    expect(preview.would_change).toContain('pin the Ceph packages at 18.2.7-1~bpo12+1 (/etc/apt/preferences.d/carapace-ceph-version)');
    const sources = preview.diff.find((d: Result) => d.after_header === '/etc/apt/sources.list.d/carapace-ceph.sources');
    expect(sources.after).toContain('URIs: https://download.ceph.invalid/debian-reef\nSuites: bookworm\n');
    expect(absent('/etc/apt/sources.list.d/carapace-ceph.sources')).toBe(true);
    expect(absent('/etc/apt/keyrings/carapace-ceph.asc')).toBe(true);
    expect(await c.calls()).toEqual([]);
  }, 120_000);

  it('carapace_ceph_pool: a pool it would create, the settings it would change, a deletion; refusals as in a real run', async () => {
    const pool = { pool_name: 'volumes', type: 1, size: 2, min_size: 1, crush_rule: 0, pg_autoscale_mode: 'on', pg_num: 32, application_metadata: { rbd: {} }, quota_max_bytes: 0, quota_max_objects: 0, flags_names: 'hashpspool' };
    const c = await cluster({ ...READS, 'ceph osd pool ls detail': ok([pool]), 'ceph osd tree': ok(osdTree(3)) });
    const spec = { name: 'images', type: 'replicated', size: 3, min_size: 2, crush_failure_domain: 'host', pg_autoscale_mode: 'on', application: 'rbd', target_size_ratio: '' };
    const create = await c.module('carapace_ceph_pool', { mode: 'add', pool: spec });
    expect(create.failed, JSON.stringify(create)).toBe(false);
    expect(create.changed).toBe(true);
    expect(create.carapace_steps.map((s: Result) => s.name)).toEqual([
      'Ceph can place pool images: 3 hosts with up and in OSDs (h1, h2, h3) for 3 copies',
      'pool images would be created: replicated, one copy per host, size 3, min_size 2, autoscale on, application rbd',
    ]);
    const converge = await c.module('carapace_ceph_pool', { mode: 'add', pool: { ...spec, name: 'volumes' } });
    expect(converge.changed, JSON.stringify(converge)).toBe(true);
    expect(converge.carapace_steps.filter((s: Result) => s.changed).map((s: Result) => s.name)).toEqual([
      'pool volumes: size would be 2 → 3 (data will move)',
      'pool volumes: min_size would be 1 → 2',
    ]);
    const wait = await c.module('carapace_ceph_pool', { mode: 'wait', pool: spec });
    expect(wait.check_mode_unknown).toBe('pool images does not exist in check mode: whether its PGs become active+clean is known only after a real run');
    const tooMany = await c.module('carapace_ceph_pool', { mode: 'add', pool: { ...spec, size: 4 } });
    expect(tooMany.failed).toBe(true);
    expect(tooMany.msg).toContain('pool images needs 4 hosts with up and in OSDs for its copies, the cluster has 3');
    const confirm = await c.module('carapace_ceph_pool', { mode: 'remove', removal: { name: 'volumes', confirm_name: 'volume' } });
    expect(confirm.failed).toBe(true);
    expect(confirm.msg).toBe("confirm_name 'volume' is not the pool's name 'volumes': nothing deleted");
    expect(writesIn(await c.calls())).toEqual([]);
  }, 180_000);

  it('carapace_ceph_config: the options it would set and remove centrally, none set', async () => {
    const c = await cluster({ ...READS, 'ceph config dump': ok([{ section: 'osd', name: 'osd_max_backfills', value: '1' }, { section: 'global', name: 'debug_ms', value: '1' }]) });
    const info = { osd_max_backfills: { type: 'uint', runtime: true, flags: [], services: ['osd'] }, debug_ms: { type: 'str', runtime: true, flags: [], services: [] } };
    const plan = { conf_set: [], conf_remove: [], central_set: [{ section: 'osd', name: 'osd_max_backfills', value: '2' }], central_remove: [{ section: 'global', name: 'debug_ms' }], info };
    const apply = await c.module('carapace_ceph_config', { mode: 'apply', plan });
    expect(apply.failed, JSON.stringify(apply)).toBe(false);
    expect(apply.changed).toBe(true);
    expect(apply.carapace_steps.map((s: Result) => s.name)).toEqual([
      'osd osd_max_backfills = 2: would be set centrally (was 1; applied at runtime)',
      'global debug_ms: would be removed centrally (was 1; applied at runtime)',
    ]);
    expect(writesIn(await c.calls())).toEqual([]);
  }, 120_000);

  it('carapace_ceph_replace: a drain is unknown while Ceph says no to OSDs still in; stop, destroy and create are reported, not made; back is unknown', async () => {
    const c = await cluster({
      ...READS,
      'ceph osd safe-to-destroy 1': { rc: 16, err: 'Error EBUSY: OSD(s) 1 have 32 pgs currently mapped to them.' },
      'ceph-bluestore-tool show-label --dev /dev/vdd': { rc: 1 },
      'blkid -p -o export /dev/vdd': { rc: 2 },
      'blockdev --getsize64 /dev/vdd': ok('10737418240'),
      'systemctl is-enabled ceph-osd@1.service': { rc: 0, out: 'enabled' },
      'systemctl is-active ceph-osd@1.service': { rc: 0, out: 'active' },
      'systemctl list-units --all --plain --no-legend ceph-volume@*': ok(''),
    });
    const osds = [{ id: 1, device: '/dev/vdd' }];
    const drain = await c.module('carapace_ceph_replace', { mode: 'drain', osds });
    expect(drain.failed, JSON.stringify(drain)).toBe(false);
    expect(drain.changed).toBe(true);
    expect(drain.carapace_steps[0].name).toBe('osd.1 would be marked out: its data would move to the other OSDs');
    expect(drain.check_mode_unknown).toContain('they are still in: whether their data can move elsewhere once they are marked out is known only after a real run');
    const stop = await c.module('carapace_ceph_replace', { mode: 'stop', osds });
    expect(stop.carapace_steps[0].name, JSON.stringify(stop)).toBe('ceph-osd@1.service would be stopped and disabled');
    const destroy = await c.module('carapace_ceph_replace', { mode: 'destroy', osds });
    expect(destroy.carapace_steps[0].name, JSON.stringify(destroy)).toBe('osd.1 would be marked down and destroyed: id, CRUSH place and weight kept');
    const create = await c.module('carapace_ceph_replace', { mode: 'create', osds, fsid: FSID, osd_mode: 'raw' });
    expect(create.failed, JSON.stringify(create)).toBe(true);
    expect(create.msg).toBe('osd.1: the new device /dev/vdd does not exist on this host');
    const back = await c.module('carapace_ceph_replace', { mode: 'back', osds });
    expect(back.check_mode_unknown).toBe('nothing is replaced in check mode: whether osd.1 come back up and in on the new devices, and the PGs clean, is known only after a real run');
    expect(writesIn(await c.calls())).toEqual([]);
  }, 180_000);

  it('carapace_ceph_wait: what it waits for is unknown when it does not come within check_timeout; what is there is waited for as in a real run', async () => {
    const c = await cluster({});
    const py = join(c.tmp, 'py');
    await mkdir(py);
    await writeFile(join(py, 'rados.py'), STAND_IN_RADOS);
    const env = { PYTHONPATH: py };
    const started = Date.now();
    const none = await c.module('carapace_ceph_wait', { quorum: 3, timeout: 300, check_timeout: 2 }, { env });
    expect(none.failed, JSON.stringify(none)).toBe(false);
    expect(none.changed).toBe(false);
    expect(none.check_mode_unknown).toMatch(/^the monitors did not reach quorum within 2 s: 1 of 3 monitors in quorum \(a\); in check mode nothing was made/);
    expect(Date.now() - started).toBeLessThan(60_000);
    const one = await c.module('carapace_ceph_wait', { quorum: 1, timeout: 300, check_timeout: 2 }, { env });
    expect(one.failed, JSON.stringify(one)).toBe(false);
    expect(one.check_mode_unknown).toBeUndefined();
    expect(one.detail).toBe('1 of 1 monitors in quorum (a)');
    const real = await c.module('carapace_ceph_wait', { quorum: 3, timeout: 2 }, { env, check: false });
    expect(real.failed).toBe(true);
    const missing = await c.module('carapace_ceph_wait', { quorum: 1 });
    expect(missing.failed).toBe(false);
    expect(missing.check_mode_unknown).toContain('python3-rados is missing');
  }, 180_000);
});

/** A stand-in for python3-rados: a cluster of one monitor (a) in quorum. */
const STAND_IN_RADOS = `import json


class Error(Exception):
    pass


class Rados:
    def __init__(self, conffile=None, rados_id=None):
        pass

    def connect(self, timeout=0):
        pass

    def shutdown(self):
        pass

    def mon_command(self, cmd, inbuf, timeout=0):
        prefix = json.loads(cmd)["prefix"]
        if prefix == "status":
            return 0, b"HEALTH_OK (stand-in)", ""
        if prefix == "quorum_status":
            return 0, json.dumps({"quorum_names": ["a"]}).encode(), ""
        return -22, b"", "unknown command " + prefix
`;
