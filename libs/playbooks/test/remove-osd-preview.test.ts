// A preview of remove_osd (issue 31) whose data is not safe elsewhere: `ansible-playbook
// --check --diff` on this machine (the monitor and the OSD host both local) with stand-ins for
// the Ceph CLI (fixtures/fake-ceph-cluster.py). The OSDs are not marked out in a preview, so
// the gate (carapace_ceph_gate type=destroy) says no only because the rest of the cluster
// could not hold their data; the run fails with that reason and the words of a real run's
// refusal, having asked Ceph nothing but reads. Needs root (the plays become root).
import { existsSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ansibleEnv, run, scratchDirs, writeRunInputs } from './fixtures/ansible.js';

const playbook = fileURLToPath(new URL('../ansible/remove_osd/playbook.yml', import.meta.url));
const FAKE = fileURLToPath(new URL('./fixtures/fake-ceph-cluster.py', import.meta.url));
const FSID = '0b5c2c35-6d3e-4f38-9e0b-1f1f9a6f2a11';
const makeTmp = scratchDirs('carapace-remove-osd-preview-');

describe.skipIf(process.getuid?.() !== 0)('remove_osd in check mode', () => {
  it('shows the refusal of the gate when the rest of the cluster could not hold the data, and marks nothing out', async () => {
    const tmp = await makeTmp();
    const bin = join(tmp, 'bin');
    await mkdir(bin);
    for (const tool of ['ceph', 'systemctl', 'ceph-volume', 'ceph-bluestore-tool']) await symlink(FAKE, join(bin, tool));
    const here = hostname().split('.')[0] ?? '';
    const answers = {
      'ceph fsid': { out: FSID },
      [`ceph osd ls-tree ${here}`]: { out: [1] },
      'ceph osd dump': {
        out: {
          osds: [
            { osd: 0, up: 1, in: 1, up_from: 5 },
            { osd: 1, up: 1, in: 1, up_from: 6 },
          ],
          pools: [{ pool_name: 'volumes', size: 2, crush_rule: 0 }],
          crush_node_flags: {},
        },
      },
      'ceph osd safe-to-destroy 1': { rc: 16, err: 'Error EBUSY: OSD(s) 1 have 32 pgs currently mapped to them.' },
      'ceph osd tree': {
        out: {
          nodes: [
            { id: -1, name: 'default', type: 'root', children: [-2, -3] },
            { id: -2, name: 'other', type: 'host', children: [0] },
            { id: 0, name: 'osd.0', type: 'osd', status: 'up', reweight: 1 },
            { id: -3, name: here, type: 'host', children: [1] },
            { id: 1, name: 'osd.1', type: 'osd', status: 'up', reweight: 1 },
          ],
        },
      },
      'ceph osd crush rule dump': { out: [{ rule_id: 0, rule_name: 'replicated_rule', steps: [{ op: 'take', item: -1 }, { op: 'chooseleaf_firstn', num: 0, type: 'host' }, { op: 'emit' }] }] },
      'ceph -s': { out: '  cluster:\n    health: HEALTH_OK (stand-in)' },
    };
    const file = join(tmp, 'answers.json');
    await writeFile(file, JSON.stringify(answers));
    const host = (ip: string) => ({ ansible_host: ip, ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3', ansible_become: false });
    const inventory = {
      mons: { hosts: ['10.0.0.11'] },
      osds: { hosts: ['10.0.0.21'] },
      _meta: { hostvars: { '10.0.0.11': host('10.0.0.11'), '10.0.0.21': host('10.0.0.21') } },
    };
    await writeRunInputs(tmp, inventory, { fsid: FSID, cluster: 'ceph', carapace_cluster_name: 'test', safe_to_destroy_timeout: 600 });
    const env = { ...ansibleEnv(tmp), PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin`, FAKE_CEPH_ANSWERS: file };

    const result = await run('ansible-playbook', ['--check', '--diff', '-i', 'inventory.sh', '-e', '@vars.json', playbook], tmp, env);
    const out = result.stdout + result.stderr;
    expect(result.code, out).not.toBe(0);
    expect(out).toContain('TASK [ceph_osd_remove : Ask Ceph whether the data of the OSDs can go elsewhere]');
    expect(out.replace(/\s+/g, ' ')).toContain(
      'osd.1: not safe to destroy : Ceph would not say osd.1 may be destroyed: their data has nowhere else to go: pool volumes keeps 2 copies, one per host, and without them 1 host with up and in OSDs would be left (other)',
    );
    expect(out.replace(/\s+/g, ' ')).toContain('Removing them now could lose data, so nothing was stopped, purged or wiped: a preview marks nothing out.');
    // the way out and back in were not taken: the commands that change were skipped
    expect(out).toMatch(/TASK \[ceph_osd_remove : Mark the OSDs out\] \*+\nskipping: \[10\.0\.0\.21\]/);
    expect(out).not.toContain('TASK [ceph_osd_remove : Stop and disable the OSDs]');
    const calls = existsSync(`${file}.calls`) ? (await readFile(`${file}.calls`, 'utf8')).split('\n').filter(Boolean) : [];
    expect(calls.filter((c) => !/^ceph (fsid|osd (ls-tree|dump|safe-to-destroy|tree|crush rule dump)|-s)\b/.test(c))).toEqual([]);
    expect(calls).toContain('ceph osd safe-to-destroy 1');
  }, 300_000);
});
