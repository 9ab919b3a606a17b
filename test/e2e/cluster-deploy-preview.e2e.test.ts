// A preview of cluster_deploy (issue 31): `ansible-playbook --check --diff` on three fresh lab
// hosts (the lab's base image: systemd-nspawn containers with sshd and python3, no Ceph), the
// way the runner runs it (an inventory script keyed by IP, every string of the configuration
// unsafe). It must run through, list the packages it would install, the files it would write
// (ceph.conf's content as a diff) and the daemons it would create, and change nothing on any
// host: the checksums of /etc and the package list are the same before and after.
import { rmSync } from 'node:fs';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ansibleContentDir, PLAYBOOK_ENTRY_POINT, SHARED_ANSIBLE_CONTENT } from '@carapace/playbooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLab, generateKeyPair, type KeyPair, type Lab, type LabHost } from '../lab/lab.js';
import { run } from '../lab/sys.js';

const playbook = join(ansibleContentDir('cluster_deploy'), PLAYBOOK_ENTRY_POINT);
const FSID = '6c1d4d4e-4b8e-4a8f-9a59-3e2a4b7f0c21';
const DISK_BYTES = 2 * 1024 ** 3;

/** What must not change on a host: every entry of /etc (type, mode, owner, link target, checksum), the packages, /var/lib/ceph. */
const SNAPSHOT = [
  "find /etc -xdev -printf '%p %y %m %u:%g %l\\n' | sort",
  "find /etc -xdev -type f -print0 | sort -z | xargs -0 sha256sum",
  "dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n'",
  'ls -la /var/lib/ceph 2>&1 || true',
  'systemctl list-unit-files --no-legend "ceph*" | sort',
].join('; echo ----; ');

/** Marks every string unsafe, as the runner does (`apps/runner/src/executor/inventory-vars.ts`). */
function unsafe(value: unknown): unknown {
  if (typeof value === 'string') return { __ansible_unsafe: value };
  if (Array.isArray(value)) return value.map(unsafe);
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, unsafe(v)]));
  return value;
}

/** What the runner writes into its work dir: the inventory behind a script, the variables, an empty ansible.cfg. */
async function writeRunInputs(dir: string, inventory: Record<string, unknown>, globalVars: Record<string, unknown>): Promise<void> {
  await writeFile(join(dir, 'ansible.cfg'), '');
  await writeFile(join(dir, 'inventory.json'), JSON.stringify(unsafe(inventory)));
  await writeFile(join(dir, 'inventory.sh'), `#!/bin/sh\nexec cat -- "\${0%/*}/inventory.json"\n`);
  await chmod(join(dir, 'inventory.sh'), 0o755);
  await writeFile(join(dir, 'vars.json'), JSON.stringify(unsafe(globalVars)));
}

/** The machine's environment without its ANSIBLE_* settings, Ansible's paths in dir, the shared content as the runner's ansible.cfg gives it. */
function ansibleEnv(dir: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('ANSIBLE_')));
  return {
    ...env,
    ANSIBLE_CONFIG: join(dir, 'ansible.cfg'),
    ANSIBLE_HOME: join(dir, 'ansible-home'),
    ANSIBLE_LOCAL_TEMP: join(dir, 'local-tmp'),
    ANSIBLE_NOCOLOR: '1',
    ANSIBLE_RETRY_FILES_ENABLED: '0',
    ANSIBLE_HOST_KEY_CHECKING: 'False',
    ANSIBLE_ROLES_PATH: SHARED_ANSIBLE_CONTENT.roles,
    ANSIBLE_LIBRARY: SHARED_ANSIBLE_CONTENT.library,
    ANSIBLE_MODULE_UTILS: SHARED_ANSIBLE_CONTENT.moduleUtils,
  };
}

describe('cluster_deploy in check mode on three fresh hosts', () => {
  let lab: Lab;
  let key: KeyPair;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'carapace-deploy-preview-'));
    key = await generateKeyPair(dir);
    lab = await createLab({ name: 'deploy-preview', hosts: [{ disks: [DISK_BYTES] }, { disks: [DISK_BYTES] }, { disks: [DISK_BYTES] }], sshKey: key });
  }, 40 * 60_000);

  afterAll(async () => {
    await lab?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  function snapshot(host: LabHost): Promise<string> {
    return host.exec(SNAPSHOT, { timeoutMs: 120_000 }).then((r) => r.stdout);
  }

  it('lists the packages, ceph.conf as a diff and the daemons it would create, and changes nothing', async () => {
    const hosts = [...lab.hosts];
    const disk = (h: LabHost) => h.disks[0]?.device ?? '/dev/vdb';
    const hostVars = (h: LabHost) => ({
      ansible_user: 'root',
      ansible_ssh_private_key_file: key.privateKeyPath,
      ansible_ssh_common_args: '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes',
      ansible_python_interpreter: '/usr/bin/python3',
      carapace_osd_devices: [disk(h)],
    });
    const ips = hosts.map((h) => h.ip);
    const inventory = {
      all: { hosts: ips },
      mons: { hosts: ips },
      mgrs: { hosts: ips },
      osds: { hosts: ips },
      _meta: { hostvars: Object.fromEntries(hosts.map((h) => [h.ip, hostVars(h)])) },
    };
    const globalVars = {
      fsid: FSID,
      cluster: 'ceph',
      carapace_cluster_name: 'preview',
      dmcrypt: false,
      mon_count: 3,
      public_network: '10.77.0.0/24',
      cluster_network: '10.77.0.0/24',
      ceph_repository: 'distribution',
      osd_objectstore: 'bluestore',
    };
    await writeRunInputs(dir, inventory, globalVars);
    const before = await Promise.all(hosts.map(snapshot));

    const result = await run('ansible-playbook', ['--check', '--diff', '-v', '-i', 'inventory.sh', '-e', '@vars.json', playbook], { cwd: dir, env: ansibleEnv(dir), timeoutMs: 15 * 60_000, check: false });
    const out = result.stdout;
    expect(result.exitCode, `${out.slice(-6000)}\n${result.stderr}`).toBe(0);
    for (const ip of ips) expect(out).toMatch(new RegExp(`${ip.replace(/\./g, '\\.')}\\s+: ok=\\d+\\s+changed=\\d+\\s+unreachable=0\\s+failed=0`));

    // the packages (with their dependencies) apt-get would install, from the hosts' package lists
    const packages = out.slice(out.lastIndexOf('TASK [ceph_common : Install the Ceph packages]'));
    expect(packages).toContain('after: packages apt-get would install');
    expect(packages).toMatch(/\+ceph-mon 16\.2\.\d+/);
    expect(packages).toMatch(/\+librados2 16\.2\.\d+/);
    expect(packages).toMatch(/changed: \[10\.77\.0\.\d+\] => \{.*"install ceph-osd 16\.2\.\d+/);
    // ceph.conf, its whole content as the diff of a new file
    const conf = out.slice(out.indexOf('TASK [ceph_common : Write ceph.conf]'));
    expect(conf).toContain('after: /etc/ceph/ceph.conf');
    expect(conf).toContain(`+fsid = ${FSID}`);
    expect(conf).toMatch(/\+mon_host = \[v2:10\.77\.0\.\d+:3300,v1:10\.77\.0\.\d+:6789\]/);
    // the cluster's keys and map (no_log: not their content), the daemons
    expect(out).toMatch(/TASK \[ceph_mon : Make the cluster's keys and initial monitor map\][\s\S]*?changed: \[10\.77\.0\.\d+/);
    for (const h of hosts) {
      expect(out).toContain(`make the store of mon.${h.name} (ceph-mon --mkfs)`);
      expect(out).toContain(`start ceph-mon.target ceph-mon@${h.name}.service`);
      expect(out).toContain(`prepare a BlueStore OSD on ${disk(h)} (ceph-volume raw prepare), enable and start it`);
    }
    expect(out).toMatch(/start ceph-mgr\.target ceph-mgr@carlab\d+\.service/);
    // what it cannot know: the quorum and the health of a cluster it did not make
    expect(out).toContain('"check_mode_unknown": "python3-rados is missing');
    expect(out).not.toMatch(/key = AQ/);

    const after = await Promise.all(hosts.map(snapshot));
    for (let i = 0; i < hosts.length; i++) expect(after[i], hosts[i]?.name).toBe(before[i]);
    expect(before[0]).toContain('No such file or directory');
  }, 20 * 60_000);
});
