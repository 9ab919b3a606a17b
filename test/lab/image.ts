/**
 * Lab host images: Debian root file systems built with debootstrap, cached under
 * `/var/cache/carapace-lab/images/NAME-KEY/` where KEY hashes everything the image is made of
 * (so changing the package list builds a new image).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  CGROUP_WRAPPER,
  cgroupRoots,
  exists,
  killCgroups,
  listMounts,
  removeCgroupTree,
  removeTree,
  run,
  tail,
  waitForExit,
  which,
  withFileLock,
} from './sys.js';
import { VM_RECIPE_VERSION, customizeVmRoot, makeVmDisk } from './vm-image.js';
import type { VmBootFiles } from './vm-image.js';

/** Root of the lab's image cache. */
export const LAB_CACHE_DIR = process.env.CARAPACE_LAB_CACHE ?? '/var/cache/carapace-lab';

/** Packages of the base image (debootstrap `--include`). */
export const BASE_PACKAGES: readonly string[] = [
  'systemd',
  'systemd-sysv',
  'openssh-server',
  'python3',
  'dbus',
  'iproute2',
  'sudo',
  'curl',
  'cloud-init',
  'ca-certificates',
];

/**
 * Added to every debootstrap `--include`: debootstrap does not resolve virtual packages, and
 * python3-cryptography (pulled in by cloud-init) depends on ones only python3-cffi-backend provides.
 */
const DEBOOTSTRAP_RESOLVER_HELP = ['python3-cffi-backend'];

/** Bump when {@link customizeBase} or the derived-image recipe changes: images are rebuilt. */
const RECIPE_VERSION = 2;

/** resolv.conf of a host without a DNS server: nothing listens on 127.0.0.1:53, so lookups fail fast. */
export const NO_DNS_RESOLV_CONF =
  '# carapace lab: no DNS server (lab hosts are in /etc/hosts)\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n';

const DEFAULT_SUITE = 'bookworm';

/**
 * The Debian mirror of this machine's apt configuration (the lab builds its image from the
 * same mirror the machine installs from): `CARAPACE_LAB_MIRROR` when set, else the first
 * `deb` source of the suite's main component in /etc/apt/sources.list.d/*.sources (deb822) or
 * /etc/apt/sources.list, skipping security archives.
 */
export function aptMirror(suite: string, aptDir = '/etc/apt'): string {
  const configured = process.env.CARAPACE_LAB_MIRROR;
  if (configured) return configured;
  const found: string[] = [];
  const sourcesDir = join(aptDir, 'sources.list.d');
  const files = existsSync(sourcesDir) ? readdirSync(sourcesDir).filter((f) => f.endsWith('.sources')).sort() : [];
  for (const file of files) {
    for (const stanza of readFileSync(join(sourcesDir, file), 'utf8').split(/\n\s*\n/)) {
      const field = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
      if (/^enabled:\s*no/im.test(stanza)) continue;
      if (field('Types').includes('deb') && field('Suites').includes(suite) && field('Components').includes('main')) found.push(...field('URIs'));
    }
  }
  const list = join(aptDir, 'sources.list');
  if (existsSync(list)) {
    for (const line of readFileSync(list, 'utf8').split('\n')) {
      const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)$/.exec(line.trim());
      if (m?.[1] && m[2] === suite && (m[3] ?? '').split(/\s+/).includes('main')) found.push(m[1]);
    }
  }
  const mirror = found.find((uri) => !/security/.test(uri));
  if (!mirror) throw new Error(`no Debian mirror for ${suite} in ${aptDir}: set CARAPACE_LAB_MIRROR`);
  return mirror.replace(/\/+$/, '');
}

/** Units that slow the boot of a lab host, fail in a container or do things a lab host must not do. */
const MASKED_UNITS = [
  'console-getty.service',
  'container-getty@.service',
  'getty@.service',
  'serial-getty@.service',
  'getty-static.service',
  'systemd-networkd-wait-online.service',
  'apt-daily.timer',
  'apt-daily-upgrade.timer',
  'dpkg-db-backup.timer',
  'e2scrub_all.timer',
  'e2scrub_reap.service',
  'fstrim.timer',
  'man-db.timer',
  'systemd-pstore.service',
];

export interface ImageOptions {
  /** Image name (default `base`); required with `extraPackages`. */
  name?: string;
  suite?: string;
  mirror?: string;
  /** debootstrap `--include` of the base image (default {@link BASE_PACKAGES}). */
  packages?: readonly string[];
  /**
   * Packages apt-get installs on top of the base image (which is built first), for larger
   * variants, e.g. `{ name: 'ceph', extraPackages: ['ceph-mon', 'ceph-mgr', 'ceph-osd', 'udev'] }`.
   */
  extraPackages?: readonly string[];
  /** Shell commands run in the derived image after `extraPackages` are installed (e.g. disabling units). */
  postInstall?: string;
  /** The image this one is derived from (default: the base image), e.g. the Ceph image for the VM image. */
  from?: ImageOptions;
  /**
   * Make the image bootable as a virtual machine: kernel and initramfs copied out, and a raw
   * ext4 disk of the root file system (`LabImage.vm`). Its packages must include a kernel.
   */
  vm?: boolean;
  /** Bound on building (default 30 minutes) and on waiting for another process's build. */
  timeoutMs?: number;
  /** Progress messages (default: to stderr). */
  log?: (line: string) => void;
}

/** What an image is made of; its hash names the image directory. */
export interface ImageSpec {
  recipe: number;
  suite: string;
  mirror: string;
  packages: string[];
  extraPackages: string[];
  /** Absent (not hashed) when there is none, so images without it keep their key. */
  postInstall?: string;
  /** `NAME-KEY` of the image this one is derived from, when it is not the base image. */
  parent?: string;
  /** The VM recipe's version, for VM images. */
  vm?: number;
}

/** A built image. */
export interface LabImage {
  name: string;
  /** Hash of {@link spec}. */
  key: string;
  /** `LAB_CACHE_DIR/images/NAME-KEY` */
  dir: string;
  /** The root file system: the lower layer of the hosts' overlays, or what they copy. */
  rootfs: string;
  spec: ImageSpec;
  builtAt: string;
  buildSeconds: number;
  /** VM images: the files QEMU boots. */
  vm?: VmBootFiles;
}

export function defaultLog(line: string): void {
  process.stderr.write(`[carapace-lab] ${line}\n`);
}

function imagesDir(): string {
  return join(LAB_CACHE_DIR, 'images');
}

function resolveSpec(opts: ImageOptions): { name: string; spec: ImageSpec } {
  const extra = [...new Set(opts.extraPackages ?? [])].sort();
  if (extra.length > 0 && (opts.name === undefined || opts.name === 'base'))
    throw new Error('ensureImage: an image with extraPackages needs a name of its own (e.g. "ceph")');
  const name = opts.name ?? 'base';
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(name)) throw new Error(`ensureImage: bad image name ${JSON.stringify(name)}`);
  return {
    name,
    spec: {
      recipe: RECIPE_VERSION,
      suite: opts.suite ?? DEFAULT_SUITE,
      mirror: opts.mirror ?? aptMirror(opts.suite ?? DEFAULT_SUITE),
      packages: [...new Set([...(opts.packages ?? BASE_PACKAGES), ...DEBOOTSTRAP_RESOLVER_HELP])].sort(),
      extraPackages: extra,
      ...(opts.postInstall ? { postInstall: opts.postInstall } : {}),
      ...(opts.from ? { parent: imageId(opts.from) } : {}),
      ...(opts.vm ? { vm: VM_RECIPE_VERSION } : {}),
    },
  };
}

function specKey(spec: ImageSpec): string {
  return createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 12);
}

/** `NAME-KEY` of the image `opts` describes (its directory's name in the cache). */
export function imageId(opts: ImageOptions): string {
  const { name, spec } = resolveSpec(opts);
  return `${name}-${specKey(spec)}`;
}

async function readImage(dir: string): Promise<LabImage | undefined> {
  try {
    const image = JSON.parse(await readFile(join(dir, 'image.json'), 'utf8')) as LabImage;
    if (!(await exists(join(image.rootfs, 'usr/lib/systemd/systemd')))) return undefined;
    if (image.spec.vm !== undefined && !(image.vm && (await exists(image.vm.disk)))) return undefined;
    return image;
  } catch {
    return undefined;
  }
}

const building = new Map<string, Promise<LabImage>>();

/**
 * Returns the image described by `opts`, building it first if it is not in the cache. Safe to
 * call from concurrent processes: one builds (into a temporary directory renamed into place
 * when complete) while the others wait on a lock. Building the base image takes a few minutes.
 */
export function ensureImage(opts: ImageOptions = {}): Promise<LabImage> {
  const { name, spec } = resolveSpec(opts);
  const key = specKey(spec);
  const memoKey = `${name}-${key}`;
  let p = building.get(memoKey);
  if (!p) {
    p = ensureImageUncached(name, key, spec, opts);
    building.set(memoKey, p);
    p.catch(() => building.delete(memoKey));
  }
  return p;
}

async function ensureImageUncached(name: string, key: string, spec: ImageSpec, opts: ImageOptions): Promise<LabImage> {
  const log = opts.log ?? defaultLog;
  const timeoutMs = opts.timeoutMs ?? 30 * 60_000;
  const dir = join(imagesDir(), `${name}-${key}`);
  const ready = await readImage(dir);
  if (ready) return ready;
  if (process.getuid?.() !== 0) throw new Error('building a lab image needs root');
  await mkdir(imagesDir(), { recursive: true });
  return withFileLock(join(imagesDir(), `${name}.lock`), timeoutMs, `building lab image ${name}`, async () => {
    const again = await readImage(dir);
    if (again) return again;
    // We hold the lock: any build directory of this name is a crashed build's.
    for (const e of await readdir(imagesDir())) {
      if (!e.startsWith(`.build-${name}-`)) continue;
      await killBuilder(join(imagesDir(), e));
      await removeTree(join(imagesDir(), e));
    }

    const started = Date.now();
    const build = join(imagesDir(), `.build-${name}-${key}-${process.pid}`);
    const rootfs = join(build, 'rootfs');
    await mkdir(build, { recursive: true });
    try {
      if (spec.extraPackages.length === 0) {
        log(`building lab image ${name}-${key} with debootstrap (takes a few minutes)…`);
        await debootstrap(spec, rootfs, join(build, 'build.log'), timeoutMs);
        await customizeBase(rootfs);
      } else {
        const parentOpts: ImageOptions = opts.from ?? { name: 'base', extraPackages: [], postInstall: undefined, vm: false, from: undefined };
        const base = await ensureImage({ log: opts.log, timeoutMs: opts.timeoutMs, mirror: opts.mirror, suite: opts.suite, packages: opts.packages, ...parentOpts });
        log(`building lab image ${name}-${key}: ${base.name} + ${spec.extraPackages.join(' ')}…`);
        await run('cp', ['-a', '--reflink=auto', base.rootfs, rootfs]);
        await aptInstall(rootfs, spec.extraPackages, spec.postInstall, join(build, 'build.log'), timeoutMs);
      }
      const final = join(imagesDir(), `${name}-${key}`);
      let vm: VmBootFiles | undefined;
      if (spec.vm !== undefined) {
        const diskStarted = Date.now();
        await customizeVmRoot(rootfs);
        vm = await makeVmDisk(rootfs, build, final);
        log(`lab image ${name}-${key}: VM disk made in ${((Date.now() - diskStarted) / 1000).toFixed(1)}s (kernel ${vm.kernelRelease})`);
      }
      const image: LabImage = {
        name,
        key,
        dir: final,
        rootfs: join(final, 'rootfs'),
        spec,
        builtAt: new Date().toISOString(),
        buildSeconds: Math.round((Date.now() - started) / 100) / 10,
        ...(vm ? { vm } : {}),
      };
      await writeFile(join(build, 'image.json'), `${JSON.stringify(image, null, 2)}\n`);
      await rename(build, final);
      log(`lab image ${name}-${key} built in ${image.buildSeconds}s`);
      await removeOldVersions(name, final, log);
      return image;
    } catch (err) {
      await removeTree(build).catch(() => undefined);
      throw err;
    }
  });
}

async function debootstrap(spec: ImageSpec, rootfs: string, logFile: string, timeoutMs: number): Promise<void> {
  if (!(await which('debootstrap'))) throw new Error('debootstrap is not installed (apt-get install -y debootstrap)');
  const args = ['--variant=minbase', `--include=${spec.packages.join(',')}`, spec.suite, rootfs, spec.mirror];
  const pidFile = join(dirname(rootfs), 'builder.pid');
  const r = await run('debootstrap', args, {
    check: false,
    detached: true,
    timeoutMs,
    // so that a later build can stop this one's process group if this process dies meanwhile
    onSpawn: (pid) => void writeFile(pidFile, String(pid)).catch(() => undefined),
  });
  await writeFile(logFile, r.stdout + r.stderr);
  if (r.exitCode !== 0) {
    let inner = '';
    try {
      inner = tail(await readFile(join(rootfs, 'debootstrap/debootstrap.log'), 'utf8'), 40);
    } catch {
      // no inner log
    }
    throw new Error(
      `debootstrap ${args.join(' ')} failed (exit ${String(r.exitCode)}, signal ${String(r.signal)}):\n${tail(r.stdout + r.stderr, 20)}\n--- debootstrap.log:\n${inner}`,
    );
  }
}

/** Kills the process group of a crashed build's debootstrap if it still runs. */
async function killBuilder(build: string): Promise<void> {
  let pid: number;
  try {
    pid = Number(await readFile(join(build, 'builder.pid'), 'utf8'));
    if (!(await readFile(`/proc/${pid}/cmdline`, 'utf8')).includes('debootstrap')) return;
  } catch {
    return;
  }
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone
  }
  await waitForExit(pid, undefined, 10_000);
}

/** Makes a fresh debootstrap tree a fast-booting, quiet lab host with no host identity of its own. */
async function customizeBase(rootfs: string): Promise<void> {
  const etc = join(rootfs, 'etc');
  for (const unit of MASKED_UNITS) {
    const p = join(etc, 'systemd/system', unit);
    await rm(p, { force: true });
    await symlink('/dev/null', p);
  }
  await rm(join(etc, 'systemd/system/getty.target.wants'), { recursive: true, force: true });
  // Identity comes per host: machine-id, hostname, SSH host keys.
  await writeFile(join(etc, 'machine-id'), '');
  await writeFile(join(etc, 'hostname'), 'localhost\n');
  for (const f of await readdir(join(etc, 'ssh')))
    if (f.startsWith('ssh_host_')) await rm(join(etc, 'ssh', f), { force: true });
  // No locales in minbase: C.UTF-8 keeps cloud-init's locale module from trying to generate one.
  await writeFile(join(etc, 'default/locale'), 'LANG=C.UTF-8\n');
  await writeFile(
    join(etc, 'cloud/cloud.cfg.d/90-carapace-lab.cfg'),
    [
      '# carapace lab: seeds come from /var/lib/cloud/seed/nocloud; nothing to probe on a network.',
      'datasource_list: [ NoCloud, None ]',
      '# The lab configures eth0 from outside the container.',
      'network: {config: disabled}',
      '',
    ].join('\n'),
  );
  await writeFile(
    join(etc, 'ssh/sshd_config.d/90-carapace-lab.conf'),
    [
      '# carapace lab: host keys are made per host (no RSA: it is slow to generate and nothing needs it)',
      'HostKey /etc/ssh/ssh_host_ed25519_key',
      'HostKey /etc/ssh/ssh_host_ecdsa_key',
      'UseDNS no',
      'MaxStartups 100:30:200',
      '',
    ].join('\n'),
  );
  // No DNS in the lab: lookups must fail at once instead of timing out on the machine's resolver.
  await rm(join(etc, 'resolv.conf'), { force: true });
  await writeFile(join(etc, 'resolv.conf'), NO_DNS_RESOLV_CONF);
  const debs = join(rootfs, 'var/cache/apt/archives');
  for (const f of await readdir(debs)) if (f.endsWith('.deb')) await rm(join(debs, f), { force: true });
}

/** apt-get installs `packages` into `rootfs`, run in a (non-booted) container with the machine's network. */
async function aptInstall(rootfs: string, packages: readonly string[], postInstall: string | undefined, logFile: string, timeoutMs: number): Promise<void> {
  const policy = join(rootfs, 'usr/sbin/policy-rc.d');
  await writeFile(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 });
  const machine = `carlab-build-${process.pid}`;
  const cgroups = (await cgroupRoots()).map((r) => join(r, 'carapace-lab', machine));
  for (const c of cgroups) await mkdir(c, { recursive: true });
  const script = [
    'set -e',
    'export DEBIAN_FRONTEND=noninteractive',
    'apt-get update',
    `apt-get install -y --no-install-recommends ${packages.join(' ')}`,
    'apt-get clean',
    'rm -rf /var/lib/apt/lists/*',
    ...(postInstall ? [postInstall] : []),
  ].join('\n');
  try {
    const r = await run(
      '/bin/sh',
      [
        '-c',
        CGROUP_WRAPPER,
        'carlab-build',
        'systemd-nspawn',
        '-D',
        rootfs,
        '--register=no',
        '--keep-unit',
        '-M',
        machine,
        '--as-pid2',
        '--resolv-conf=replace-host',
        '--console=pipe',
        '-q',
        '/bin/sh',
        '-c',
        script,
      ],
      {
        check: false,
        timeoutMs,
        env: { ...process.env, CARLAB_CGROUP_PROCS: cgroups.map((c) => join(c, 'cgroup.procs')).join(' ') },
      },
    );
    await writeFile(logFile, r.stdout + r.stderr);
    if (r.exitCode !== 0) throw new Error(`installing ${packages.join(' ')} failed (exit ${String(r.exitCode)}):\n${tail(r.stdout + r.stderr, 30)}`);
  } finally {
    await killCgroups(cgroups).catch(() => undefined);
    for (const c of cgroups) await removeCgroupTree(c).catch(() => undefined);
    await rm(policy, { force: true });
  }
}

/** Removes older versions of image `name` that no running host uses as an overlay layer. */
async function removeOldVersions(name: string, keep: string, log: (line: string) => void): Promise<void> {
  const re = new RegExp(`^${name}-[0-9a-f]{12}$`);
  const inUse = (await listMounts()).filter((m) => m.fsType === 'overlay').map((m) => m.superOptions);
  for (const e of await readdir(imagesDir())) {
    const dir = join(imagesDir(), e);
    if (!re.test(e) || dir === keep) continue;
    if (inUse.some((o) => o.includes(`${dir}/`))) continue;
    log(`removing old lab image ${e}`);
    await removeTree(dir);
  }
}
