#!/usr/bin/env node
// `npm run package:images`: builds the OCI images carapace-control-plane, carapace-runner and
// carapace-postgres with podman, pulling from no registry. Each image is a Debian 12 root file
// system made by debootstrap (--variant=minbase, once per run, shared by the images) from the mirror of this machine's apt
// configuration, plus, for the two programs, the .deb that `npm run package` builds, installed
// with dpkg; podman builds it `FROM scratch` with one ADD of that tree. Each runs as a user of
// its own with a fixed uid (secrets mounted as files must be readable by it), keeps its
// configuration and state in volumes and has a healthcheck. See deploy/compose/README.md.
//
// An image is tagged `in-KEY`, KEY a hash of everything it is made of (the sources and the lock
// file for the programs, the packages, the mirror, this recipe): a rerun with the same inputs
// only tags `latest` again.
//
//   node scripts/package-images.js [--only control-plane|runner|postgres]... [--version VERSION] [--force]
// Needs root (debootstrap, chroot), debootstrap and podman.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCommandLine } from './cli-args.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const USAGE = 'Usage: node scripts/package-images.js [--only control-plane|runner|postgres]... [--version VERSION] [--force]';
/** Bump when the recipe below changes: every image is rebuilt. */
const RECIPE_VERSION = 1;
const SUITE = 'bookworm';
/** debootstrap's --include of every image; each image's `packages` are installed with apt on top. */
const BASE_PACKAGES = ['ca-certificates', 'libstdc++6'];
const DEB_CACHE = process.env.CARAPACE_IMAGE_CACHE ?? '/var/cache/carapace-images/debs';
/** The sources the .debs are built from: a change in them is a new image. */
const PROGRAM_INPUTS = ['apps', 'libs', 'proto', 'deploy/debian', 'scripts/package-debs.js', 'scripts/cli-args.js', 'scripts/build-if-stale.js', 'package.json', 'package-lock.json', 'tsconfig.base.json'];

const CP_HEALTH = "fetch('http://127.0.0.1:8080/v1/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))";
// Healthy once the runner's stream to a control plane is up (its Prometheus gauge says 1).
const RUNNER_HEALTH =
  "fetch('http://127.0.0.1:9464/metrics').then((r) => r.text()).then((t) => process.exit(/^carapace_runner_control_plane_connected\\{[^}]*\\} 1$/m.test(t) ? 0 : 1), () => process.exit(1))";

const POSTGRES_ENTRYPOINT = `#!/bin/sh
# carapace-postgres: PostgreSQL 15 from Debian. The first start (an empty PGDATA) creates the
# cluster: superuser \${POSTGRES_USER:-carapace} with the password of the file
# \${POSTGRES_PASSWORD_FILE:-/run/secrets/postgres_password}, a database of the same name,
# UTF-8 with code-point order (C.UTF-8), password (SCRAM) logins from the network.
set -eu
: "\${PGDATA:=/var/lib/postgresql/data}"
: "\${POSTGRES_USER:=carapace}"
: "\${POSTGRES_PASSWORD_FILE:=/run/secrets/postgres_password}"
bin=/usr/lib/postgresql/15/bin
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -r "$POSTGRES_PASSWORD_FILE" ] || { echo "carapace-postgres: cannot read $POSTGRES_PASSWORD_FILE (the superuser's password)" >&2; exit 1; }
  pw=$(mktemp)
  tr -d '\\n' <"$POSTGRES_PASSWORD_FILE" >"$pw"
  # Passwords on the socket too: the superuser is not named like the system user.
  "$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start
  PGPASSWORD=$(cat "$pw") "$bin/createdb" -h /var/run/postgresql -U "$POSTGRES_USER" "$POSTGRES_USER"
  rm -f "$pw"
  "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop
fi
exec "$bin/postgres" -D "$PGDATA" "$@"
`;

/**
 * The images. `packages`: installed with apt on the debootstrapped base (the .deb's dependencies among them);
 * `user`: created with its fixed uid before the .deb's postinst, which then keeps it.
 */
const IMAGES = {
  'control-plane': {
    name: 'carapace-control-plane',
    deb: 'control-plane',
    packages: [],
    user: { name: 'carapace', uid: 10001, home: '/var/lib/carapace/control-plane', comment: 'Carapace control plane' },
    containerfile: [
      'ENV CARAPACE_CONFIG=/etc/carapace/carapace.yaml CARAPACE_HTTP_HOST=0.0.0.0 CARAPACE_GRPC_HOST=0.0.0.0 CARAPACE_LOG_FORMAT=json',
      'VOLUME ["/var/lib/carapace/control-plane"]',
      'EXPOSE 8080 8081',
      'USER 10001:10001',
      'WORKDIR /var/lib/carapace/control-plane',
      `HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/usr/lib/carapace-control-plane/node", "-e", ${JSON.stringify(CP_HEALTH)}]`,
      'STOPSIGNAL SIGTERM',
      'ENTRYPOINT ["/usr/bin/carapace-control-plane"]',
    ],
  },
  runner: {
    name: 'carapace-runner',
    deb: 'runner',
    packages: ['ansible-core', 'openssh-client'],
    user: { name: 'carapace-runner', uid: 10002, home: '/var/lib/carapace/runner', comment: 'Carapace runner' },
    // `enroll` replaces runner.yaml atomically (a new file beside it): the user writes the directory.
    setup: 'chown carapace-runner:carapace-runner /etc/carapace',
    containerfile: [
      'ENV CARAPACE_RUNNER_CONFIG=/etc/carapace/runner.yaml CARAPACE_RUNNER_METRICS_LISTEN=127.0.0.1:9464 CARAPACE_RUNNER_LOG_FORMAT=json',
      // The configuration `enroll` writes, and the SSH key and work directory.
      'VOLUME ["/etc/carapace", "/var/lib/carapace/runner"]',
      'USER 10002:10002',
      'WORKDIR /var/lib/carapace/runner',
      `HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["/usr/lib/carapace-runner/node", "-e", ${JSON.stringify(RUNNER_HEALTH)}]`,
      'STOPSIGNAL SIGTERM',
      'ENTRYPOINT ["/usr/bin/carapace-runner"]',
    ],
  },
  postgres: {
    name: 'carapace-postgres',
    deb: null,
    packages: ['postgresql-15'],
    user: { name: 'postgres', uid: 10003, home: '/var/lib/postgresql', comment: 'PostgreSQL administrator' },
    containerfile: [
      'ENV PGDATA=/var/lib/postgresql/data',
      'VOLUME ["/var/lib/postgresql/data"]',
      'EXPOSE 5432',
      'USER 10003:10003',
      'HEALTHCHECK --interval=5s --timeout=5s --start-period=30s --retries=12 CMD ["/usr/lib/postgresql/15/bin/pg_isready", "-h", "127.0.0.1"]',
      'STOPSIGNAL SIGINT',
      'ENTRYPOINT ["/usr/local/bin/carapace-postgres"]',
    ],
  },
};

function fail(message) {
  process.stderr.write(`package-images: ${message}\n`);
  process.exit(2);
}

function log(message) {
  process.stderr.write(`package-images: ${message}\n`);
}

/** The first `deb` source of SUITE main in this machine's apt configuration (not a security archive); CARAPACE_IMAGE_MIRROR overrides it. */
function aptMirror(aptDir = '/etc/apt') {
  if (process.env.CARAPACE_IMAGE_MIRROR) return process.env.CARAPACE_IMAGE_MIRROR;
  const found = [];
  const dir = join(aptDir, 'sources.list.d');
  for (const file of existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.sources')).sort() : []) {
    for (const stanza of readFileSync(join(dir, file), 'utf8').split(/\n\s*\n/)) {
      const field = (name) => new RegExp(`^${name}:\\s*(.+)$`, 'mi').exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
      if (/^enabled:\s*no/im.test(stanza)) continue;
      if (field('Types').includes('deb') && field('Suites').includes(SUITE) && field('Components').includes('main')) found.push(...field('URIs'));
    }
  }
  const list = join(aptDir, 'sources.list');
  if (existsSync(list)) {
    for (const line of readFileSync(list, 'utf8').split('\n')) {
      const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)$/.exec(line.trim());
      if (m && m[2] === SUITE && m[3].split(/\s+/).includes('main')) found.push(m[1]);
    }
  }
  const mirror = found.find((uri) => !/security/.test(uri));
  if (!mirror) fail(`no Debian mirror for ${SUITE} in ${aptDir}: set CARAPACE_IMAGE_MIRROR`);
  return mirror.replace(/\/+$/, '');
}

/** Hash of the content of the files under `paths` that git knows or would add (tracked and untracked, not ignored). */
function sourcesHash(paths) {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...paths], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\0')
    .filter(Boolean)
    .sort();
  const h = createHash('sha256');
  for (const file of files) {
    const path = join(ROOT, file);
    if (!existsSync(path)) continue; // deleted in the work tree
    h.update(file).update('\0').update(readFileSync(path)).update('\0');
  }
  return h.digest('hex');
}

function podman(args, opts = {}) {
  return execFileSync('podman', args, { encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'inherit'], ...opts });
}

function imageExists(ref) {
  try {
    execFileSync('podman', ['image', 'exists', ref], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function chroot(rootfs, script) {
  execFileSync('chroot', [rootfs, '/bin/sh', '-euc', script], { stdio: ['ignore', 'inherit', 'inherit'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DEBIAN_FRONTEND: 'noninteractive', LC_ALL: 'C' } });
}

/**
 * The debootstrapped base every image starts from, made once per run (a tar in `dir`): the
 * images of one run share it, and a later run makes a new one (its packages current).
 */
function baseTree(mirror, dir) {
  const tar = join(dir, 'base.tar');
  if (existsSync(tar)) return tar;
  const rootfs = join(dir, 'base');
  log(`debootstrap ${SUITE} (the base of the images)...`);
  // The downloaded .debs are kept for the next build.
  mkdirSync(DEB_CACHE, { recursive: true });
  execFileSync('debootstrap', ['--variant=minbase', `--cache-dir=${DEB_CACHE}`, `--include=${BASE_PACKAGES.join(',')}`, SUITE, rootfs, mirror], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('tar', ['--numeric-owner', '--xattrs', '-C', rootfs, '-cf', tar, '.']);
  rmSync(rootfs, { recursive: true, force: true });
  return tar;
}

function buildImage(spec, { key, mirror, version, work, base }) {
  const rootfs = join(work, 'rootfs');
  const started = Date.now();
  log(`${spec.name}: the base, then ${spec.packages.join(' ') || 'nothing more'}...`);
  mkdirSync(rootfs);
  execFileSync('tar', ['--numeric-owner', '--xattrs', '--xattrs-include=*', '-C', rootfs, '-xf', baseTree(mirror, base)]);
  if (spec.packages.length > 0) {
    // apt rather than debootstrap's --include: debootstrap does not resolve virtual packages
    // (ansible-core's python3 dependencies need some).
    // policy-rc.d: no maintainer script may start a service (postgresql's would, on this machine).
    execFileSync('cp', ['/etc/resolv.conf', join(rootfs, 'etc', 'resolv.conf')]);
    writeFileSync(join(rootfs, 'usr', 'sbin', 'policy-rc.d'), '#!/bin/sh\nexit 101\n', { mode: 0o755 });
    chroot(rootfs, `apt-get update -q && apt-get install -y -q --no-install-recommends ${spec.packages.join(' ')}`);
    rmSync(join(rootfs, 'usr', 'sbin', 'policy-rc.d'));
    writeFileSync(join(rootfs, 'etc', 'resolv.conf'), '');
  }
  const u = spec.user;
  if (u.name === 'postgres') {
    // postgresql-common made the user with the next free system uid: give it the image's.
    // The cluster `main` the package made: the image makes its own in its volume at first start.
    chroot(rootfs, 'rm -rf /etc/postgresql/15 /var/lib/postgresql/15');
    chroot(rootfs, `usermod -u ${u.uid} postgres && groupmod -g ${u.uid} postgres && chown -R ${u.uid}:${u.uid} /var/lib/postgresql /var/run/postgresql /var/log/postgresql`);
    writeFileSync(join(rootfs, 'usr/local/bin/carapace-postgres'), POSTGRES_ENTRYPOINT, { mode: 0o755 });
  } else {
    chroot(rootfs, `groupadd --system --gid ${u.uid} ${u.name} && useradd --system --uid ${u.uid} --gid ${u.uid} --home-dir ${u.home} --no-create-home --shell /usr/sbin/nologin --comment '${u.comment}' ${u.name}`);
    const debs = join(work, 'debs');
    const out = execFileSync(process.execPath, [join(ROOT, 'scripts', 'package-debs.js'), '--only', spec.deb, '--version', version, '--out', debs, '--compression', 'none'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const deb = out.trim().split('\n').at(-1).split('\t')[0];
    execFileSync('cp', [deb, join(rootfs, 'tmp', 'carapace.deb')]);
    chroot(rootfs, 'dpkg -i /tmp/carapace.deb && rm /tmp/carapace.deb');
    if (spec.setup) chroot(rootfs, spec.setup);
  }
  // What an image does not need: apt's caches, documentation, locales but C.UTF-8's.
  chroot(rootfs, 'apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old /var/log/*.log /usr/share/man/* /usr/share/info/* && find /usr/share/doc -mindepth 1 -not -path "/usr/share/doc/carapace-*" -not -name copyright -delete 2>/dev/null || true');
  writeFileSync(join(rootfs, 'etc', 'hostname'), `${spec.name}\n`);
  const tar = join(work, 'rootfs.tar');
  execFileSync('tar', ['--numeric-owner', '--xattrs', '-C', rootfs, '-cf', tar, '.']);
  const containerfile = [
    'FROM scratch',
    'ADD rootfs.tar /',
    `LABEL org.opencontainers.image.title=${JSON.stringify(spec.name)} org.opencontainers.image.version=${JSON.stringify(version)} org.carapace.inputs=${JSON.stringify(key)}`,
    ...spec.containerfile,
    '',
  ].join('\n');
  writeFileSync(join(work, 'Containerfile'), containerfile);
  log(`${spec.name}: podman build...`);
  // Docker format: OCI image configs have no HEALTHCHECK.
  podman(['build', '--format', 'docker', '--pull=never', '-f', join(work, 'Containerfile'), '-t', `localhost/${spec.name}:in-${key}`, work], { stdio: ['ignore', 'ignore', 'inherit'] });
  return (Date.now() - started) / 1000;
}

const args = parseCommandLine(
  {
    only: { type: 'string', multiple: true },
    version: { type: 'string' },
    force: { type: 'boolean' },
  },
  USAGE,
  fail,
);
for (const only of args.only ?? []) if (!(only in IMAGES)) fail(`--only ${only}: control-plane, runner or postgres`);
if (process.getuid?.() !== 0) fail('needs root (debootstrap and chroot)');
for (const tool of ['podman', 'debootstrap']) {
  try {
    execFileSync(tool, ['--version'], { stdio: 'ignore' });
  } catch {
    fail(`${tool} is not installed (Debian: apt-get install ${tool}; scripts/install-system-deps.sh installs both)`);
  }
}
const version = args.version ?? JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
const mirror = aptMirror();
const wanted = (args.only ?? Object.keys(IMAGES)).map((k) => IMAGES[k]);
let programsHash = null;
const base = mkdtempSync(join(tmpdir(), 'carapace-image-base-'));
process.on('exit', () => rmSync(base, { recursive: true, force: true }));
for (const spec of wanted) {
  if (spec.deb && programsHash === null) {
    // The web UI is part of the control plane's package: build it first so its output is hashed as built.
    const { buildUiIfStale } = await import('./build-if-stale.js');
    await buildUiIfStale({ onBuild: () => log('building the web UI...') });
    programsHash = sourcesHash(PROGRAM_INPUTS);
  }
  const inputs = { recipe: RECIPE_VERSION, suite: SUITE, mirror, version, node: process.version, packages: [...BASE_PACKAGES, ...spec.packages], user: spec.user, ...(spec.setup ? { setup: spec.setup } : {}), containerfile: spec.containerfile, programs: spec.deb ? programsHash : null, entrypoint: spec.deb ? null : POSTGRES_ENTRYPOINT };
  const key = createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 16);
  const ref = `localhost/${spec.name}:in-${key}`;
  let seconds = 0;
  let cached = true;
  if (args.force || !imageExists(ref)) {
    cached = false;
    const work = mkdtempSync(join(tmpdir(), `${spec.name}-image-`));
    try {
      seconds = buildImage(spec, { key, mirror, version, work, base });
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  podman(['tag', ref, `localhost/${spec.name}:latest`, `localhost/${spec.name}:${version.replaceAll("+", "_")}`]);
  const bytes = Number(podman(['image', 'inspect', '--format', '{{.Size}}', ref]).trim());
  process.stdout.write(`${ref}\t${(bytes / 1e6).toFixed(1)} MB\t${cached ? 'cached' : `${seconds.toFixed(1)} s`}\n`);
}
