/**
 * Lab hosts that join a running control plane the documented way: their only set-up is the
 * cloud-init user-data that `carapace cloud-config` generates (the same generator,
 * `@carapace/cloud-init`), for the control plane's address on the lab bridge, its discovery
 * token and its runner's public key. They register themselves at first boot, a runner
 * gathers their facts over SSH, and they become operational.
 *
 * Used by the lab CLI (`npm run lab -- up 3 --discover`) and by the end-to-end tests.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DISCOVERY_PATHS, generateCloudConfig } from '@carapace/cloud-init';
import { DMI_PRODUCT_UUID, LAB_GATEWAY, createLab, ensureBridge } from './lab.js';
import type { HostSpec, ImageOptions, KeyPair, Lab, LabHost, VmOptions } from './lab.js';
import { exists, sleep } from './sys.js';

/** Where `npm start` listens for lab hosts when started with `CARAPACE_HTTP_HOST=10.77.0.1`. */
export const DEFAULT_CONTROL_PLANE_URL = `http://${LAB_GATEWAY}:8080`;

/** What lab hosts need to join a control plane, and what checks that they did. */
export interface ControlPlaneAccess {
  /** The API's base URL as the hosts reach it (an address on the lab bridge). */
  url: string;
  /** A discovery token the control plane accepts. */
  token: string;
  /** Where the token came from (for messages; never the token itself). */
  tokenSource: string;
  /** The OpenSSH public key of the runner that gathers facts and runs playbooks. */
  publicKey: string;
  /** A login to check through the API that hosts became operational; none: only registration is checked. */
  credentials?: { login: string; password: string; source: string };
}

export interface AccessOptions {
  /** The control plane's data directory (default `./data`, as `npm start`). */
  dataDir?: string;
  /** Default {@link DEFAULT_CONTROL_PLANE_URL}. */
  url?: string;
  /** A discovery token; default `CARAPACE_DISCOVERY_TOKEN`, else `<dataDir>/discovery-token`. */
  token?: string;
  /** Default: `<dataDir>/runner/id_ed25519.pub`, the embedded runner's key. */
  publicKeyFile?: string;
  /** Environment to read `CARAPACE_*` from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** How long to wait for the control plane to answer and for the runner's key (default 60 s). */
  waitMs?: number;
}

async function readTrimmed(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function answers(url: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${url.replace(/\/$/, '')}/v1/info/`, { signal: AbortSignal.timeout(3_000) });
    return res.ok ? undefined : `HTTP ${res.status}`;
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? (err as Error).message;
  }
}

/**
 * Finds what hosts need to join the control plane at `url` whose data directory is `dataDir`:
 * the discovery token (option, `CARAPACE_DISCOVERY_TOKEN`, or the file the control plane
 * generates), the embedded runner's public key, and a login for checking (`CARAPACE_LOGIN` and
 * `CARAPACE_PASSWORD`, else root with `CARAPACE_ADMIN_PASSWORD` or `<dataDir>/initial-admin-password`).
 * Makes sure the lab bridge exists and the control plane answers at `url`, and waits (bounded)
 * for the runner's key. Throws a message that says what to do.
 */
export async function controlPlaneAccess(opts: AccessOptions = {}): Promise<ControlPlaneAccess> {
  const env = opts.env ?? process.env;
  const dataDir = opts.dataDir ?? 'data';
  const url = (opts.url ?? DEFAULT_CONTROL_PLANE_URL).replace(/\/$/, '');
  const waitMs = opts.waitMs ?? 60_000;
  const deadline = Date.now() + waitMs;

  await ensureBridge();
  for (let why = await answers(url); why !== undefined; why = await answers(url)) {
    if (Date.now() > deadline)
      throw new Error(
        `the control plane does not answer at ${url} (${why}). Start it where lab hosts reach it: ` +
          `\`npm run lab -- bridge && CARAPACE_HTTP_HOST=${LAB_GATEWAY} npm start\`, or give --url`,
      );
    await sleep(500);
  }

  const tokenFile = join(dataDir, 'discovery-token');
  const fromEnv = env.CARAPACE_DISCOVERY_TOKEN?.split(',')[0]?.trim();
  let token = opts.token;
  let tokenSource = 'the --token option';
  if (token === undefined && fromEnv) [token, tokenSource] = [fromEnv, 'CARAPACE_DISCOVERY_TOKEN'];
  if (token === undefined) [token, tokenSource] = [await readTrimmed(tokenFile), tokenFile];
  if (!token)
    throw new Error(`no discovery token: ${tokenFile} does not exist and CARAPACE_DISCOVERY_TOKEN is not set (is --data-dir the control plane's data directory?); give --token`);

  const keyFile = opts.publicKeyFile ?? join(dataDir, 'runner', 'id_ed25519.pub');
  let publicKey = await readTrimmed(keyFile);
  while (!publicKey) {
    if (Date.now() > deadline)
      throw new Error(`the runner's public key ${keyFile} did not appear within ${waitMs / 1000} s: is the control plane started with its embedded runner (CARAPACE_RUNNER=embedded) on --data-dir ${dataDir}?`);
    await sleep(500);
    publicKey = await readTrimmed(keyFile);
  }

  const credentials = await findCredentials(dataDir, env);
  return { url, token, tokenSource, publicKey, ...(credentials ? { credentials } : {}) };
}

/** A login to check with: `CARAPACE_LOGIN` and `CARAPACE_PASSWORD`, else root with `CARAPACE_ADMIN_PASSWORD` or `<dataDir>/initial-admin-password`. */
export async function findCredentials(dataDir: string, env: NodeJS.ProcessEnv = process.env): Promise<ControlPlaneAccess['credentials']> {
  if (env.CARAPACE_LOGIN && env.CARAPACE_PASSWORD) return { login: env.CARAPACE_LOGIN, password: env.CARAPACE_PASSWORD, source: 'CARAPACE_LOGIN' };
  if (env.CARAPACE_ADMIN_PASSWORD) return { login: 'root', password: env.CARAPACE_ADMIN_PASSWORD, source: 'CARAPACE_ADMIN_PASSWORD' };
  const passwordFile = join(dataDir, 'initial-admin-password');
  const password = await readTrimmed(passwordFile);
  return password ? { login: 'root', password, source: passwordFile } : undefined;
}

/** The cloud-init user-data of discovered lab hosts: exactly what `carapace cloud-config TOKEN KEY_FILE --url URL` prints. */
export function discoveryUserData(access: Pick<ControlPlaneAccess, 'url' | 'token' | 'publicKey'>, opts: { timeout?: number } = {}): string {
  return generateCloudConfig({ url: access.url, serverDiscoveryToken: access.token, publicKey: access.publicKey, timeout: opts.timeout ?? 20 });
}

/** A lab host that joined, with its server id (its DMI UUID or machine id, as the discovery script reads it). */
export interface DiscoveredHost {
  host: LabHost;
  serverId: string;
  /** The server's state, when the API was asked. */
  state?: string;
  /** The server model from the API, when it was asked. */
  server?: Record<string, any>;
}

export interface DiscoverOptions {
  hosts: number | readonly Omit<HostSpec, 'seed'>[];
  access: ControlPlaneAccess;
  name?: string;
  /** Keep the hosts after this process ends (the CLI). */
  persistent?: boolean;
  image?: ImageOptions;
  /** Settings of the hosts whose spec says `kind: 'vm'`. */
  vm?: VmOptions;
  sshKey?: KeyPair;
  /** `operational` (default; needs `access.credentials`, else `registered`), `registered`, or `none` (boot only). */
  waitFor?: 'operational' | 'registered' | 'none';
  /** Bound on the wait after boot (default 180 s). */
  timeoutMs?: number;
  /** Keep the hosts when the wait fails (the CLI: to look at them); default false: destroy them. */
  keepOnFailure?: boolean;
  log?: (line: string) => void;
}

export interface DiscoveredLab {
  lab: Lab;
  hosts: DiscoveredHost[];
  userData: string;
  /** What was checked: registration by the hosts' discovery logs, operational through the API. */
  checked: 'operational' | 'registered' | 'none';
  /** Seconds from the start of the call: all booted, all registered, all operational. */
  timings: { bootedS: number; registeredS?: number; operationalS?: number };
}

/** A timeout or a refusal while hosts join; the lab is still there (when kept) for a look. */
export class DiscoveryError extends Error {}

/**
 * Boots lab hosts seeded only with the generated user-data, and waits (bounded) until they
 * registered (their discovery logs say so) and, with credentials, until the API shows them
 * operational. A refused registration fails at once with the control plane's answer.
 */
export async function discoverLab(opts: DiscoverOptions): Promise<DiscoveredLab> {
  const started = Date.now();
  const since = (): number => Number(((Date.now() - started) / 1000).toFixed(1));
  const log = opts.log ?? ((line: string) => process.stderr.write(`[carapace-lab] ${line}\n`));
  const userData = discoveryUserData(opts.access);
  const specs: HostSpec[] = (typeof opts.hosts === 'number' ? Array.from({ length: opts.hosts }, () => ({})) : opts.hosts).map((s) => ({ ...s, seed: { userData } }));
  const lab = await createLab({ hosts: specs, name: opts.name ?? 'discover', persistent: opts.persistent, image: opts.image, vm: opts.vm, sshKey: opts.sshKey, log });
  const hosts: DiscoveredHost[] = await Promise.all(lab.hosts.map(async (host) => ({ host, serverId: await serverIdOf(host) })));
  const timings: DiscoveredLab['timings'] = { bootedS: since() };
  const waitFor = opts.waitFor === 'operational' && !opts.access.credentials ? 'registered' : (opts.waitFor ?? (opts.access.credentials ? 'operational' : 'registered'));
  const deadline = Date.now() + (opts.timeoutMs ?? 180_000);
  try {
    if (waitFor !== 'none') {
      await Promise.all(hosts.map((h) => waitRegistered(h, deadline)));
      timings.registeredS = since();
      log(`registered: ${hosts.map((h) => h.host.name).join(' ')} (${timings.registeredS} s)`);
    }
    if (waitFor === 'operational' && opts.access.credentials) {
      await waitOperational(opts.access, hosts, deadline);
      timings.operationalS = since();
    }
  } catch (err) {
    if (!opts.keepOnFailure) await lab.destroy({ graceMs: 2_000 }).catch(() => undefined);
    throw err;
  }
  return { lab, hosts, userData, checked: waitFor, timings };
}

/**
 * The server id the discovery script sends: the host's DMI product UUID where the lab gives it
 * one (`product_uuid` in the host's directory), else its /etc/machine-id as a UUID.
 */
async function serverIdOf(host: LabHost): Promise<string> {
  // A VM always has DMI: its product UUID is the one QEMU was given (-uuid).
  if (host.kind === 'vm' || (await exists(DMI_PRODUCT_UUID))) {
    const dmi = await readTrimmed(join(host.dir, 'product_uuid'));
    if (dmi) return dmi.toLowerCase();
  }
  const id = ((await host.readHostFile('/etc/machine-id')) ?? '').trim();
  return `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20, 32)}`;
}

/** Waits until the host's discovery log says it registered; throws at once when it gave up. */
async function waitRegistered(h: DiscoveredHost, deadline: number): Promise<void> {
  for (;;) {
    const text = ((await h.host.readHostFile(DISCOVERY_PATHS.log).catch(() => undefined)) ?? '').trim();
    if (/: registered \(HTTP \d+\)/.test(text)) return;
    const fatal = /.*(giving up|configuration error|TLS setup error).*/.exec(text);
    if (fatal) throw new DiscoveryError(`${h.host.name} (${h.host.ip}) did not register: ${fatal[0]}`);
    if (Date.now() > deadline) {
      const status = await h.host.exec(`cloud-init status --long 2>&1 | head -20; systemctl --no-pager status ${'carapace-discovery.service'} 2>&1 | tail -5`, { check: false, timeoutMs: 20_000 }).catch((e: unknown) => ({ stdout: String(e) }));
      throw new DiscoveryError(
        `${h.host.name} (${h.host.ip}) did not register in time.\n--- ${DISCOVERY_PATHS.log}:\n${text.split('\n').slice(-8).join('\n') || '(empty: discovery has not run yet)'}\n--- cloud-init and the discovery unit:\n${status.stdout.trim()}`,
      );
    }
    await sleep(h.host.kind === 'vm' ? 2_000 : 500);
  }
}

/** Logs in with `access.credentials`; throws a DiscoveryError that says which password failed. */
export async function login(access: Pick<ControlPlaneAccess, 'url' | 'credentials'>): Promise<string> {
  const credentials = access.credentials;
  if (!credentials) throw new DiscoveryError('no login: set CARAPACE_ADMIN_PASSWORD, or CARAPACE_LOGIN and CARAPACE_PASSWORD');
  const res = await api(access, 'POST', '/v1/auth/', undefined, { username: credentials.login, password: credentials.password });
  if (res.status !== 200) throw new DiscoveryError(`cannot log in as ${credentials.login} (password from ${credentials.source}): HTTP ${res.status} ${String(res.json?.message ?? '')}`);
  return String(res.json.id);
}

/** One call of the API (JSON in and out). */
export async function api(access: Pick<ControlPlaneAccess, 'url'>, method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${access.url}${path}`, {
    method,
    headers: { ...(token ? { authorization: token } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = { message: text };
  }
  return { status: res.status, json };
}

/** Logs in and waits until the API shows every host's server operational (facts gathered by a runner). */
async function waitOperational(access: ControlPlaneAccess, hosts: DiscoveredHost[], deadline: number): Promise<void> {
  if (!access.credentials) return;
  let token = await login(access);
  const pending = new Set(hosts);
  while (pending.size > 0) {
    for (const h of [...pending]) {
      let res = await api(access, 'GET', `/v1/server/${h.serverId}/`, token);
      if (res.status === 401) {
        token = await login(access);
        res = await api(access, 'GET', `/v1/server/${h.serverId}/`, token);
      }
      if (res.status === 200) {
        h.server = res.json;
        h.state = String(res.json.data?.state);
        if (h.state === 'operational') pending.delete(h);
      }
    }
    if (pending.size === 0) return;
    if (Date.now() > deadline) {
      const lines = [...pending].map((h) => `${h.host.name} (${h.host.ip}) server ${h.serverId}: ${h.state ?? 'not found'}${h.server?.data?.facts_error ? ` (${String(h.server.data.facts_error)})` : ''}`);
      throw new DiscoveryError(`registered, but not operational in time (facts are gathered by a connected runner over SSH):\n${lines.join('\n')}`);
    }
    await sleep(500);
  }
}
