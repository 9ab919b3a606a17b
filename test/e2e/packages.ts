// The Debian packages in end-to-end tests: built by the real `npm run package` script,
// installed with the real dpkg in lab hosts (Debian 12 containers with systemd and no Node.js).
import { execFile } from 'node:child_process';
import { copyFile, mkdir, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { LabHost } from '../lab/lab.js';

const ROOT = resolve(import.meta.dirname, '../..');
const PACKAGE_SCRIPT = join(ROOT, 'scripts', 'package-debs.js');
const exec = promisify(execFile);

/** A built package. */
export interface BuiltDeb {
  readonly path: string;
  readonly version: string;
  readonly bytes: number;
}

/** Builds one package with `scripts/package-debs.js` (what `npm run package` runs) into `outDir`. */
export async function buildDeb(only: 'runner' | 'control-plane', version: string, outDir: string): Promise<BuiltDeb> {
  const { stdout } = await exec(process.execPath, [PACKAGE_SCRIPT, '--only', only, '--version', version, '--out', outDir], { cwd: ROOT, timeout: 300_000, maxBuffer: 16 << 20 });
  const path = stdout.trim().split('\n').at(-1)?.split('\t')[0] ?? '';
  return { path, version, bytes: (await stat(path)).size };
}

/** Copies `deb` into the host and installs it with dpkg; returns dpkg's output. */
export async function installDeb(host: LabHost, deb: BuiltDeb): Promise<string> {
  await mkdir(join(host.root, 'root', 'debs'), { recursive: true });
  const inside = `/root/debs/${deb.path.split('/').at(-1) ?? ''}`;
  await copyFile(deb.path, join(host.root, inside));
  const r = await host.exec(`dpkg -i ${inside} 2>&1`, { timeoutMs: 300_000 });
  return r.stdout;
}

/** The installed version of a package on the host, or '' when none is installed. */
export async function installedVersion(host: LabHost, name: string): Promise<string> {
  const r = await host.exec(`dpkg-query -W -f '\${db:Status-Abbrev}\${Version}' ${name} 2>/dev/null`, { check: false });
  return r.stdout.startsWith('ii ') ? r.stdout.slice(3).trim() : '';
}

/** `systemctl show` properties of a unit, as a record. */
export async function unitProperties(host: LabHost, unit: string, names: readonly string[]): Promise<Record<string, string>> {
  const r = await host.exec(`systemctl show ${unit} ${names.map((n) => `-p ${n}`).join(' ')}`);
  return Object.fromEntries(r.stdout.trim().split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
}

/** `stat -c '%U:%G %a'` of paths inside the host. */
export async function ownerAndMode(host: LabHost, path: string): Promise<string> {
  return (await host.exec(`stat -c '%U:%G %a' ${path}`)).stdout.trim();
}

/** What of a package is left on the host (paths that exist, its user and unit), after a purge: nothing. */
export async function leftovers(host: LabHost, name: string, user: string, paths: readonly string[]): Promise<string[]> {
  const script = [
    ...paths.map((p) => `[ -e ${p} ] && echo "path ${p}"`),
    `getent passwd ${user} >/dev/null && echo "user ${user}"`,
    `getent group ${user} >/dev/null && echo "group ${user}"`,
    `dpkg-query -W ${name} >/dev/null 2>&1 && echo "dpkg still knows ${name}"`,
    `ls /var/lib/dpkg/info/${name}.* >/dev/null 2>&1 && echo "dpkg info of ${name}"`,
    `systemctl list-unit-files --no-legend ${name}.service | grep -q . && echo "unit ${name}.service"`,
    `find /etc /usr /lib /var /run -xdev -name '*${name}*' 2>/dev/null | sed 's/^/file /'`,
    `pgrep -u ${user} >/dev/null 2>&1 && echo "processes of ${user}"`,
    'true',
  ].join('\n');
  const r = await host.exec(script);
  return r.stdout.trim().split('\n').filter(Boolean);
}

/** A CA, a server certificate for `serverIp` and a client certificate, made by openssl in `dir`. */
export interface TlsFiles {
  readonly ca: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

export async function makeTlsFiles(dir: string, serverIp: string, clientName: string): Promise<TlsFiles> {
  await mkdir(dir, { recursive: true });
  const f = (name: string) => join(dir, name);
  const openssl = (args: string[]) => exec('openssl', args, { cwd: dir });
  await openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=carapace test CA', '-keyout', f('ca.key'), '-out', f('ca.pem')]);
  for (const [name, subject, ext] of [
    ['server', '/CN=control plane', `subjectAltName=IP:${serverIp}\nextendedKeyUsage=serverAuth`],
    ['client', `/CN=${clientName}`, 'extendedKeyUsage=clientAuth'],
  ] as const) {
    await openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', subject, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`)]);
    await writeFile(f(`${name}.ext`), `${ext}\n`);
    await openssl(['x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', f(`${name}.ext`), '-out', f(`${name}.pem`)]);
  }
  return { ca: f('ca.pem'), serverCert: f('server.pem'), serverKey: f('server.key'), clientCert: f('client.pem'), clientKey: f('client.key') };
}

/** Copies a file of this machine into the host at `inside`. */
export async function putFile(host: LabHost, from: string, inside: string): Promise<void> {
  await mkdir(join(host.root, inside, '..'), { recursive: true });
  await copyFile(from, join(host.root, inside));
}
