// The add_osd, remove_osd, upgrade_ceph, restart_services and update_ceph_configuration Ansible content: what can be checked without Ceph
// daemons (syntax, the order of their roles, the OSD lister of remove_osd). Their runs on
// real daemons are in test/e2e/ceph/osd.checks.ts and upgrade.checks.ts.
import { chmod, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run, scratchDirs, roleOrder, syntaxCheck, writeRunInputs } from './fixtures/ansible.js';

const ansibleDir = fileURLToPath(new URL('../ansible/', import.meta.url));
const lister = join(ansibleDir, 'roles', 'ceph_osd_remove', 'files', 'ceph-osd-local.py');
const FSID = '0b5c2c35-6d3e-4f38-9e0b-1f1f9a6f2a11';
const OTHER = '11111111-2222-3333-4444-555555555555';

const makeTmp = scratchDirs('carapace-osd-playbooks-');

/** A work dir like the runner's: the builder's groups (mons, osds), every string unsafe. */
async function workDir(globalVars: Record<string, unknown>): Promise<string> {
  const tmp = await makeTmp();
  const host = (ip: string, extra: Record<string, unknown> = {}) => ({ ansible_host: ip, ansible_connection: 'local', ...extra });
  const inventory = {
    mons: { hosts: ['10.0.0.11'] },
    osds: { hosts: ['10.0.0.21'] },
    ceph: { hosts: ['10.0.0.11', '10.0.0.21'] },
    maintenance: { hosts: ['10.0.0.21'] },
    new_mons: { hosts: ['10.0.0.31'] },
    old_mons: { hosts: ['10.0.0.21'] },
    ceph_hosts: { hosts: ['10.0.0.11', '10.0.0.21', '10.0.0.31'] },
    _meta: { hostvars: { '10.0.0.11': host('10.0.0.11'), '10.0.0.21': host('10.0.0.21', { carapace_osd_devices: ['/dev/vdb'] }) } },
  };
  await writeRunInputs(tmp, inventory, globalVars);
  return tmp;
}

const BASE = { fsid: FSID, cluster: 'ceph', carapace_cluster_name: 'test' };
const PLAYBOOKS = {
  add_osd: {
    vars: { ...BASE, dmcrypt: false, public_network: '10.0.0.0/24', cluster_network: '10.0.0.0/24', ceph_repository: 'distribution', osd_objectstore: 'bluestore' },
    roles: ['ceph_preflight', 'ceph_common', 'ceph_osd', 'ceph_health'],
  },
  remove_osd: { vars: { ...BASE, safe_to_destroy_timeout: 600 }, roles: ['ceph_preflight', 'ceph_osd_remove'] },
  upgrade_ceph: {
    vars: { ...BASE, ceph_repository: 'distribution', target_version: '', allowed_warnings: [], ok_to_stop_timeout: 300, daemon_timeout: 600, clean_timeout: 900 },
    roles: ['ceph_preflight', 'ceph_rolling'],
  },
  restart_services: {
    vars: { ...BASE, services: ['mgr', 'mon', 'osd'], ok_to_stop_timeout: 300, daemon_timeout: 600, clean_timeout: 900 },
    roles: ['ceph_preflight', 'ceph_rolling'],
  },
  // their one role is included (ceph_preflight's running-cluster tasks), not listed
  maintenance_enter: { vars: { ...BASE, ok_to_stop_timeout: 300, daemon_timeout: 600, clean_timeout: 900 }, roles: [] },
  maintenance_exit: { vars: { ...BASE, ok_to_stop_timeout: 300, daemon_timeout: 600, clean_timeout: 900 }, roles: [] },
  replace_osd: {
    vars: { ...BASE, replacements: [{ id: '3', device: '/dev/vdc' }], wipe_devices: false, dmcrypt: false, safe_to_destroy_timeout: 600, daemon_timeout: 600, clean_timeout: 900 },
    roles: ['ceph_preflight'],
  },
  // their one role is included (ceph_common, by the plays), and ceph_preflight's running-cluster tasks
  add_mon: { vars: { ...BASE, join_timeout: 600 }, roles: ['ceph_common'] },
  remove_mon: { vars: { ...BASE, quorum_timeout: 300 }, roles: [] },
  replace_mon: { vars: { ...BASE, join_timeout: 600, quorum_timeout: 300 }, roles: ['ceph_common'] },
  update_ceph_configuration: {
    vars: {
      ...BASE,
      ceph_options_set: [{ section: 'osd', name: 'osd_max_backfills', value: '2' }],
      ceph_options_remove: [{ section: 'mon', name: 'mon_allow_pool_delete' }],
      ok_to_stop_timeout: 300,
      daemon_timeout: 600,
      clean_timeout: 900,
    },
    roles: ['ceph_preflight', 'ceph_rolling'],
  },
};

for (const [id, { vars, roles }] of Object.entries(PLAYBOOKS)) {
  describe(`${id} playbook`, () => {
    const playbook = join(ansibleDir, id, 'playbook.yml');

    it('passes ansible-playbook --syntax-check', async () => {
      const tmp = await workDir(vars);
      const result = await syntaxCheck(tmp, playbook);
      expect(result.stderr).not.toMatch(/ERROR|WARNING/);
      expect(result.code).toBe(0);
    }, 60_000);

    it(`runs its roles in order: ${roles.join(', ')}`, async () => {
      const tmp = await workDir(vars);
      const { result, order } = await roleOrder(tmp, playbook, /ceph_\w+/);
      expect(result.code, result.stderr).toBe(0);
      expect(order).toEqual(roles);
    }, 60_000);
  });
}

describe('ceph-osd-local.py', () => {
  it("lists the host's OSD directories: this cluster's or not, the device, its kind, whether its label names the OSD; never a key", async () => {
    const tmp = await makeTmp();
    const bin = join(tmp, 'bin');
    const root = join(tmp, 'osd');
    await mkdir(bin);
    await mkdir(root);
    // ceph-bluestore-tool show-label --dev DEV: /dev/loop0's label names osd.3 of FSID
    await writeFile(
      join(bin, 'ceph-bluestore-tool'),
      [
        '#!/bin/sh',
        'case "$3" in',
        `  /dev/loop0) printf '{"%s": {"ceph_fsid": "${FSID}", "whoami": "3", "osd_key": "SECRETKEY"}}' "$3" ;;`,
        '  *) echo "unable to read label" >&2; exit 1 ;;',
        'esac',
        '',
      ].join('\n'),
    );
    await chmod(join(bin, 'ceph-bluestore-tool'), 0o755);
    const osd = async (id: number, fsid: string | null, block: string | null) => {
      const dir = join(root, `ceph-${id}`);
      await mkdir(dir);
      if (fsid !== null) await writeFile(join(dir, 'ceph_fsid'), `${fsid}\n`);
      if (block !== null) await symlink(block, join(dir, 'block'));
    };
    // any block device node of the machine serves: the stand-in tool never reads it
    await osd(3, FSID, '/dev/loop0');
    await osd(5, FSID, '/dev/loop0'); // the label names osd.3, not osd.5
    await osd(7, OTHER, '/dev/loop0');
    await osd(9, FSID, join(tmp, 'missing'));
    await osd(11, null, null);
    await mkdir(join(root, 'not-an-osd'));

    const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`, CARAPACE_OSD_ROOT: root };
    const result = await run('python3', [lister, FSID], tmp, env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('SECRETKEY');
    const listed = JSON.parse(result.stdout) as Record<string, unknown>[];
    expect(listed.map((o) => [o.id, o.ours, o.block, o.kind, o.labelled, o.mounted])).toEqual([
      [3, true, '/dev/loop0', 'raw', true, false],
      [5, true, '/dev/loop0', 'raw', false, false],
      [7, false, '/dev/loop0', 'raw', false, false],
      [9, true, null, null, false, false],
      [11, false, null, null, false, false],
    ]);
    expect(listed[0]).toMatchObject({ path: join(root, 'ceph-3'), cluster: FSID });

    // no OSD directory at all
    const none = await run('python3', [lister, FSID], tmp, { ...env, CARAPACE_OSD_ROOT: join(tmp, 'nothing') });
    expect(JSON.parse(none.stdout)).toEqual([]);
  }, 60_000);
});
