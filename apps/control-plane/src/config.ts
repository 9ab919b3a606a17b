import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type, type Static } from 'typebox';
import { deepFreeze, envLayer, LogFormatSchema, LogLevelSchema, mergeLayers, readYamlMapping, schemaProblem, type Env } from '@carapace/config';

/**
 * The built web UI of this install (`apps/ui/dist`): the same place relative to this file in
 * the sources (`src/`) and in the build (`dist/`).
 */
export const DEFAULT_UI_DIR = fileURLToPath(new URL('../../ui/dist', import.meta.url));

/**
 * The built documentation site of this checkout (`docs/.vitepress/dist`, `npm run docs:build`):
 * found like the web UI, from this file's place in the sources or the build.
 */
export const DEFAULT_DOCS_DIR = fileURLToPath(new URL('../../../docs/.vitepress/dist', import.meta.url));

const Port = Type.Integer({ minimum: 0, maximum: 65535 });

/** The ends of an execution a notification target may ask for. */
export const NOTIFICATION_EVENTS = ['completed', 'failed', 'canceled'] as const;
export type NotificationEvent = (typeof NOTIFICATION_EVENTS)[number];
/** The events of a cluster a notification target may ask for: a change of its health (`docs/guide/cluster-status.md`). */
export const CLUSTER_EVENTS = ['cluster_health'] as const;
export type ClusterEvent = (typeof CLUSTER_EVENTS)[number];
const Events = Type.Array(Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('canceled'), Type.Literal('cluster_health')]), {
  minItems: 1,
  uniqueItems: true,
});
/** Where notifications go: e-mail addresses and signed webhooks, each for some or all events. */
const NotificationTargets = Type.Object(
  {
    email: Type.Optional(
      Type.Array(
        Type.Union([
          Type.String({ minLength: 3 }),
          Type.Object({ to: Type.String({ minLength: 3 }), events: Type.Optional(Events) }, { additionalProperties: false }),
        ]),
      ),
    ),
    webhooks: Type.Optional(
      Type.Array(
        Type.Object(
          {
            url: Type.String({ minLength: 1 }),
            /** The HMAC-SHA256 key of the signature; never logged nor served. */
            secret: Type.String({ minLength: 16 }),
            events: Type.Optional(Events),
          },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);
export type NotificationTargets = Static<typeof NotificationTargets>;

/** The configuration of the control plane; every key is documented in deploy/carapace.example.yaml. */
export const ConfigSchema = Type.Object(
  {
    dataDir: Type.String({ minLength: 1 }),
    logLevel: LogLevelSchema,
    /** `auto`: coloured text for a person when standard output is a terminal, JSON lines otherwise. */
    logFormat: LogFormatSchema,
    http: Type.Object(
      {
        host: Type.String({ minLength: 1 }),
        port: Port,
        bodyLimitBytes: Type.Integer({ minimum: 1024 }),
        trustProxy: Type.Boolean(),
      },
      { additionalProperties: false },
    ),
    grpc: Type.Object(
      {
        host: Type.String({ minLength: 1 }),
        port: Port,
        /** PEM files; with none set the gRPC port speaks plain HTTP/2 (keep it on a trusted network). */
        tlsCertFile: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        tlsKeyFile: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        /** CA of runner client certificates: when set, runners must present one (mTLS). */
        tlsClientCaFile: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        heartbeatIntervalMs: Type.Integer({ minimum: 100 }),
        leaseTimeoutMs: Type.Integer({ minimum: 1000 }),
      },
      { additionalProperties: false },
    ),
    admin: Type.Object(
      { password: Type.Union([Type.String({ minLength: 8 }), Type.Null()]), email: Type.String({ minLength: 3 }) },
      { additionalProperties: false },
    ),
    discoveryTokens: Type.Array(Type.String({ minLength: 16 })),
    smtp: Type.Object(
      {
        host: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        port: Port,
        secure: Type.Boolean(),
        user: Type.Union([Type.String(), Type.Null()]),
        password: Type.Union([Type.String(), Type.Null()]),
        from: Type.String({ minLength: 3 }),
      },
      { additionalProperties: false },
    ),
    tokenTtlS: Type.Integer({ minimum: 1 }),
    passwordResetTtlS: Type.Integer({ minimum: 1 }),
    resetUrl: Type.String({ minLength: 1 }),
    /** The base URL of the API as users reach it (links in notifications); null: from `http.host` and `http.port`. */
    publicUrl: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
    /** Targets of the notifications of an execution's end: global, and per cluster (keyed by cluster id or name). */
    notifications: Type.Object(
      {
        email: NotificationTargets.properties.email,
        webhooks: NotificationTargets.properties.webhooks,
        clusters: Type.Record(Type.String({ minLength: 1 }), NotificationTargets),
      },
      { additionalProperties: false },
    ),
    /** The web UI served at `/` beside `/v1`. */
    ui: Type.Object(
      {
        /** The built single-page application (its index.html and assets/); null, or a directory without index.html: no UI. */
        dir: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        /** The built documentation site (VitePress), served at `/docs/`; null: no site (`/docs/` says so). */
        docsDir: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
      },
      { additionalProperties: false },
    ),
    runner: Type.Union([Type.Literal('embedded'), Type.Literal('none')]),
    /** What the embedded runner (`runner: embedded`) is started with. */
    embeddedRunner: Type.Object(
      {
        /** When the control plane stops: how long the runner's executions may go on before they are canceled. */
        drainGraceMs: Type.Integer({ minimum: 0 }),
        /** Cancel: SIGINT, then SIGTERM after this, then SIGKILL after this again. */
        cancelGraceMs: Type.Integer({ minimum: 0 }),
        /** null: the control plane's `logLevel`. */
        logLevel: Type.Union([LogLevelSchema, Type.Null()]),
        /** null: the control plane's `logFormat` (the runner writes to the same standard output). */
        logFormat: Type.Union([LogFormatSchema, Type.Null()]),
      },
      { additionalProperties: false },
    ),
    /**
     * Where the tables are: `url` null keeps them in SQLite at `<dataDir>/carapace.db`; a
     * `postgres://` URL puts them in PostgreSQL, which several control-plane replicas can share.
     */
    /** `/metrics`: open when `token` is null, else only with `Authorization: Bearer <token>`. */
    metrics: Type.Object({ token: Type.Union([Type.String({ minLength: 16 }), Type.Null()]) }, { additionalProperties: false }),
    database: Type.Object(
      {
        url: Type.Union([Type.String({ pattern: '^postgres(ql)?://' }), Type.Null()]),
        /** Connections of the PostgreSQL pool of this replica. */
        poolSize: Type.Integer({ minimum: 2, maximum: 1000 }),
      },
      { additionalProperties: false },
    ),
    /**
     * The key the secrets held in the database are encrypted with (AES-256-GCM): `key` (32
     * bytes in base64) or else the file `keyFile` (default `<dataDir>/secrets.key`, created
     * 0600 at the first start). Never stored in the database nor in a backup.
     */
    secrets: Type.Object(
      {
        keyFile: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        key: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
      },
      { additionalProperties: false },
    ),
    /** Scheduled online backups (SQLite): every `intervalS` (0: none) into `dir` (default `<dataDir>/backups`), the newest `keep` kept. */
    backup: Type.Object(
      {
        dir: Type.Union([Type.String({ minLength: 1 }), Type.Null()]),
        intervalS: Type.Integer({ minimum: 0 }),
        keep: Type.Integer({ minimum: 1 }),
      },
      { additionalProperties: false },
    ),
    list: Type.Object(
      {
        defaultPerPage: Type.Integer({ minimum: 1 }),
        maxPerPage: Type.Integer({ minimum: 1 }),
        /** Wall-clock budget of one list query (a filter or sort past it answers 400). */
        queryBudgetMs: Type.Integer({ minimum: 10 }),
      },
      { additionalProperties: false },
    ),
    throttle: Type.Object(
      {
        windowS: Type.Integer({ minimum: 1 }),
        loginFailuresPerUser: Type.Integer({ minimum: 1 }),
        loginFailuresPerAddress: Type.Integer({ minimum: 1 }),
        resetRequestsPerUser: Type.Integer({ minimum: 1 }),
        resetRequestsPerAddress: Type.Integer({ minimum: 1 }),
        registrationsPerAddress: Type.Integer({ minimum: 1 }),
        registrationFailuresPerAddress: Type.Integer({ minimum: 1 }),
        loginDelayBaseMs: Type.Integer({ minimum: 0 }),
        loginDelayMaxMs: Type.Integer({ minimum: 0 }),
      },
      { additionalProperties: false },
    ),
    /**
     * Cluster status (`GET /v1/cluster/{id}/status/`): what Ceph says of each cluster with
     * monitors, collected by a runner every `intervalS` seconds (0: never) and at once after
     * an execution on the cluster ended; `connectTimeoutS` is `ceph --connect-timeout`.
     */
    status: Type.Object(
      { intervalS: Type.Integer({ minimum: 0, maximum: 86_400 }), connectTimeoutS: Type.Integer({ minimum: 1, maximum: 300 }) },
      { additionalProperties: false },
    ),
    /** scrypt derivations at once and waiting (logins past a full queue answer 503). */
    passwordHashing: Type.Object(
      { concurrency: Type.Integer({ minimum: 1, maximum: 64 }), queue: Type.Integer({ minimum: 0 }) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type Config = Readonly<Static<typeof ConfigSchema>>;

/** The defaults: a complete configuration for one machine. */
export const DEFAULT_CONFIG: Config = {
  dataDir: './data',
  logLevel: 'info',
  logFormat: 'auto',
  http: { host: '127.0.0.1', port: 8080, bodyLimitBytes: 1_048_576, trustProxy: false },
  grpc: { host: '127.0.0.1', port: 8081, tlsCertFile: null, tlsKeyFile: null, tlsClientCaFile: null, heartbeatIntervalMs: 5000, leaseTimeoutMs: 30_000 },
  admin: { password: null, email: 'root@localhost' },
  discoveryTokens: [],
  smtp: { host: null, port: 25, secure: false, user: null, password: null, from: 'carapace@localhost' },
  tokenTtlS: 1800,
  passwordResetTtlS: 3600,
  resetUrl: 'http://127.0.0.1:8080/password_reset/{reset_token}/',
  publicUrl: null,
  notifications: { email: [], webhooks: [], clusters: {} },
  ui: { dir: DEFAULT_UI_DIR, docsDir: DEFAULT_DOCS_DIR },
  runner: 'embedded',
  // The whole installation stops together: runs get a short grace, then are canceled.
  embeddedRunner: { drainGraceMs: 3000, cancelGraceMs: 2000, logLevel: null, logFormat: null },
  database: { url: null, poolSize: 10 },
  metrics: { token: null },
  secrets: { keyFile: null, key: null },
  backup: { dir: null, intervalS: 0, keep: 7 },
  list: { defaultPerPage: 25, maxPerPage: 1000, queryBudgetMs: 1000 },
  throttle: {
    windowS: 300,
    loginFailuresPerUser: 10,
    loginFailuresPerAddress: 50,
    resetRequestsPerUser: 3,
    resetRequestsPerAddress: 20,
    registrationsPerAddress: 1000,
    registrationFailuresPerAddress: 50,
    loginDelayBaseMs: 250,
    loginDelayMaxMs: 4000,
  },
  passwordHashing: { concurrency: 1, queue: 64 },
  status: { intervalS: 30, connectTimeoutS: 10 },
};

/** Each environment variable and the configuration key it sets. */
export const ENV_KEYS: Readonly<Record<string, string>> = {
  CARAPACE_DATA_DIR: 'dataDir',
  CARAPACE_DATABASE_URL: 'database.url',
  CARAPACE_DATABASE_POOL_SIZE: 'database.poolSize',
  CARAPACE_METRICS_TOKEN: 'metrics.token',
  CARAPACE_LOG_LEVEL: 'logLevel',
  CARAPACE_LOG_FORMAT: 'logFormat',
  CARAPACE_HTTP_HOST: 'http.host',
  CARAPACE_HTTP_PORT: 'http.port',
  CARAPACE_HTTP_BODY_LIMIT_BYTES: 'http.bodyLimitBytes',
  CARAPACE_HTTP_TRUST_PROXY: 'http.trustProxy',
  CARAPACE_GRPC_HOST: 'grpc.host',
  CARAPACE_GRPC_PORT: 'grpc.port',
  CARAPACE_GRPC_TLS_CERT: 'grpc.tlsCertFile',
  CARAPACE_GRPC_TLS_KEY: 'grpc.tlsKeyFile',
  CARAPACE_GRPC_TLS_CLIENT_CA: 'grpc.tlsClientCaFile',
  CARAPACE_RUNNER_HEARTBEAT_INTERVAL_MS: 'grpc.heartbeatIntervalMs',
  CARAPACE_RUNNER_LEASE_TIMEOUT_MS: 'grpc.leaseTimeoutMs',
  CARAPACE_ADMIN_PASSWORD: 'admin.password',
  CARAPACE_ADMIN_EMAIL: 'admin.email',
  CARAPACE_DISCOVERY_TOKEN: 'discoveryTokens',
  CARAPACE_SMTP_HOST: 'smtp.host',
  CARAPACE_SMTP_PORT: 'smtp.port',
  CARAPACE_SMTP_SECURE: 'smtp.secure',
  CARAPACE_SMTP_USER: 'smtp.user',
  CARAPACE_SMTP_PASSWORD: 'smtp.password',
  CARAPACE_SMTP_FROM: 'smtp.from',
  CARAPACE_TOKEN_TTL_S: 'tokenTtlS',
  CARAPACE_PASSWORD_RESET_TTL_S: 'passwordResetTtlS',
  CARAPACE_RESET_URL: 'resetUrl',
  CARAPACE_PUBLIC_URL: 'publicUrl',
  CARAPACE_UI_DIR: 'ui.dir',
  CARAPACE_DOCS_DIR: 'ui.docsDir',
  CARAPACE_RUNNER: 'runner',
  CARAPACE_RUNNER_DRAIN_GRACE_MS: 'embeddedRunner.drainGraceMs',
  CARAPACE_RUNNER_CANCEL_GRACE_MS: 'embeddedRunner.cancelGraceMs',
  CARAPACE_RUNNER_LOG_LEVEL: 'embeddedRunner.logLevel',
  CARAPACE_RUNNER_LOG_FORMAT: 'embeddedRunner.logFormat',
  CARAPACE_SECRETS_KEY_FILE: 'secrets.keyFile',
  CARAPACE_SECRETS_KEY: 'secrets.key',
  CARAPACE_BACKUP_DIR: 'backup.dir',
  CARAPACE_BACKUP_INTERVAL_S: 'backup.intervalS',
  CARAPACE_BACKUP_KEEP: 'backup.keep',
  CARAPACE_LIST_DEFAULT_PER_PAGE: 'list.defaultPerPage',
  CARAPACE_LIST_MAX_PER_PAGE: 'list.maxPerPage',
  CARAPACE_LIST_QUERY_BUDGET_MS: 'list.queryBudgetMs',
  CARAPACE_THROTTLE_WINDOW_S: 'throttle.windowS',
  CARAPACE_THROTTLE_LOGIN_FAILURES_PER_USER: 'throttle.loginFailuresPerUser',
  CARAPACE_THROTTLE_LOGIN_FAILURES_PER_ADDRESS: 'throttle.loginFailuresPerAddress',
  CARAPACE_THROTTLE_LOGIN_DELAY_BASE_MS: 'throttle.loginDelayBaseMs',
  CARAPACE_THROTTLE_LOGIN_DELAY_MAX_MS: 'throttle.loginDelayMaxMs',
  CARAPACE_THROTTLE_RESET_REQUESTS_PER_USER: 'throttle.resetRequestsPerUser',
  CARAPACE_THROTTLE_RESET_REQUESTS_PER_ADDRESS: 'throttle.resetRequestsPerAddress',
  CARAPACE_THROTTLE_REGISTRATIONS_PER_ADDRESS: 'throttle.registrationsPerAddress',
  CARAPACE_THROTTLE_REGISTRATION_FAILURES_PER_ADDRESS: 'throttle.registrationFailuresPerAddress',
  CARAPACE_PASSWORD_HASH_CONCURRENCY: 'passwordHashing.concurrency',
  CARAPACE_PASSWORD_HASH_QUEUE: 'passwordHashing.queue',
  CARAPACE_STATUS_INTERVAL_S: 'status.intervalS',
  CARAPACE_STATUS_CONNECT_TIMEOUT_S: 'status.connectTimeoutS',
};

/** The key file's name in the data directory, when `secrets.keyFile` is not set. */
export const SECRETS_KEY_FILE = 'secrets.key';

/** A configuration that cannot be used; the message says which key and why. */
export class ConfigError extends Error {}

/**
 * Reads the configuration once: the defaults, then the YAML file (`--config` or
 * `CARAPACE_CONFIG`), then the `CARAPACE_*` environment variables. Validates it and
 * returns a frozen object. Throws a ConfigError that names the bad key.
 */
export function loadConfig(options: { file?: string | undefined; env: Env }): Config {
  const fail = (message: string) => new ConfigError(message);
  const file = options.file ?? options.env.CARAPACE_CONFIG;
  const fromFile = file ? readYamlMapping(file, fail) : {};
  const fromEnv = envLayer(options.env, ENV_KEYS, DEFAULT_CONFIG, fail, (path, raw) =>
    path === 'discoveryTokens' ? raw.split(',').map((t) => t.trim()).filter(Boolean) : undefined,
  );
  const merged = mergeLayers(DEFAULT_CONFIG, fromFile, fromEnv);
  const problem = schemaProblem(ConfigSchema, merged);
  if (problem) throw new ConfigError(`invalid configuration ${problem}`);
  const config = merged as Config;
  if (config.grpc.heartbeatIntervalMs * 3 > config.grpc.leaseTimeoutMs) {
    throw new ConfigError('grpc.heartbeatIntervalMs must be at most a third of grpc.leaseTimeoutMs, so that a lease survives a lost heartbeat or two');
  }
  checkUrl('publicUrl', config.publicUrl);
  if (config.backup.intervalS > 0 && config.database.url) {
    throw new ConfigError('backup.intervalS: scheduled backups are of the SQLite database; back up PostgreSQL with pg_dump (README, "Backups and secrets")');
  }
  const targets: [string, NotificationTargets][] = [
    ['notifications', config.notifications],
    ...Object.entries(config.notifications.clusters).map(([key, t]): [string, NotificationTargets] => [`notifications.clusters.${key}`, t]),
  ];
  const secrets = new Map<string, string>();
  for (const [path, t] of targets) {
    (t.webhooks ?? []).forEach((w, i) => {
      checkUrl(`${path}.webhooks[${i}].url`, w.url);
      // a delivery finds its secret by URL (secrets are not stored with deliveries)
      if ((secrets.get(w.url) ?? w.secret) !== w.secret) throw new ConfigError(`${path}.webhooks[${i}]: a webhook URL configured twice must have the same secret`);
      secrets.set(w.url, w.secret);
    });
  }
  const dataDir = resolve(config.dataDir);
  return deepFreeze({
    ...config,
    dataDir,
    ui: { dir: config.ui.dir === null ? null : resolve(config.ui.dir), docsDir: config.ui.docsDir === null ? null : resolve(config.ui.docsDir) },
    secrets: { ...config.secrets, keyFile: config.secrets.keyFile === null ? join(dataDir, SECRETS_KEY_FILE) : resolve(config.secrets.keyFile) },
    backup: { ...config.backup, dir: config.backup.dir === null ? join(dataDir, 'backups') : resolve(config.backup.dir) },
  });
}

/** Refuses a URL that is not absolute http(s) (a webhook or the public URL). */
function checkUrl(key: string, value: string | null): void {
  if (value === null) return;
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    // the value is not shown: a webhook URL may carry a credential in its path or query
    throw new ConfigError(`${key} must be an absolute http:// or https:// URL`);
  }
}

/**
 * The base URL of the API as users reach it, without a trailing slash: `publicUrl`, or else
 * `http.host` and `http.port` (a wildcard address as the loopback one).
 */
export function publicBaseUrl(config: Config): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, '');
  const host = config.http.host === '0.0.0.0' ? '127.0.0.1' : config.http.host === '::' ? '::1' : config.http.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.http.port}`;
}
