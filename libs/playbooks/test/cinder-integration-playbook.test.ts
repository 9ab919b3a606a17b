// The cinder_integration Ansible content (libs/playbooks/ansible/cinder_integration/) on this
// machine, shaped like the runner's run (inventory script, unsafe vars.json, then the
// runner's own runner-vars.json), with stand-ins for `ceph` and `rbd`
// (fixtures/fake-ceph.py). Real Ceph is exercised end to end (test/e2e/ceph/cinder.checks.ts).
// Needs root because the play makes the client files owned by root.
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { ansibleEnv, run, unsafe, type RunResult } from './fixtures/ansible.js';

const playbook = fileURLToPath(new URL('../ansible/cinder_integration/playbook.yml', import.meta.url));
const fakeCeph = fileURLToPath(new URL('./fixtures/fake-ceph.py', import.meta.url));
const FSID = '0b5c2c35-6d3e-4f38-9e0b-1f1f9a6f2a11';
const CLIENTS = ['cinder', 'cinder-backup', 'glance'];

const tmps: string[] = [];

/** ansible-playbook to its end: a full run makes about 30 module calls, slow on a busy machine. */
function playbookRun(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile('ansible-playbook', args, { cwd, env, timeout: 540_000, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') reject(new Error(`ansible-playbook did not run: ${error.message}\n${stderr}`));
      else resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
    });
  });
}

afterEach(async () => {
  for (const tmp of tmps.splice(0)) await rm(tmp, { recursive: true, force: true });
});

interface Bed {
  tmp: string;
  state: string;
  filesDir: string;
  artifacts: string;
  /** ansible-playbook on the monitor; extra: its options (--check --diff for a preview). */
  play(extra?: string[]): Promise<{ code: number; out: string; changed: number }>;
}

/** A work dir like the runner's, the monitor being this machine; `globalVars` as a configuration gives them. */
async function bed(globalVars: Record<string, unknown> = {}, runnerVars = true): Promise<Bed> {
  const tmp = await mkdtemp(join(tmpdir(), 'carapace-cinder-'));
  tmps.push(tmp);
  const bin = join(tmp, 'bin');
  const artifacts = join(tmp, 'artifacts');
  const filesDir = join(tmp, 'monitor', 'etc-ceph-openstack');
  await mkdir(bin);
  await mkdir(artifacts, { mode: 0o700 });
  await symlink(fakeCeph, join(bin, 'ceph'));
  await symlink(fakeCeph, join(bin, 'rbd'));
  await writeFile(join(tmp, 'ansible.cfg'), '');
  const inventory = {
    mons: { hosts: ['10.0.0.11'] },
    _meta: {
      hostvars: {
        '10.0.0.11': {
          ansible_host: '10.0.0.11',
          ansible_connection: 'local',
          ansible_python_interpreter: '/usr/bin/python3',
          // sudo would reset PATH and lose the stand-ins; the test runs as root anyway
          ansible_become: false,
        },
      },
    },
  };
  await writeFile(join(tmp, 'inventory.json'), JSON.stringify(unsafe(inventory)));
  await writeFile(join(tmp, 'inventory.sh'), `#!/bin/sh\nexec cat -- "\${0%/*}/inventory.json"\n`);
  await chmod(join(tmp, 'inventory.sh'), 0o755);
  await writeFile(join(tmp, 'vars.json'), JSON.stringify(unsafe({ fsid: FSID, cluster: 'ceph', openstack_files_dir: filesDir, ...globalVars })));
  await writeFile(join(tmp, 'runner-vars.json'), JSON.stringify(unsafe(runnerVars ? { carapace_artifacts_dir: artifacts } : {})));
  const state = join(tmp, 'ceph-state.json');
  const env = { ...ansibleEnv(tmp), PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`, FAKE_CEPH_STATE: state, FAKE_CEPH_FSID: FSID };
  return {
    tmp,
    state,
    filesDir,
    artifacts,
    async play(extra: string[] = []) {
      const r = await playbookRun([...extra, '-i', 'inventory.sh', '-e', '@vars.json', '-e', '@runner-vars.json', playbook], tmp, env);
      const out = r.stdout + r.stderr;
      return { code: r.code, out, changed: Number(/10\.0\.0\.11\s+:.*changed=(\d+)/.exec(r.stdout)?.[1] ?? -1) };
    },
  };
}

async function cephState(b: Bed): Promise<{ pools: Record<string, Record<string, unknown>>; auth: Record<string, { key: string; caps: Record<string, string> }> }> {
  return JSON.parse(await readFile(b.state, 'utf8'));
}

describe('cinder_integration playbook', () => {
  it('passes the syntax check', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'carapace-cinder-'));
    tmps.push(tmp);
    await writeFile(join(tmp, 'ansible.cfg'), '');
    const r = await run('ansible-playbook', ['--syntax-check', '-i', 'localhost,', playbook], tmp, ansibleEnv(tmp));
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });
});

describe.skipIf(process.getuid?.() !== 0)('cinder_integration playbook with stand-in ceph and rbd', () => {
  it('previews (check mode): reads the pools and keys, creates none, writes no file, prints no key', async () => {
    const b = await bed();
    const preview = await b.play(['--check', '--diff']);
    expect(preview.code, preview.out).toBe(0);
    expect(preview.out).toMatch(/TASK \[openstack_clients : Create the pools\] \*+\nskipping: \[10\.0\.0\.11\] => \(item=volumes\)/);
    // the reads ran for real, nothing else reached the stand-in
    const calls = (await readFile(`${b.state}.calls`, 'utf8')).split('\n').filter(Boolean);
    expect(calls.filter((c) => !/^ceph (osd pool ls detail|auth get client\.|config generate-minimal-conf)/.test(c))).toEqual([]);
    await expect(stat(b.state)).rejects.toThrow();
    await expect(stat(b.filesDir)).rejects.toThrow();
    expect(await readdir(b.artifacts)).toEqual([]);
    expect(preview.out).not.toMatch(/key = |AQ[A-Za-z0-9+/]{20}/);
  }, 600_000);

  it('creates the pools and keys, hands back ceph.conf and the keyrings, prints no key; then changes nothing, and restores changed capabilities', async () => {
    const b = await bed();
    const first = await b.play();
    expect(first.code, first.out).toBe(0);
    const state = await cephState(b);
    expect(Object.keys(state.pools).sort()).toEqual(['backups', 'images', 'vms', 'volumes']);
    for (const pool of Object.values(state.pools)) expect(pool).toEqual({ rbd: {} });
    expect(state.auth['client.cinder']?.caps).toEqual({
      mon: 'profile rbd',
      osd: 'profile rbd pool=volumes, profile rbd pool=vms, profile rbd-read-only pool=images',
      mgr: 'profile rbd pool=volumes, profile rbd pool=vms',
    });
    expect(state.auth['client.glance']?.caps).toEqual({ mon: 'profile rbd', osd: 'profile rbd pool=images', mgr: 'profile rbd pool=images' });
    expect(state.auth['client.cinder-backup']?.caps).toEqual({ mon: 'profile rbd', osd: 'profile rbd pool=backups', mgr: 'profile rbd pool=backups' });
    // tasks: pools created, initialized, keys created, the directory, ceph.conf, the keyrings
    expect(first.changed, first.out).toBe(6);

    expect((await readdir(b.artifacts)).sort()).toEqual(['ceph.client.cinder-backup.keyring', 'ceph.client.cinder.keyring', 'ceph.client.glance.keyring', 'ceph.conf']);
    expect(await readFile(join(b.artifacts, 'ceph.conf'), 'utf8')).toBe(
      `# minimal ceph.conf for ${FSID}\n[global]\n\tfsid = ${FSID}\n\tmon_host = [v2:10.0.0.11:3300/0,v1:10.0.0.11:6789/0]\n`,
    );
    const keys = CLIENTS.map((c) => state.auth[`client.${c}`]?.key ?? '');
    for (const [i, c] of CLIENTS.entries()) {
      expect(await readFile(join(b.artifacts, `ceph.client.${c}.keyring`), 'utf8')).toBe(`[client.${c}]\n\tkey = ${keys[i]}\n`);
      expect((await stat(join(b.filesDir, `ceph.client.${c}.keyring`))).mode & 0o777).toBe(0o600);
    }
    expect((await stat(b.filesDir)).mode & 0o777).toBe(0o700);
    for (const key of keys) {
      expect(key).toMatch(/^AQ[A-Za-z0-9+/]{36}==$/);
      expect(first.out.includes(key), 'a key is in the output').toBe(false);
    }

    // Again, in a fresh runner directory: nothing changes, the same files come back.
    await writeFile(`${b.state}.calls`, '');
    await rm(b.artifacts, { recursive: true });
    await mkdir(b.artifacts, { mode: 0o700 });
    const second = await b.play();
    expect(second.code, second.out).toBe(0);
    expect(second.changed, second.out).toBe(0);
    // and a preview of the integration that is there: every task unchanged
    const preview = await b.play(['--check', '--diff']);
    expect(preview.code, preview.out).toBe(0);
    expect(preview.changed, preview.out).toBe(0);
    expect(await readFile(`${b.state}.calls`, 'utf8')).not.toMatch(/create|caps|init/);
    for (const [i, c] of CLIENTS.entries()) {
      expect(await readFile(join(b.artifacts, `ceph.client.${c}.keyring`), 'utf8')).toBe(`[client.${c}]\n\tkey = ${keys[i]}\n`);
    }

    // Someone changed the capabilities of client.cinder: they are set back, the key stays.
    const drifted = await cephState(b);
    const cinder = drifted.auth['client.cinder'];
    if (cinder) cinder.caps = { mon: 'allow r' };
    await writeFile(b.state, JSON.stringify(drifted));
    const third = await b.play();
    expect(third.code, third.out).toBe(0);
    expect(third.changed, third.out).toBe(1);
    const after = await cephState(b);
    expect(after.auth['client.cinder']).toEqual(state.auth['client.cinder']);
    expect(third.out.includes(keys[0] ?? '-'), 'a key is in the output').toBe(false);
  }, 1_700_000);

  it('refuses names that could leave the directories, and a run without the runner directory', async () => {
    const escaping = await bed({ openstack_clients: [{ name: '../../escape', caps: { mon: 'profile rbd' } }] });
    const r = await escaping.play();
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('pool and client names must be');
    expect(await readdir(escaping.artifacts)).toEqual([]);

    const pools = await bed({ openstack_pools: ['volumes\n'] });
    expect((await pools.play()).code).not.toBe(0);

    const noDir = await bed({}, false);
    const n = await noDir.play();
    expect(n.code).not.toBe(0);
    expect(n.out).toContain('carapace_artifacts_dir');
  }, 600_000);
});
