import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readYamlMapping, setYamlValues, type Env } from '@carapace/config';
import { loadRunnerConfig, nameOfToken, parseControlPlanes, parseLabels, RunnerConfigError } from './config.js';
import { ensureKeyPair, writeAtomically } from './key-file.js';

const USAGE = `Usage: carapace-runner enroll [--config FILE] --url HOST:PORT[,HOST:PORT...] (--token TOKEN | --token-file FILE)
                               [--name NAME] [--label KEY=VALUE]... [--tls] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]
                               [--owner USER]

Records this runner's control plane and token in its configuration file (--config, else
CARAPACE_RUNNER_CONFIG; the Debian package's carapace-runner uses /etc/carapace/runner.yaml),
keeping the file's other settings and comments, creates the runner's SSH key when it has none,
and prints its public key line on standard output: the key the servers' cloud-config must
authorize (carapace cloud-config TOKEN -). Then start the runner (systemctl enable --now
carapace-runner). Without --url and --token, the file must already name them: enroll then
checks it and prints the key.

  --url          the control plane's gRPC address(es), as CARAPACE_RUNNER_URL
  --token        the runner token (POST /v1/runner/, carapace runner create); --token-file reads it
  --name         the runner's name, when the token's is not to be used (they must match)
  --label        a label, KEY=VALUE, repeatable (site=par1, networks=10.1.0.0/16)
  --tls          TLS to the control plane with the system's CAs; --tls-ca FILE: with this CA
  --tls-cert/--tls-key  the client certificate and key, when the control plane requires mTLS
                 (grpc.tlsClientCaFile). TLS files are copied beside the configuration file
                 (NAME-ca.pem, NAME-cert.pem 0644; NAME-key.pem 0600) and the file names the copies.
  --owner        the user who gets the files written (run as root). Default: the owner of the
                 existing configuration file (the package makes it carapace-runner's)

The configuration file holds the token: it is written 0600.`;

/** Where enroll writes, and what it reads its defaults from. */
export interface EnrollIo {
  readonly env: Env;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

interface Owner {
  readonly uid: number;
  readonly gid: number;
}

class EnrollError extends Error {}

function ownerOfUser(name: string): Owner {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch (e) {
    throw new EnrollError(`cannot read /etc/passwd to find the user ${name}: ${(e as Error).message}`);
  }
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined && /^\d+$/.test(uid) && /^\d+$/.test(gid)) return { uid: Number(uid), gid: Number(gid) };
  }
  throw new EnrollError(`--owner: there is no user ${name} on this machine`);
}

function readPem(file: string, option: string, kind: RegExp): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new EnrollError(`${option}: cannot read ${file}: ${(e as Error).message}`);
  }
  if (!kind.test(text)) throw new EnrollError(`${option}: ${file} is not a PEM file of the expected kind (${kind.source.replace(/\\/g, '')})`);
  return text;
}

/**
 * `carapace-runner enroll`: records the control plane and token (and TLS files) in the
 * configuration file, makes the SSH key, prints its public key line. Returns the exit status:
 * 0 enrolled, 2 bad usage or input (nothing written then), 1 a file could not be written.
 */
export function enroll(argv: readonly string[], io: EnrollIo): number {
  let args;
  try {
    args = parseArgs({
      args: [...argv],
      options: {
        config: { type: 'string', short: 'c' },
        url: { type: 'string' },
        token: { type: 'string' },
        'token-file': { type: 'string' },
        name: { type: 'string' },
        label: { type: 'string', multiple: true },
        tls: { type: 'boolean' },
        'tls-ca': { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
        owner: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    io.stderr.write(`carapace-runner enroll: ${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.values.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const o = args.values;
  const written: string[] = [];
  try {
    const configArg = o.config ?? io.env.CARAPACE_RUNNER_CONFIG;
    if (!configArg) throw new EnrollError('enroll writes the runner configuration file: give --config FILE (or CARAPACE_RUNNER_CONFIG)');
    const file = resolve(configArg);
    const exists = existsSync(file);
    const before = exists ? readFileSync(file, 'utf8') : '';
    const current = exists ? readYamlMapping(file, (m) => new EnrollError(m)) : {};

    if (o.token !== undefined && o['token-file'] !== undefined) throw new EnrollError('give --token or --token-file, not both');
    let token = o.token?.trim();
    if (o['token-file'] !== undefined) {
      try {
        token = readFileSync(o['token-file'], 'utf8').trim();
      } catch (e) {
        throw new EnrollError(`--token-file: cannot read ${o['token-file']}: ${(e as Error).message}`);
      }
    }
    if (token !== undefined && o.name === undefined && nameOfToken(token) === null) {
      throw new EnrollError('the token is not a runner token (crt.<name>.<secret>, as POST /v1/runner/ prints it); give --name if it is one of another form');
    }
    const controlPlanes = o.url !== undefined ? parseControlPlanes(o.url) : undefined;
    if (controlPlanes === undefined && current.controlPlane === undefined) throw new EnrollError(`no control plane: give --url HOST:PORT (or set controlPlane in ${file})`);
    if (token === undefined && current.token === undefined) throw new EnrollError(`no token: give --token or --token-file (or set token in ${file})`);
    if ((o['tls-cert'] === undefined) !== (o['tls-key'] === undefined)) throw new EnrollError('--tls-cert and --tls-key go together (the client certificate and its key)');
    const labels = o.label?.length ? parseLabels(o.label.join(',')) : undefined;

    // TLS files, read before anything is written, copied beside the configuration file.
    const stem = basename(file, extname(file));
    const tlsFiles: { option: string; key: string; source: string; target: string; mode: number; kind: RegExp }[] = [
      { option: '--tls-ca', key: 'tls.caFile', source: o['tls-ca'] ?? '', target: join(dirname(file), `${stem}-ca.pem`), mode: 0o644, kind: /-----BEGIN CERTIFICATE-----/ },
      { option: '--tls-cert', key: 'tls.certFile', source: o['tls-cert'] ?? '', target: join(dirname(file), `${stem}-cert.pem`), mode: 0o644, kind: /-----BEGIN CERTIFICATE-----/ },
      { option: '--tls-key', key: 'tls.keyFile', source: o['tls-key'] ?? '', target: join(dirname(file), `${stem}-key.pem`), mode: 0o600, kind: /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/ },
    ].filter((t) => t.source !== '');
    const tlsCopies = tlsFiles.map((t) => ({ ...t, content: readPem(t.source, t.option, t.kind) }));

    const values: Record<string, unknown> = {};
    if (controlPlanes !== undefined) values.controlPlane = controlPlanes.length === 1 ? controlPlanes[0] : controlPlanes;
    if (token !== undefined) values.token = token;
    if (o.name !== undefined) values.name = o.name;
    if (labels !== undefined) values.labels = labels;
    if (o.tls || tlsCopies.length > 0) values['tls.enabled'] = true;
    for (const t of tlsCopies) values[t.key] = t.target;
    const text = setYamlValues(before, values, (m) => new EnrollError(`${file}: ${m}`));

    const owner = o.owner !== undefined ? ownerOfUser(o.owner) : exists ? { uid: statSync(file).uid, gid: statSync(file).gid } : undefined;
    const asRoot = process.getuid?.() === 0;
    const give = (path: string) => {
      if (owner && asRoot) chownSync(path, owner.uid, owner.gid);
    };

    // The whole file is checked as the runner will read it before it replaces the old one.
    mkdirSync(dirname(file), { recursive: true });
    const candidate = `${file}.enroll-${process.pid}`;
    writeAtomically(candidate, text, 0o600);
    let config;
    try {
      config = loadRunnerConfig({ file: candidate, env: {} });
    } finally {
      rmSync(candidate, { force: true });
    }

    for (const t of tlsCopies) {
      writeAtomically(t.target, t.content, t.mode);
      give(t.target);
      written.push(t.target);
    }
    writeAtomically(file, text, 0o600);
    give(file);
    written.push(file);

    for (const dir of [config.workDir, dirname(config.sshKeyFile)]) {
      if (existsSync(dir)) continue;
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      give(dir);
    }
    const hadKey = existsSync(config.sshKeyFile);
    const key = ensureKeyPair(config.sshKeyFile);
    if (!hadKey || key.repaired) {
      give(config.sshKeyFile);
      give(`${config.sshKeyFile}.pub`);
      written.push(config.sshKeyFile, `${config.sshKeyFile}.pub`);
    }
    if (key.repaired) io.stderr.write(`carapace-runner enroll: ${key.repaired}\n`);

    const tls = config.tls.enabled ? (config.tls.certFile ? 'mTLS' : 'TLS') : 'plaintext gRPC';
    io.stdout.write(`${key.publicKey}\n`);
    io.stderr.write(
      [
        `carapace-runner enroll: runner ${config.name} of ${config.controlPlanes.join(', ')} (${tls}), configuration ${file}${written.length ? `; wrote ${written.join(', ')}` : ''}.`,
        `Its SSH key is ${config.sshKeyFile}; the public key above goes into the servers' cloud-config (carapace cloud-config DISCOVERY_TOKEN - reads it from stdin).`,
        'Next: systemctl enable --now carapace-runner (or carapace-runner --config FILE).',
        '',
      ].join('\n'),
    );
    return 0;
  } catch (e) {
    if (e instanceof EnrollError || e instanceof RunnerConfigError) {
      io.stderr.write(`carapace-runner enroll: ${e.message}${written.length ? ` (already written: ${written.join(', ')})` : ''}\n`);
      return 2;
    }
    const err = e as NodeJS.ErrnoException;
    if (typeof err.code === 'string') {
      io.stderr.write(`carapace-runner enroll: ${err.message}${written.length ? ` (already written: ${written.join(', ')})` : ''}\n`);
      return 1;
    }
    throw e;
  }
}
