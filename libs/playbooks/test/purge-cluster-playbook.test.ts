// The purge_cluster Ansible content (libs/playbooks/ansible/purge_cluster/): what can be
// checked without Ceph daemons. The run on real hosts, through the API, is
// test/e2e/ceph/purge.checks.ts.
import { access, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ansibleEnv, run, scratchDirs, roleOrder, syntaxCheck, writeRunInputs } from './fixtures/ansible.js';

const playbookDir = fileURLToPath(new URL('../ansible/purge_cluster/', import.meta.url));
const playbook = join(playbookDir, 'playbook.yml');
const deviceHelper = join(playbookDir, 'roles', 'ceph_purge_devices', 'files', 'ceph-purge-devices.py');
const FSID = '0b5c2c35-6d3e-4f38-9e0b-1f1f9a6f2a11';
const OTHER_FSID = '11111111-2222-3333-4444-555555555555';
const KEY = 'AQBsecretsecretsecretsecretsecretsecret==';

const makeTmp = scratchDirs('carapace-purge-cluster-');


/** A work dir shaped like the runner's with the builder's groups (the local machine standing in for one host). */
async function workDir(globalVars: Record<string, unknown>): Promise<string> {
  const tmp = await makeTmp();
  const host = { ansible_connection: 'local', ansible_python_interpreter: '/usr/bin/python3' };
  const inventory = {
    mons: { hosts: ['10.0.0.11'] },
    osds: { hosts: ['10.0.0.11'] },
    ceph: { hosts: ['10.0.0.11'] },
    _meta: { hostvars: { '10.0.0.11': host } },
  };
  await writeRunInputs(tmp, inventory, globalVars);
  return tmp;
}

const GLOBAL_VARS = { fsid: FSID, cluster: 'ceph', carapace_cluster_name: 'test' };

/**
 * A BlueStore label as Ceph writes it at the start of an OSD device (bluestore_bdev_label_t):
 * "bluestore block device\n", the OSD uuid and "\n", then ENCODE_START(2, 1): osd_uuid (16
 * bytes), size (u64), btime (u32 s, u32 ns), description, meta (map<string, string>).
 */
function bluestoreLabel(osdUuid: string, description: string, meta: Record<string, string>): Buffer {
  const str = (s: string) => {
    const b = Buffer.from(s, 'utf8');
    const len = Buffer.alloc(4);
    len.writeUInt32LE(b.length);
    return Buffer.concat([len, b]);
  };
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    return b;
  };
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(6n * 1024n ** 3n);
  const body = Buffer.concat([
    Buffer.from(osdUuid.replaceAll('-', ''), 'hex'),
    size,
    u32(1_700_000_000),
    u32(0),
    str(description),
    u32(Object.keys(meta).length),
    ...Object.entries(meta).flatMap(([k, v]) => [str(k), str(v)]),
  ]);
  return Buffer.concat([Buffer.from(`bluestore block device\n${osdUuid}\n`), Buffer.from([2, 1]), u32(body.length), body]);
}

async function writeAt(path: string, data: Buffer, at: number): Promise<void> {
  const f = await open(path, 'r+');
  try {
    await f.write(data, 0, data.length, at);
  } finally {
    await f.close();
  }
}

async function readAt(path: string, length: number, at: number): Promise<Buffer> {
  const f = await open(path, 'r');
  try {
    const buf = Buffer.alloc(length);
    await f.read(buf, 0, length, at);
    return buf;
  } finally {
    await f.close();
  }
}

describe('purge_cluster playbook', () => {
  it('passes ansible-playbook --syntax-check', async () => {
    const tmp = await workDir(GLOBAL_VARS);
    const result = await syntaxCheck(tmp, playbook);
    expect(result.stderr).not.toMatch(/ERROR|WARNING/);
    expect(result.code).toBe(0);
  }, 60_000);

  it('runs its roles in order: pre-flight, daemons, devices, packages, files', async () => {
    const tmp = await workDir(GLOBAL_VARS);
    const { result, order } = await roleOrder(tmp, playbook, /ceph_purge_\w+/);
    expect(result.code, result.stderr).toBe(0);
    expect(order).toEqual(['ceph_purge_preflight', 'ceph_purge_daemons', 'ceph_purge_devices', 'ceph_purge_packages', 'ceph_purge_files']);
  }, 60_000);

  it('refuses a bad fsid at the pre-flight and never evaluates a template given as a value', async () => {
    const tmp = await makeTmp();
    const marker = join(tmp, 'templated');
    const dir = await workDir({ ...GLOBAL_VARS, fsid: `{{ lookup('pipe', 'touch ${marker}') }}` });
    // the pre-flight play alone (become is not needed for what it checks first)
    const preflight = join(dir, 'preflight.yml');
    await writeFile(
      preflight,
      [
        '- hosts: ceph',
        '  gather_facts: false',
        '  any_errors_fatal: true',
        `  vars_files: [${JSON.stringify(join(playbookDir, 'vars', 'purge.yml'))}]`,
        '  roles:',
        `    - role: ${JSON.stringify(join(playbookDir, 'roles', 'ceph_purge_preflight'))}`,
        '',
      ].join('\n'),
    );
    const result = await run('ansible-playbook', ['-i', 'inventory.sh', '-e', '@vars.json', preflight], dir, ansibleEnv(dir));
    expect(result.code).not.toBe(0);
    expect(result.stdout).toContain('Check the cluster settings');
    expect(result.stdout).toContain(`fsid={{ lookup('pipe', 'touch ${marker}') }}`);
    await expect(access(marker)).rejects.toThrow();
  }, 60_000);
});

const isRoot = process.getuid?.() === 0;

describe('ceph-purge-devices.py', () => {
  it('decodes BlueStore labels, and finds nothing where there is none, printing no key', async () => {
    const tmp = await makeTmp();
    const label = bluestoreLabel('ade18bfc-75fe-4314-bfb9-ef9a3f29e00a', 'main', { ceph_fsid: FSID, whoami: '7', osd_key: KEY, ready: 'ready' });
    await writeFile(join(tmp, 'label'), Buffer.concat([label, Buffer.alloc(4096 - label.length)]));
    await writeFile(join(tmp, 'zero'), Buffer.alloc(4096));
    const script = [
      'import importlib.util, json, sys',
      `spec = importlib.util.spec_from_file_location("h", ${JSON.stringify(deviceHelper)})`,
      'h = importlib.util.module_from_spec(spec); spec.loader.exec_module(h)',
      `print(json.dumps([h.decode_label(open(${JSON.stringify(join(tmp, 'label'))}, "rb").read()), h.decode_label(open(${JSON.stringify(join(tmp, 'zero'))}, "rb").read())]))`,
    ].join('\n');
    const result = await run('python3', ['-c', script], tmp, process.env);
    expect(result.code, result.stderr).toBe(0);
    const [decoded, none] = JSON.parse(result.stdout) as [{ osd_uuid: string; description: string; meta: Record<string, string> }, null];
    expect(decoded.osd_uuid).toBe('ade18bfc-75fe-4314-bfb9-ef9a3f29e00a');
    expect(decoded.description).toBe('main');
    expect(decoded.meta.ceph_fsid).toBe(FSID);
    expect(decoded.meta.whoami).toBe('7');
    expect(none).toBeNull();
  }, 60_000);

  it.skipIf(!isRoot)(
    'wipes only the block devices that hold an OSD of the cluster (loop devices in a private /dev; root only)',
    async () => {
      const tmp = await makeTmp();
      const ours = 'ade18bfc-75fe-4314-bfb9-ef9a3f29e00a';
      const files = {
        // an OSD of this cluster, with a label copy at 1 GiB as newer Ceph releases write
        vdb: { size: 1024 ** 3 + 1024 ** 2, label: bluestoreLabel(ours, 'main', { ceph_fsid: FSID, whoami: '3', osd_key: KEY }) },
        // its DB device: a label without ceph_fsid, naming the same OSD
        vdc: { size: 64 * 1024 ** 2, label: bluestoreLabel(ours, 'bluefs db', {}) },
        // an OSD of another cluster
        vdd: { size: 64 * 1024 ** 2, label: bluestoreLabel('b77c33f1-cf75-46e8-a09c-8be6cdfe7d64', 'main', { ceph_fsid: OTHER_FSID, whoami: '1', osd_key: KEY }) },
        // a file system
        vde: { size: 64 * 1024 ** 2, label: undefined },
      };
      const loops: string[] = [];
      try {
        const nodes: string[] = [];
        for (const [name, spec] of Object.entries(files)) {
          const path = join(tmp, `${name}.img`);
          await run('truncate', ['-s', String(spec.size), path], tmp, process.env);
          if (spec.label) await writeAt(path, spec.label, 0);
          if (name === 'vdb' && spec.label) await writeAt(path, spec.label, 1024 ** 3);
          if (!spec.label) expect((await run('mkfs.ext4', ['-q', '-F', path], tmp, process.env)).code).toBe(0);
          const loop = await run('losetup', ['--find', '--show', path], tmp, process.env);
          expect(loop.code, loop.stderr).toBe(0);
          const dev = loop.stdout.trim();
          loops.push(dev);
          const st = (await run('stat', ['-c', '%t %T', dev], tmp, process.env)).stdout.trim().split(' ');
          nodes.push(`mknod -m 660 /dev/${name} b ${parseInt(st[0] ?? '', 16)} ${parseInt(st[1] ?? '', 16)} && chown 64045 /dev/${name}`);
        }
        const before = { vdd: await readAt(join(tmp, 'vdd.img'), 4096, 0), vde: await readAt(join(tmp, 'vde.img'), 4096, 1024) };
        // a /dev of its own: the helper looks only at these devices
        const inside = [
          'set -e',
          'mount -t tmpfs tmpfs /dev',
          ...nodes,
          `python3 ${deviceHelper} ${FSID}; echo`,
          `python3 ${deviceHelper} ${FSID} --wipe; echo`,
          `python3 ${deviceHelper} ${FSID}; echo`,
          'stat -c "%n %u:%G" /dev/vdb /dev/vdc /dev/vdd',
        ].join('\n');
        const result = await run('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', inside], tmp, { ...process.env, PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` });
        expect(result.code, result.stderr + result.stdout).toBe(0);
        expect(result.stdout).not.toContain(KEY);
        const [scan, wipe, again, owners] = result.stdout.split('\n\n');
        type Report = { devices: { device: string; state: string; osd_id: number | null; wiped: boolean }[]; failures: string[] };
        const summary = (r: Report) => r.devices.map((d) => [d.device, d.state, d.osd_id, d.wiped]);
        expect(summary(JSON.parse(scan ?? '') as Report)).toEqual([
          ['/dev/vdb', 'ours', 3, false],
          ['/dev/vdc', 'ours', null, false],
          ['/dev/vdd', 'foreign', 1, false],
        ]);
        const wiped = JSON.parse(wipe ?? '') as Report;
        expect(summary(wiped)).toEqual([
          ['/dev/vdb', 'ours', 3, true],
          ['/dev/vdc', 'ours', null, true],
          ['/dev/vdd', 'foreign', 1, false],
        ]);
        expect(wiped.failures).toEqual([]);
        // nothing of this cluster is left; the other cluster's OSD is still there
        expect(summary(JSON.parse(again ?? '') as Report)).toEqual([['/dev/vdd', 'foreign', 1, false]]);
        expect(owners?.trim().split('\n')).toEqual(['/dev/vdb 0:disk', '/dev/vdc 0:disk', '/dev/vdd 64045:root']);

        expect((await readAt(join(tmp, 'vdb.img'), 10 * 1024 ** 2, 0)).every((b) => b === 0)).toBe(true);
        expect((await readAt(join(tmp, 'vdb.img'), 4096, 1024 ** 3)).every((b) => b === 0)).toBe(true);
        expect((await readAt(join(tmp, 'vdc.img'), 10 * 1024 ** 2, 0)).every((b) => b === 0)).toBe(true);
        expect(await readAt(join(tmp, 'vdd.img'), 4096, 0)).toEqual(before.vdd);
        expect(await readAt(join(tmp, 'vde.img'), 4096, 1024)).toEqual(before.vde);
        const blkid = await run('blkid', ['-p', '-o', 'value', '-s', 'TYPE', join(tmp, 'vde.img')], tmp, { ...process.env, PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` });
        expect(blkid.stdout.trim()).toBe('ext4');
      } finally {
        for (const loop of loops) await run('losetup', ['-d', loop], tmp, process.env);
      }
    },
    120_000,
  );
});
