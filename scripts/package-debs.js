#!/usr/bin/env node
// `npm run package`: builds the Debian packages carapace-runner and carapace-control-plane
// (amd64) for hosts with no Node.js and no network. Each carries:
//   /usr/lib/<package>/node               the Node.js runtime this machine runs (process.execPath)
//   /usr/lib/<package>/<program>.mjs      the program, bundled with esbuild from the sources
//   /usr/lib/<package>/{proto,apps,libs}  the files the program reads at run time, at the same
//                                         paths relative to the bundle as in the checkout
//   /usr/lib/carapace-control-plane/native/better_sqlite3.node   (the control plane only)
//   /usr/bin/<program>                    a wrapper: that node, that bundle, the package's configuration
//                                         (the control plane's package also has /usr/bin/carapace, the CLI)
//   /lib/systemd/system/<package>.service a hardened unit
//   /usr/share/<package>/                 the configuration the first install puts in /etc/carapace
// plus the maintainer scripts of deploy/debian/<package>/. See deploy/debian/README.md.
//
//   node scripts/package-debs.js [--out DIR] [--version VERSION] [--only runner|control-plane] [--compression gzip|xz|none]
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCommandLine } from './cli-args.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DEBIAN = join(ROOT, 'deploy', 'debian');
const USAGE = 'Usage: node scripts/package-debs.js [--out DIR] [--version VERSION] [--only runner|control-plane] [--compression gzip|xz|none]';

/**
 * The packages. `assets` are copied from the checkout to the same place relative to the
 * bundle: each source file's `import.meta.url` is rewritten to where that file would be, so
 * `new URL('../../ansible/...', import.meta.url)` finds the copies.
 */
const PACKAGES = {
  runner: {
    name: 'carapace-runner',
    programs: [{ program: 'carapace-runner', entry: 'apps/runner/src/main.ts', call: 'main(process.argv.slice(2))', config: ['CARAPACE_RUNNER_CONFIG', '/etc/carapace/runner.yaml'] }],
    assets: ['proto', 'apps/runner/ansible', 'libs/playbooks/ansible'],
    depends: 'libc6 (>= 2.28), libstdc++6, libgcc-s1, passwd, ansible-core | ansible, openssh-client',
    description: 'Carapace runner agent\n Runs the Ansible playbooks of a Carapace control plane against servers over SSH,\n near them: it dials the control plane over gRPC (TLS, mTLS). Carries its own\n Node.js runtime.',
    native: false,
    docs: ['deploy/carapace-runner.example.yaml', 'apps/runner/README.md'],
  },
  'control-plane': {
    name: 'carapace-control-plane',
    programs: [
      { program: 'carapace-control-plane', entry: 'apps/control-plane/src/main.ts', call: 'main(process.argv.slice(2), {})', config: ['CARAPACE_CONFIG', '/etc/carapace/carapace.yaml'] },
      // The command line client, for `carapace cloud-config` and scripts on the control plane's machine.
      { program: 'carapace', entry: 'apps/cli/src/main.ts', call: 'main(process.argv.slice(2))', config: null },
    ],
    // docs/.vitepress/dist: the documentation site the control plane serves at /docs/ (ui.docsDir's default finds it there).
    assets: ['proto', 'libs/playbooks/ansible', 'apps/control-plane/drizzle', 'apps/ui/dist', 'docs/.vitepress/dist', 'apps/cli/package.json'],
    depends: 'libc6 (>= 2.28), libstdc++6, libgcc-s1, passwd',
    description: 'Carapace control plane\n Deploys and operates Ceph clusters: the /v1 API, the web UI and the gRPC port\n runners connect to, on an embedded SQLite database (or PostgreSQL). Carries its\n own Node.js runtime.',
    native: true,
    docs: ['deploy/carapace.example.yaml'],
  },
};

/** Whether the documentation site has no build, or a file of docs/ (its sources, screenshots, config) is newer than it. */
function docsSiteStale() {
  const docs = join(ROOT, 'docs');
  const index = join(docs, '.vitepress', 'dist', 'index.html');
  if (!existsSync(index)) return true;
  const built = statSync(index).mtimeMs;
  const outputs = new Set([join(docs, '.vitepress', 'dist'), join(docs, '.vitepress', 'cache')]);
  const newer = (dir) =>
    readdirSync(dir, { withFileTypes: true }).some((e) => {
      const path = join(dir, e.name);
      if (outputs.has(path)) return false;
      return e.isDirectory() ? newer(path) : statSync(path).mtimeMs > built;
    });
  return newer(docs);
}

function fail(message) {
  process.stderr.write(`package-debs: ${message}\n`);
  process.exit(2);
}

/** esbuild plugin: `import.meta.url` of each workspace source becomes its place beside the bundle. */
function importMetaUrlPlugin() {
  return {
    name: 'carapace-import-meta-url',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        const rel = relative(ROOT, args.path);
        if (rel.startsWith('..') || rel.includes('node_modules')) return undefined;
        const contents = source.replaceAll('import.meta.url', `new URL(${JSON.stringify(`./${rel}`)}, import.meta.url).href`);
        return { contents, loader: 'ts' };
      });
    },
  };
}

/** esbuild plugin: better-sqlite3 finds its binding in `native/` beside the bundle, not with `bindings`' search. */
function nativeBindingPlugin() {
  return {
    name: 'carapace-native-binding',
    setup(build) {
      build.onResolve({ filter: /^bindings$/ }, () => ({ path: 'bindings', namespace: 'carapace-native' }));
      build.onLoad({ filter: /.*/, namespace: 'carapace-native' }, () => ({
        contents: "module.exports = (name) => require(require('node:path').join(__dirname, 'native', name));",
        loader: 'js',
      }));
    },
  };
}

async function bundle(spec, outFile) {
  const { build } = await import('esbuild');
  const entry = join(ROOT, spec.entry);
  await build({
    stdin: {
      contents: `import { main } from ${JSON.stringify(entry)};\nprocess.exitCode = await ${spec.call};\n`,
      resolveDir: ROOT,
      sourcefile: `${spec.program}-entry.ts`,
      loader: 'ts',
    },
    outfile: outFile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node.split('.')[0]}`,
    conditions: ['@carapace/source'],
    // CommonJS dependencies call require and read __dirname: give the bundle both.
    banner: {
      js: [
        '#!/usr/bin/env node',
        "import { createRequire as __carapaceCreateRequire } from 'node:module';",
        "import { dirname as __carapaceDirname } from 'node:path';",
        "import { fileURLToPath as __carapaceFileURLToPath } from 'node:url';",
        'const require = __carapaceCreateRequire(import.meta.url);',
        'const __filename = __carapaceFileURLToPath(import.meta.url);',
        'const __dirname = __carapaceDirname(__filename);',
      ].join('\n'),
    },
    external: ['*.node'],
    plugins: [importMetaUrlPlugin(), nativeBindingPlugin()],
    legalComments: 'none',
    logLevel: 'warning',
    minifySyntax: true,
  });
}

function wrapper(name, program) {
  const lines = ['#!/bin/sh', `# ${program.program} of the Debian package ${name}: its own Node.js runs the bundled program.`];
  if (program.config) {
    const [variable, file] = program.config;
    lines.push(`# The package's configuration file unless ${variable} (or --config) names another.`, `: "\${${variable}:=${file}}"`, `export ${variable}`);
  }
  lines.push(`exec /usr/lib/${name}/node /usr/lib/${name}/${program.program}.mjs "$@"`, '');
  return lines.join('\n');
}

function control(spec, version, installedKb) {
  return [
    `Package: ${spec.name}`,
    `Version: ${version}`,
    'Architecture: amd64',
    'Maintainer: Carapace maintainers <maintainers@carapace.invalid>',
    `Installed-Size: ${installedKb}`,
    `Depends: ${spec.depends}`,
    'Section: admin',
    'Priority: optional',
    'Homepage: https://github.com/carapace/carapace',
    `Description: ${spec.description}`,
    '',
  ].join('\n');
}

function duKb(dir) {
  return Number(execFileSync('du', ['-sk', '--exclude=DEBIAN', dir], { encoding: 'utf8' }).split('\t')[0]);
}

async function buildPackage(spec, { out, version, compression }) {
  const stage = mkdtempSync(join(tmpdir(), `${spec.name}-deb-`));
  try {
    const lib = join(stage, 'usr', 'lib', spec.name);
    mkdirSync(lib, { recursive: true });
    for (const program of spec.programs) await bundle(program, join(lib, `${program.program}.mjs`));
    copyFileSync(process.execPath, join(lib, 'node'));
    chmodSync(join(lib, 'node'), 0o755);
    for (const asset of spec.assets) {
      const from = join(ROOT, asset);
      if (!existsSync(from)) fail(`${asset} is missing (is the checkout built?)`);
      cpSync(from, join(lib, asset), { recursive: true, filter: (f) => !/(^|\/)(__pycache__|node_modules)(\/|$)/.test(f) && !f.endsWith('.pyc') });
    }
    if (spec.native) {
      const binding = join(ROOT, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
      if (!existsSync(binding)) fail(`${binding} is missing: npm ci builds it`);
      mkdirSync(join(lib, 'native'));
      copyFileSync(binding, join(lib, 'native', 'better_sqlite3.node'));
    }
    const own = join(DEBIAN, spec.name);
    mkdirSync(join(stage, 'usr', 'bin'), { recursive: true });
    for (const program of spec.programs) writeFileSync(join(stage, 'usr', 'bin', program.program), wrapper(spec.name, program), { mode: 0o755 });
    mkdirSync(join(stage, 'lib', 'systemd', 'system'), { recursive: true });
    copyFileSync(join(own, `${spec.name}.service`), join(stage, 'lib', 'systemd', 'system', `${spec.name}.service`));
    mkdirSync(join(stage, 'usr', 'share', spec.name), { recursive: true });
    for (const file of ['config.yaml']) copyFileSync(join(own, file), join(stage, 'usr', 'share', spec.name, file));
    const doc = join(stage, 'usr', 'share', 'doc', spec.name);
    mkdirSync(doc, { recursive: true });
    copyFileSync(join(DEBIAN, 'copyright'), join(doc, 'copyright'));
    copyFileSync(join(DEBIAN, 'README.md'), join(doc, 'README.md'));
    for (const file of spec.docs) copyFileSync(join(ROOT, file), join(doc, file.split('/').at(-1)));
    mkdirSync(join(stage, 'DEBIAN'));
    writeFileSync(join(stage, 'DEBIAN', 'control'), control(spec, version, duKb(stage)));
    for (const script of ['postinst', 'prerm', 'postrm']) {
      copyFileSync(join(own, script), join(stage, 'DEBIAN', script));
      chmodSync(join(stage, 'DEBIAN', script), 0o755);
    }
    const deb = join(out, `${spec.name}_${version}_amd64.deb`);
    execFileSync('dpkg-deb', ['--root-owner-group', `-Z${compression}`, '-z6', '--build', stage, deb], { stdio: ['ignore', 'ignore', 'inherit'] });
    return deb;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

const args = parseCommandLine(
  {
    out: { type: 'string' },
    version: { type: 'string' },
    only: { type: 'string' },
    compression: { type: 'string' },
  },
  USAGE,
  fail,
);
const version = args.version ?? JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
if (!/^[0-9][A-Za-z0-9.+~-]*$/.test(version)) fail(`--version ${version}: not a Debian version (digits first, then letters, digits and . + ~ -)`);
const compression = args.compression ?? 'gzip';
if (!['gzip', 'xz', 'none'].includes(compression)) fail(`--compression ${compression}: gzip, xz or none`);
if (args.only !== undefined && !(args.only in PACKAGES)) fail(`--only ${args.only}: runner or control-plane`);
if (process.platform !== 'linux' || process.arch !== 'x64') fail(`the packages are for amd64 and carry this machine's Node.js: build them on linux x64, not ${process.platform} ${process.arch}`);
try {
  execFileSync('dpkg-deb', ['--version'], { stdio: 'ignore' });
} catch {
  fail('dpkg-deb is not installed (Debian: apt-get install dpkg)');
}
const out = resolve(args.out ?? join(ROOT, 'dist', 'packages'));
mkdirSync(out, { recursive: true });
const wanted = args.only ? [PACKAGES[args.only]] : Object.values(PACKAGES);
if (wanted.some((spec) => spec.assets.includes('apps/ui/dist'))) {
  const { buildUiIfStale } = await import('./build-if-stale.js');
  await buildUiIfStale({ onBuild: () => process.stderr.write('package-debs: building the web UI...\n') });
}
if (wanted.some((spec) => spec.assets.includes('docs/.vitepress/dist')) && docsSiteStale()) {
  process.stderr.write('package-debs: building the documentation site...\n');
  const built = spawnSync('npm', ['run', '--silent', 'docs:build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  if (built.status !== 0) fail('npm run docs:build failed');
}
for (const spec of wanted) {
  const started = Date.now();
  const deb = await buildPackage(spec, { out, version, compression });
  const size = statSync(deb).size;
  process.stdout.write(`${deb}\t${(size / 1e6).toFixed(1)} MB\t${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}
