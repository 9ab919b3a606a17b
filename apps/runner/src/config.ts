import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { resolve } from 'node:path';
import { Type, type Static } from 'typebox';
import { envLayer, LogFormatSchema, LogLevelSchema, mergeLayers, readYamlMapping, schemaProblem, type Env } from '@carapace/config';

/** The runner's configuration; every key is documented in deploy/carapace-runner.example.yaml. */
export const RunnerConfigSchema = Type.Object(
  {
    /**
     * gRPC address of the control plane, `host:port`, or of several replicas: comma-separated
     * text or a YAML list. The runner tries them in turn (see `parseControlPlanes`).
     */
    controlPlane: Type.Union([Type.String(), Type.Array(Type.String())]),
    /** The runner token issued by `POST /v1/runner/` (it names the runner). */
    token: Type.String({ minLength: 10 }),
    /** Defaults to the name inside the token. */
    name: Type.Union([Type.String({ pattern: '^[a-z0-9][a-z0-9_.-]{0,62}$' }), Type.Null()]),
    labels: Type.Record(Type.String(), Type.String()),
    slots: Type.Integer({ minimum: 1, maximum: 1024 }),
    /** Private key the runner logs in to servers with (OpenSSH or PEM, no passphrase). */
    sshKeyFile: Type.String({ minLength: 1 }),
    /** Where executions get their private work dirs and unacknowledged events spill. */
    workDir: Type.String({ minLength: 1 }),
    tls: Type.Object(
      {
        enabled: Type.Boolean(),
        caFile: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        certFile: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        keyFile: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
      },
      { additionalProperties: false },
    ),
    ansiblePlaybook: Type.String({ minLength: 1 }),
    /** Lets configurations run tasks on the runner itself (`ansible_connection: local`): tests and labs only. */
    allowLocalConnection: Type.Boolean(),
    sshTimeoutMs: Type.Integer({ minimum: 100 }),
    /** After SIGTERM: how long running executions may go on before they are canceled. */
    drainGraceMs: Type.Integer({ minimum: 0 }),
    /** Cancel: SIGINT, then SIGTERM after this, then SIGKILL after this again. */
    cancelGraceMs: Type.Integer({ minimum: 0 }),
    reconnect: Type.Object(
      { initialDelayMs: Type.Integer({ minimum: 1 }), maxDelayMs: Type.Integer({ minimum: 1 }) },
      { additionalProperties: false },
    ),
    /** Unacknowledged events kept in memory before they spill to disk. */
    outboxMemoryBytes: Type.Integer({ minimum: 1024 }),
    logLevel: LogLevelSchema,
    /** `auto`: coloured text for a person when standard output is a terminal, JSON lines otherwise. */
    logFormat: LogFormatSchema,
    /** `host:port` of the Prometheus `/metrics` endpoint; null: none. */
    metricsListen: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

/** A `host:port` to listen on. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/** The runner's configuration, checked: the control-plane addresses as a list, the metrics address parsed. */
export type RunnerConfig = Readonly<
  Omit<Static<typeof RunnerConfigSchema>, 'controlPlane' | 'metricsListen'> & {
    /** Every control-plane address, in the order given; at least one, no two alike. */
    controlPlanes: readonly string[];
    metricsListen: ListenAddress | null;
  }
>;

const DEFAULTS = {
  controlPlane: '127.0.0.1:8081',
  name: null,
  labels: {},
  slots: 2,
  sshKeyFile: './runner/id_ed25519',
  workDir: './runner',
  tls: { enabled: false, caFile: null, certFile: null, keyFile: null },
  ansiblePlaybook: 'ansible-playbook',
  allowLocalConnection: false,
  sshTimeoutMs: 10_000,
  drainGraceMs: 600_000,
  cancelGraceMs: 10_000,
  reconnect: { initialDelayMs: 500, maxDelayMs: 30_000 },
  outboxMemoryBytes: 16 * 1024 * 1024,
  logLevel: 'info',
  logFormat: 'auto',
  metricsListen: null,
};

/** Each environment variable and the key it sets. */
export const RUNNER_ENV_KEYS: Readonly<Record<string, string>> = {
  CARAPACE_RUNNER_URL: 'controlPlane',
  CARAPACE_RUNNER_TOKEN: 'token',
  CARAPACE_RUNNER_NAME: 'name',
  CARAPACE_RUNNER_LABELS: 'labels',
  CARAPACE_RUNNER_SLOTS: 'slots',
  CARAPACE_RUNNER_SSH_KEY: 'sshKeyFile',
  CARAPACE_RUNNER_WORK_DIR: 'workDir',
  CARAPACE_RUNNER_TLS: 'tls.enabled',
  CARAPACE_RUNNER_TLS_CA: 'tls.caFile',
  CARAPACE_RUNNER_TLS_CERT: 'tls.certFile',
  CARAPACE_RUNNER_TLS_KEY: 'tls.keyFile',
  CARAPACE_RUNNER_ANSIBLE_PLAYBOOK: 'ansiblePlaybook',
  CARAPACE_RUNNER_ALLOW_LOCAL_CONNECTION: 'allowLocalConnection',
  CARAPACE_RUNNER_SSH_TIMEOUT_MS: 'sshTimeoutMs',
  CARAPACE_RUNNER_DRAIN_GRACE_MS: 'drainGraceMs',
  CARAPACE_RUNNER_CANCEL_GRACE_MS: 'cancelGraceMs',
  CARAPACE_RUNNER_RECONNECT_INITIAL_MS: 'reconnect.initialDelayMs',
  CARAPACE_RUNNER_RECONNECT_MAX_MS: 'reconnect.maxDelayMs',
  CARAPACE_RUNNER_OUTBOX_MEMORY_BYTES: 'outboxMemoryBytes',
  CARAPACE_RUNNER_LOG_LEVEL: 'logLevel',
  CARAPACE_RUNNER_LOG_FORMAT: 'logFormat',
  CARAPACE_RUNNER_METRICS_LISTEN: 'metricsListen',
};

/** A configuration that cannot be used. */
export class RunnerConfigError extends Error {}

/** Parses `k=v,k2=v2` labels. */
export function parseLabels(raw: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let last: string | null = null;
  for (const part of raw.split(',')) {
    if (!part.trim()) continue;
    const eq = part.indexOf('=');
    if (eq < 0 && last !== null) {
      // a value with commas, e.g. networks=10.0.0.0/8,192.168.0.0/16
      labels[last] = `${labels[last]},${part.trim()}`;
      continue;
    }
    if (eq <= 0) throw new RunnerConfigError(`label "${part}" must be key=value`);
    last = part.slice(0, eq).trim();
    labels[last] = part.slice(eq + 1).trim();
  }
  return labels;
}

// Labels of letters, digits, `-` and `_` (container and compose service names have them).
const DNS_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

/**
 * Splits `host:port` (a DNS name, an IPv4 address or a bracketed IPv6 address, and a decimal
 * port within `minPort`..65535); throws a `RunnerConfigError` starting with `what` otherwise.
 */
function hostPort(raw: string, what: string, minPort: number): { host: string; port: number } {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) throw new RunnerConfigError(`${what} "${raw}" must be host:port, without a scheme`);
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(raw);
  if (!m) throw new RunnerConfigError(`${what} "${raw}" must be host:port (a DNS name, an IPv4 address or [an IPv6 address], then a port)`);
  const host = m[1] ?? m[2] ?? '';
  const port = Number(m[3]);
  if (m[1] !== undefined ? !isIPv6(host) : !(isIPv4(host) || (DNS_NAME.test(host) && !/^[\d.]+$/.test(host)))) {
    throw new RunnerConfigError(`${what} "${raw}": "${host}" is not a host name or an IP address`);
  }
  if (port < minPort || port > 65_535) throw new RunnerConfigError(`${what} "${raw}": the port must be ${minPort} to 65535`);
  return { host, port };
}

/**
 * The control-plane addresses of `controlPlane` (`CARAPACE_RUNNER_URL`): one `host:port`,
 * several separated by commas, or a YAML list of them. Each is checked; an empty list and an
 * address given twice (host names compared without case) are refused.
 */
export function parseControlPlanes(value: string | readonly string[]): string[] {
  const what = 'controlPlane (CARAPACE_RUNNER_URL)';
  const items = typeof value === 'string' ? value.split(',') : value;
  if (items.every((item) => item.trim() === '')) throw new RunnerConfigError(`${what} names no control-plane address`);
  const seen = new Map<string, string>();
  return items.map((item, i) => {
    const address = item.trim();
    if (!address) throw new RunnerConfigError(`${what}: address ${i + 1} of ${items.length} is empty`);
    const { host, port } = hostPort(address, `${what}: address`, 1);
    const key = `${host.toLowerCase()}:${port}`;
    const earlier = seen.get(key);
    if (earlier !== undefined) throw new RunnerConfigError(`${what} names the same control plane twice: "${earlier}" and "${address}"`);
    seen.set(key, address);
    return address;
  });
}

/** The address of `metricsListen` (`CARAPACE_RUNNER_METRICS_LISTEN`): `host:port`, port 0 for any free one. */
export function parseListenAddress(raw: string): ListenAddress {
  return hostPort(raw.trim(), 'metricsListen (CARAPACE_RUNNER_METRICS_LISTEN)', 0);
}

/** The runner name inside a runner token (`crt.<base64url name>.<secret>`), or null. */
export function nameOfToken(token: string): string | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== 'crt') return null;
  const name = Buffer.from(parts[1] ?? '', 'base64url').toString('utf8');
  return /^[a-z0-9][a-z0-9_.-]{0,62}$/.test(name) ? name : null;
}

/**
 * Reads the configuration once: defaults, then the YAML file (`--config` or
 * `CARAPACE_RUNNER_CONFIG`), then `CARAPACE_RUNNER_*` variables. `CARAPACE_RUNNER_TOKEN_FILE`
 * reads the token from a file.
 */
export function loadRunnerConfig(options: { file?: string | undefined; env: Env }): RunnerConfig & { name: string } {
  const fail = (message: string) => new RunnerConfigError(message);
  const file = options.file ?? options.env.CARAPACE_RUNNER_CONFIG;
  const fromFile = file ? readYamlMapping(file, fail) : {};
  const fromEnv = envLayer(options.env, RUNNER_ENV_KEYS, DEFAULTS, fail, (path, raw) => (path === 'labels' ? parseLabels(raw) : undefined));
  const tokenFile = options.env.CARAPACE_RUNNER_TOKEN_FILE;
  if (tokenFile && fromEnv.token === undefined) {
    try {
      fromEnv.token = readFileSync(tokenFile, 'utf8').trim();
    } catch (e) {
      throw new RunnerConfigError(`cannot read CARAPACE_RUNNER_TOKEN_FILE ${tokenFile}: ${(e as Error).message}`);
    }
  }
  const merged = mergeLayers(DEFAULTS, fromFile, fromEnv);
  const problem = schemaProblem(RunnerConfigSchema, merged);
  if (problem) throw new RunnerConfigError(`invalid runner configuration ${problem}`);
  const { controlPlane, metricsListen, ...config } = merged as Static<typeof RunnerConfigSchema>;
  const controlPlanes = Object.freeze(parseControlPlanes(controlPlane));
  const name = config.name ?? nameOfToken(config.token);
  if (!name) throw new RunnerConfigError('the runner name is neither configured nor inside the token');
  if (config.tls.enabled !== true && (config.tls.caFile || config.tls.certFile)) {
    throw new RunnerConfigError('tls.caFile and tls.certFile need tls.enabled (CARAPACE_RUNNER_TLS=true)');
  }
  return Object.freeze({
    ...config,
    name,
    controlPlanes,
    metricsListen: metricsListen === null ? null : Object.freeze(parseListenAddress(metricsListen)),
    workDir: resolve(config.workDir),
    sshKeyFile: resolve(config.sshKeyFile),
  });
}
