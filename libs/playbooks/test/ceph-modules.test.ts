// The modules written for the Ceph playbooks (libs/playbooks/ansible/library/), run by
// Ansible itself on this machine: what they can do without Ceph daemons. Their work on real
// daemons is proven by the Ceph end-to-end test (test/e2e/ceph.e2e.test.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ansibleEnv, run, scratchDirs } from './fixtures/ansible.js';
import { SHARED_ANSIBLE_CONTENT } from '../src/ansible-content.js';

const makeTmp = scratchDirs('carapace-ceph-modules-');

type Result = Record<string, any>;

/** Runs one module on localhost (`ansible -m`), its arguments as JSON; returns its result. */
async function module(tmp: string, name: string, args: Record<string, unknown>, extraEnv: NodeJS.ProcessEnv = {}): Promise<Result> {
  const env = {
    ...ansibleEnv(tmp),
    ...extraEnv,
    ANSIBLE_LOAD_CALLBACK_PLUGINS: '1',
    ANSIBLE_STDOUT_CALLBACK: 'oneline',
    ANSIBLE_PYTHON_INTERPRETER: '/usr/bin/python3',
  };
  const result = await run('ansible', ['localhost', '-i', 'localhost,', '-c', 'local', '-m', name, '-a', JSON.stringify(args)], tmp, env);
  // oneline: `localhost | CHANGED => {...}`
  const line = /^localhost \| ([A-Z!]+) => (\{.*\})$/m.exec(result.stdout);
  if (line?.[2] === undefined) throw new Error(`no result from ${name}: ${result.stdout}\n${result.stderr}`);
  return { ...(JSON.parse(line[2]) as Result), failed: line[1] === 'FAILED!' };
}

const me = userInfo().username;
const myGroup = execFileSync('id', ['-gn'], { encoding: 'utf8' }).trim();

describe('carapace_file', () => {
  it('writes a file once (atomically, its parent made), then reports nothing to change; a new mode or content is a change', async () => {
    const tmp = await makeTmp();
    const dest = join(tmp, 'etc', 'ceph', 'ceph.conf');
    const args = { dest, content: '[global]\nfsid = x\n', mode: '0640', owner: me, group: myGroup };

    const first = await module(tmp, 'carapace_file', args);
    expect(first.changed, JSON.stringify(first)).toBe(true);
    expect(await readFile(dest, 'utf8')).toBe('[global]\nfsid = x\n');
    expect((await stat(dest)).mode & 0o7777).toBe(0o640);

    const again = await module(tmp, 'carapace_file', args);
    expect(again.changed).toBe(false);

    expect((await module(tmp, 'carapace_file', { ...args, mode: '0644' })).changed).toBe(true);
    expect((await stat(dest)).mode & 0o7777).toBe(0o644);
    expect((await module(tmp, 'carapace_file', { ...args, mode: '0644', content: 'other\n' })).changed).toBe(true);
    expect(await readFile(dest, 'utf8')).toBe('other\n');
    // no temporary file left beside it
    expect(await readdir(join(tmp, 'etc', 'ceph'))).toEqual(['ceph.conf']);
  }, 60_000);

  it('refuses a mode that is not octal, and an unknown owner, without writing', async () => {
    const tmp = await makeTmp();
    const dest = join(tmp, 'f');
    const bad = await module(tmp, 'carapace_file', { dest, content: 'x', mode: 'rw-r--r--' });
    expect(bad.failed).toBe(true);
    expect(bad.msg).toContain('mode must be octal');
    const owner = await module(tmp, 'carapace_file', { dest, content: 'x', owner: 'no-such-user-carapace' });
    expect(owner.failed).toBe(true);
    expect(owner.msg).toContain(dest);
    expect(existsSync(dest)).toBe(false);
  }, 60_000);
});

/** Whether this machine's kernel has device-mapper, as the module decides it. */
function deviceMapperHere(): boolean {
  const listed = ['/proc/misc', '/proc/devices'].some((p) => /\bdevice-mapper\b/.test(readFileSync(p, 'utf8')));
  let control = false;
  try {
    control = statSync('/dev/mapper/control').isCharacterDevice();
  } catch {
    control = false;
  }
  return listed && control;
}

describe('carapace_ceph_host', () => {
  it('returns the facts the roles use, device-mapper and the OSD mode, and the missing packages; changes nothing', async () => {
    const tmp = await makeTmp();
    const result = await module(tmp, 'carapace_ceph_host', {
      daemon_address: '10.0.0.11',
      packages: ['coreutils', 'carapace-no-such-package'],
    });
    expect(result.failed, JSON.stringify(result)).toBeFalsy();
    expect(result.changed).toBe(false);
    expect(result.ansible_facts.hostname).toBe(hostname().split('.')[0]);
    expect(result.ansible_facts.os_family).toBe('Debian');
    expect(result.ansible_facts.distribution_release).toMatch(/^[a-z]+$/);
    expect(result.device_mapper).toBe(deviceMapperHere());
    expect(result.packages_missing).toEqual(['carapace-no-such-package']);
    // no OSD devices asked about: no mode chosen
    expect(result.osd_mode).toBeNull();
  }, 60_000);

  it('lists every problem of a host: device paths, devices that are not block devices, dmcrypt without device-mapper, a bad address', async () => {
    const tmp = await makeTmp();
    const dupes = await module(tmp, 'carapace_ceph_host', { osd_devices: ['/dev/vdb', '/dev/vdb'] });
    expect(dupes.failed).toBe(true);
    expect(dupes.msg).toContain('carapace_osd_devices must be distinct /dev paths, got /dev/vdb, /dev/vdb');

    const notBlock = await module(tmp, 'carapace_ceph_host', { osd_devices: ['/dev/null', '/dev/carapace-missing'], daemon_address: 'not-an-ip' });
    expect(notBlock.failed).toBe(true);
    expect(notBlock.msg).toContain('not block devices: /dev/null, /dev/carapace-missing');
    expect(notBlock.msg).toContain('a monitor needs an IPv4 address and a plain host name; this host has not-an-ip');
    expect(notBlock.problems).toHaveLength(2);

    const empty = await module(tmp, 'carapace_ceph_host', { osd_devices: [] });
    expect(empty.failed).toBe(true);
    expect(empty.msg).toContain('carapace_osd_devices must be distinct /dev paths');

    const dmcrypt = await module(tmp, 'carapace_ceph_host', { osd_devices: ['/dev/null'], dmcrypt: true });
    expect(dmcrypt.failed).toBe(true);
    if (deviceMapperHere()) {
      expect(dmcrypt.msg).not.toContain('dmcrypt is requested but');
    } else {
      expect(dmcrypt.msg).toContain('dmcrypt is requested but this host has no device-mapper');
      expect(dmcrypt.osd_mode).toBe('raw');
    }
  }, 60_000);
});

describe('carapace_ceph_wait', () => {
  it('refuses to run without what to wait for, or for both a number of OSDs and OSD ids', async () => {
    const tmp = await makeTmp();
    const none = await module(tmp, 'carapace_ceph_wait', { timeout: 5 });
    expect(none.failed).toBe(true);
    expect(none.msg).toContain('one of the following is required: quorum, osds, osd_ids, mgr');
    const both = await module(tmp, 'carapace_ceph_wait', { osds: 6, osd_ids: [1] });
    expect(both.failed).toBe(true);
    expect(both.msg).toContain('mutually exclusive: osds|osd_ids');
  }, 60_000);

  it('refuses to run where python3-rados is missing', async () => {
    const tmp = await makeTmp();
    const answer = await module(tmp, 'carapace_ceph_wait', { quorum: 1, timeout: 2 }, { PYTHONPATH: await standInRados(tmp, 'missing') });
    expect(answer.failed).toBe(true);
    expect(answer.msg).toContain('python3-rados is missing');
  }, 60_000);

  it('fails after its bound, with the reason and the status, when no monitor answers', async () => {
    const tmp = await makeTmp();
    const started = Date.now();
    const answer = await module(tmp, 'carapace_ceph_wait', { quorum: 3, timeout: 2, cli_timeout: 6 }, { PYTHONPATH: await standInRados(tmp, 'down') });
    expect(answer.failed).toBe(true);
    expect(answer.msg).toContain('the monitors did not reach quorum within 2 s: cannot connect to the cluster: error connecting to the cluster');
    expect(answer.status).toContain('error connecting to the cluster');
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);

  it('waits until the monitors, a manager and the OSDs are there, on one connection, and returns the status', async () => {
    const tmp = await makeTmp();
    const answer = await module(tmp, 'carapace_ceph_wait', { quorum: 3, mgr: true, osds: 2, timeout: 30 }, { PYTHONPATH: await standInRados(tmp, 'coming') });
    expect(answer.failed, JSON.stringify(answer)).toBe(false);
    expect(answer.changed).toBe(false);
    expect(answer.detail).toBe('2 OSDs, 2 up and in, 2 expected');
    expect(answer.status).toBe('HEALTH_OK (stand-in)');
    // three polls of the quorum, the manager, the OSDs and their answers: one connection
    expect(await readFile(join(tmp, 'connections'), 'utf8')).toBe('1');
  }, 60_000);

  it('fails naming the OSDs that are up and in but do not answer', async () => {
    const tmp = await makeTmp();
    const answer = await module(tmp, 'carapace_ceph_wait', { osd_ids: [0, 1], timeout: 3 }, { PYTHONPATH: await standInRados(tmp, 'silent') });
    expect(answer.failed).toBe(true);
    expect(answer.msg).toContain('OSDs up and in but not answering within 3 s: osd.1: osd.1 does not answer');
    expect(answer.msg).not.toContain('osd.0:');
  }, 60_000);
});

/**
 * A stand-in for python3-rados (the librados binding the module uses) in `tmp/py`, for
 * PYTHONPATH: `down` never connects; `coming` reaches a quorum of 3 from the third poll on,
 * has an active manager and OSDs 0 and 1 up, in and answering; `silent` is the same except
 * that osd.1 does not answer; `missing` is a directory where `import rados` fails.
 */
async function standInRados(tmp: string, mode: 'down' | 'coming' | 'silent' | 'missing'): Promise<string> {
  const dir = join(tmp, 'py');
  await mkdir(dir);
  if (mode === 'missing') {
    await writeFile(join(dir, 'rados.py'), 'raise ImportError("no librados here")\n');
    return dir;
  }
  const code = `import json, os
MODE = ${JSON.stringify(mode)}
COUNT = os.path.join(${JSON.stringify(tmp)}, "connections")
polls = {"n": 0}


class Error(Exception):
    pass


class Rados:
    def __init__(self, conffile=None, rados_id=None):
        assert conffile == "/etc/ceph/ceph.conf" and rados_id == "admin"

    def connect(self, timeout=0):
        if MODE == "down":
            raise Error("error connecting to the cluster")
        n = int(open(COUNT).read()) if os.path.exists(COUNT) else 0
        open(COUNT, "w").write(str(n + 1))

    def shutdown(self):
        pass

    def mon_command(self, cmd, inbuf, timeout=0):
        prefix = json.loads(cmd)["prefix"]
        if prefix == "status":
            return 0, b"HEALTH_OK (stand-in)", ""
        if prefix == "quorum_status":
            polls["n"] += 1
            names = ["a", "b", "c"] if polls["n"] >= 3 else ["a"]
            return 0, json.dumps({"quorum_names": names}).encode(), ""
        if prefix == "mgr stat":
            return 0, json.dumps({"available": True, "active_name": "a"}).encode(), ""
        if prefix == "osd dump":
            return 0, json.dumps({"osds": [{"osd": 0, "up": 1, "in": 1}, {"osd": 1, "up": 1, "in": 1}]}).encode(), ""
        return -22, b"", "unknown command " + prefix

    def osd_command(self, osd, cmd, inbuf, timeout=0):
        if MODE == "silent" and osd == 1:
            raise Error("osd.1 does not answer")
        return 0, b'{"version": "16.2.15"}', ""
`;
  await writeFile(join(dir, 'rados.py'), code);
  return dir;
}

describe('carapace_ceph_conf', () => {
  const CONF = [
    '# written by cluster_deploy',
    '[global]',
    'fsid = 5f0c',
    'osd pool default size = 3',
    '',
    '; a comment of the operator',
    '[osd]',
    'osd_max_backfills = 1',
    '',
    '[client]',
    'rbd cache = true',
    '',
  ].join('\n');

  it('sets options in place or at the end of their section, adds a missing section, removes, keeps comments and order; then changes nothing', async () => {
    const tmp = await makeTmp();
    const path = join(tmp, 'ceph.conf');
    await writeFile(path, CONF, { mode: 0o640 });
    const args = {
      path,
      set: [
        { section: 'global', name: 'osd_pool_default_size', value: '2' },
        { section: 'osd', name: 'mempool_debug', value: 'true' },
        { section: 'mon', name: 'mon_allow_pool_delete', value: 'true' },
      ],
      remove: [{ section: 'client', name: 'rbd_cache' }],
    };
    const first = await module(tmp, 'carapace_ceph_conf', args);
    expect(first.failed, JSON.stringify(first)).toBe(false);
    expect(first.changed).toBe(true);
    expect(first.changes).toEqual(['global osd_pool_default_size = 2', 'osd mempool_debug = true', 'mon mon_allow_pool_delete = true', 'client rbd_cache removed']);
    expect(await readFile(path, 'utf8')).toBe(
      [
        '# written by cluster_deploy',
        '[global]',
        'fsid = 5f0c',
        'osd_pool_default_size = 2',
        '',
        '; a comment of the operator',
        '[osd]',
        'osd_max_backfills = 1',
        'mempool_debug = true',
        '',
        '[client]',
        '',
        '[mon]',
        'mon_allow_pool_delete = true',
        '',
      ].join('\n'),
    );
    expect((await stat(path)).mode & 0o7777).toBe(0o640);
    const again = await module(tmp, 'carapace_ceph_conf', args);
    expect(again.changed, JSON.stringify(again)).toBe(false);
    expect(again.changes).toEqual([]);
  }, 60_000);

  it('refuses an option without a section or with a value over two lines, and a missing file, without writing', async () => {
    const tmp = await makeTmp();
    const path = join(tmp, 'ceph.conf');
    await writeFile(path, CONF);
    const multi = await module(tmp, 'carapace_ceph_conf', { path, set: [{ section: 'osd', name: 'a', value: '1\n[mon]' }] });
    expect(multi.failed).toBe(true);
    expect(multi.msg).toContain('one-line value');
    const nameless = await module(tmp, 'carapace_ceph_conf', { path, remove: [{ name: 'a' }] });
    expect(nameless.failed).toBe(true);
    expect(nameless.msg).toContain('one-line section');
    expect(await readFile(path, 'utf8')).toBe(CONF);
    const missing = await module(tmp, 'carapace_ceph_conf', { path: join(tmp, 'none.conf'), set: [{ section: 'osd', name: 'a', value: '1' }] });
    expect(missing.failed).toBe(true);
    expect(missing.msg).toContain('cannot read');
  }, 60_000);
});

describe('carapace_ceph_options: option values compared by their Ceph type', () => {
  /** same_value(kind, a, b) of each case, by the module util itself (python3, standard library only). */
  function sameValues(cases: [string, string, string][]): boolean[] {
    const util = join(SHARED_ANSIBLE_CONTENT.moduleUtils, 'carapace_ceph_options.py');
    const script = [
      'import importlib.util, json, sys',
      `spec = importlib.util.spec_from_file_location("o", ${JSON.stringify(util)})`,
      'o = importlib.util.module_from_spec(spec); spec.loader.exec_module(o)',
      'print(json.dumps([o.same_value(k, a, b) for k, a, b in json.loads(sys.stdin.read())]))',
    ].join('\n');
    return JSON.parse(execFileSync('python3', ['-c', script], { input: JSON.stringify(cases), encoding: 'utf8' })) as boolean[];
  }

  it('the monitors\' forms and the daemons\' are the same value; other values are not', () => {
    const same: [string, string, string][] = [
      ['size', '1G', '1073741824'],
      ['size', '512Mi', '536870912'],
      ['size', '4KiB', '4096'],
      ['uint', '2k', '2000'],
      ['int', '-3', '-3'],
      ['bool', 'yes', 'true'],
      ['bool', '0', 'false'],
      ['float', '0.1', '0.100000'],
      ['secs', '1m', '60'],
      ['secs', '1h30m', '5400'],
      ['millisecs', '2s', '2000'],
      ['str', '/var/log/ceph/$cluster-$name.log', ' /var/log/ceph/$cluster-$name.log '],
    ];
    expect(sameValues(same)).toEqual(same.map(() => true));
    const different: [string, string, string][] = [
      ['size', '1G', '1000000000'],
      ['uint', '2', '3'],
      ['bool', 'true', 'false'],
      ['float', '0.1', '0.2'],
      ['secs', '1m', '61'],
      ['str', 'a', 'A'],
      ['uint', 'bogus', '2'],
    ];
    expect(sameValues(different)).toEqual(different.map(() => false));
  });
});
