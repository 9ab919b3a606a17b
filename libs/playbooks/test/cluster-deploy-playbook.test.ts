// The cluster_deploy Ansible content (libs/playbooks/ansible/cluster_deploy/): what can be
// checked without Ceph daemons. The run on real hosts belongs to the lab (test/lab/).
import { access, chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ansibleEnv, run, scratchDirs, roleOrder, syntaxCheck, writeRunInputs } from './fixtures/ansible.js';

const playbookDir = fileURLToPath(new URL('../ansible/cluster_deploy/', import.meta.url));
const playbook = join(playbookDir, 'playbook.yml');
const roles = fileURLToPath(new URL('../ansible/roles/', import.meta.url));
const varsFile = fileURLToPath(new URL('../ansible/vars/ceph.yml', import.meta.url));
const deviceHelper = fileURLToPath(new URL('../ansible/module_utils/carapace_ceph_devices.py', import.meta.url));
const FSID = '0b5c2c35-6d3e-4f38-9e0b-1f1f9a6f2a11';

const makeTmp = scratchDirs('carapace-cluster-deploy-');


/**
 * A work dir shaped like the runner's: the builder's groups and host vars (two local hosts
 * standing in for 10.0.0.11 and 10.0.0.12) behind an inventory script, global_vars in
 * vars.json, every string unsafe.
 */
async function workDir(globalVars: Record<string, unknown>): Promise<string> {
  const tmp = await makeTmp();
  const host = (ip: string, devices: string[]) => ({
    ansible_host: ip,
    ansible_connection: 'local',
    ansible_python_interpreter: '/usr/bin/python3',
    carapace_osd_devices: devices,
  });
  const inventory = {
    mons: { hosts: ['10.0.0.11', '10.0.0.12'] },
    mgrs: { hosts: ['10.0.0.11', '10.0.0.12'] },
    osds: { hosts: ['10.0.0.11', '10.0.0.12'] },
    _meta: { hostvars: { '10.0.0.11': host('10.0.0.11', ['/dev/vdb', '/dev/vdc']), '10.0.0.12': host('10.0.0.12', ['/dev/vdb']) } },
  };
  await writeRunInputs(tmp, inventory, globalVars);
  return tmp;
}

const GLOBAL_VARS = {
  fsid: FSID,
  cluster: 'ceph',
  carapace_cluster_name: 'test',
  dmcrypt: false,
  mon_count: 2,
  public_network: '10.0.0.0/24',
  cluster_network: '10.0.0.0/24',
  ceph_repository: 'distribution',
  osd_objectstore: 'bluestore',
};

describe('cluster_deploy playbook', () => {
  it('passes ansible-playbook --syntax-check', async () => {
    const tmp = await workDir(GLOBAL_VARS);
    const result = await syntaxCheck(tmp, playbook);
    expect(result.stderr).not.toMatch(/ERROR|WARNING/);
    expect(result.code).toBe(0);
  }, 60_000);

  it('runs its roles in order: pre-flight, packages, monitors, the first manager, OSDs, the standby managers, health', async () => {
    const tmp = await workDir(GLOBAL_VARS);
    const { result, order } = await roleOrder(tmp, playbook, /ceph_\w+/);
    expect(result.code, result.stderr).toBe(0);
    expect(order).toEqual(['ceph_preflight', 'ceph_common', 'ceph_mon', 'ceph_mgr', 'ceph_osd', 'ceph_mgr', 'ceph_health']);
  }, 60_000);

  it('refuses bad settings at the pre-flight and never evaluates a template given as a value', async () => {
    const tmp = await makeTmp();
    const marker = join(tmp, 'templated');
    const dir = await workDir({ ...GLOBAL_VARS, cluster_network: `{{ lookup('pipe', 'touch ${marker}') }}` });
    const preflight = join(dir, 'preflight.yml');
    await writeFile(
      preflight,
      [
        '- hosts: mons:mgrs:osds',
        '  gather_facts: true',
        '  gather_subset: [min]',
        '  any_errors_fatal: true',
        `  vars_files: [${JSON.stringify(varsFile)}]`,
        '  roles:',
        `    - role: ${JSON.stringify(join(roles, 'ceph_preflight'))}`,
        '',
      ].join('\n'),
    );
    const result = await run('ansible-playbook', ['-i', 'inventory.sh', '-e', '@vars.json', preflight], dir, ansibleEnv(dir));
    expect(result.code).not.toBe(0);
    expect(result.stdout).toContain('Check the cluster settings');
    expect(result.stdout).toContain(`cluster_network={{ lookup('pipe', 'touch ${marker}') }}`);
    await expect(access(marker)).rejects.toThrow();
  }, 60_000);

  it('renders ceph.conf from the configuration: fsid, monitor addresses, networks, pool size', async () => {
    const dir = await workDir({ ...GLOBAL_VARS, public_network: '{{ 6 * 7 }}' });
    const render = join(dir, 'render.yml');
    await writeFile(
      render,
      [
        '- hosts: mons',
        '  gather_facts: true',
        '  gather_subset: [min]',
        `  vars_files: [${JSON.stringify(varsFile)}]`,
        '  tasks:',
        '    - ansible.builtin.template:',
        `        src: ${JSON.stringify(join(roles, 'ceph_common', 'templates', 'ceph.conf.j2'))}`,
        `        dest: "${dir}/ceph-{{ inventory_hostname }}.conf"`,
        '',
      ].join('\n'),
    );
    const result = await run('ansible-playbook', ['-i', 'inventory.sh', '-e', '@vars.json', render], dir, ansibleEnv(dir));
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const conf = await readFile(join(dir, 'ceph-10.0.0.11.conf'), 'utf8');
    expect(conf).toContain(`fsid = ${FSID}\n`);
    // the monitors come from the initial monitor map (carapace_ceph_keys), not from ceph.conf
    expect(conf).not.toContain('mon_initial_members');
    expect(conf).toContain('mon_host = [v2:10.0.0.11:3300,v1:10.0.0.11:6789],[v2:10.0.0.12:3300,v1:10.0.0.12:6789]\n');
    // a configuration value is text, never a template
    expect(conf).toContain('public_network = {{ 6 * 7 }}\n');
    expect(conf).toContain('cluster_network = 10.0.0.0/24\n');
    expect(conf).toContain('osd_pool_default_size = 2\n');
    expect(conf).not.toContain('osd_crush_chooseleaf_type');
    expect(await readFile(join(dir, 'ceph-10.0.0.12.conf'), 'utf8')).toBe(conf);
  }, 60_000);
});

describe('module_utils/carapace_ceph_devices.py', () => {
  it('tells free, ours, foreign and incomplete devices apart and never prints an OSD key', async () => {
    const tmp = await makeTmp();
    const bin = join(tmp, 'bin');
    await mkdir(bin);
    // ceph-bluestore-tool show-label --dev DEV, answering by the device's file name
    await writeFile(
      join(bin, 'ceph-bluestore-tool'),
      [
        '#!/bin/sh',
        'case "$3" in',
        `  */ours) printf '{"%s": {"ceph_fsid": "${FSID}", "whoami": "4", "osd_key": "SECRETKEY"}}' "$3" ;;`,
        `  */other) printf '{"%s": {"ceph_fsid": "11111111-2222-3333-4444-555555555555", "whoami": "1", "osd_key": "SECRETKEY"}}' "$3" ;;`,
        `  */half) printf '{"%s": {"ceph_fsid": "${FSID}", "osd_key": "SECRETKEY"}}' "$3" ;;`,
        '  *) echo "unable to read label" >&2; exit 1 ;;',
        'esac',
        '',
      ].join('\n'),
    );
    await chmod(join(bin, 'ceph-bluestore-tool'), 0o755);
    const devices = ['free', 'ours', 'other', 'half', 'swap'].map((name) => join(tmp, name));
    for (const device of devices) await writeFile(device, Buffer.alloc(1024 * 1024));
    // blkid and mkswap live in sbin, which an unprivileged PATH may lack
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}:/usr/sbin:/sbin` };
    const swap = await run('mkswap', [join(tmp, 'swap')], tmp, env);
    expect(swap.code, swap.stderr).toBe(0);

    const result = await run('python3', [deviceHelper, 'raw', FSID, ...devices], tmp, env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('SECRETKEY');
    const report = JSON.parse(result.stdout) as { device: string; state: string; osd_id: number | null }[];
    expect(report.map((r) => [r.device, r.state, r.osd_id])).toEqual([
      [devices[0], 'free', null],
      [devices[1], 'ours', 4],
      [devices[2], 'foreign', null],
      [devices[3], 'incomplete', null],
      [devices[4], 'foreign', null],
    ]);
  }, 60_000);
});
