import { Document, isSeq } from 'yaml';
import {
  DEFAULT_RETRY_DEADLINE,
  DEFAULT_TIMEOUT,
  DEFAULT_USERNAME,
  DISCOVERY_PATHS,
  DISCOVERY_UNIT_NAME,
  INSTALL_MISSING_SCRIPT,
  PACKAGES,
  SUDO_RULE,
} from './constants.js';
import { DISCOVERY_SCRIPT } from './discovery-script.generated.js';
import {
  checkBoolean,
  checkCaBundle,
  checkKeys,
  checkPublicKey,
  checkSeconds,
  checkToken,
  checkUrl,
  checkUsername,
} from './validate.js';

/** Options of {@link generateCloudConfig}. */
export interface CloudConfigOptions {
  /**
   * Base URL of the control plane API as the new server reaches it: `http(s)://host[:port]`
   * with no path (an optional trailing slash is allowed). The server posts to `<url>/v1/server/`.
   */
  url: string;
  /** The discovery token from the service configuration; sent as `Authorization: <token>`. */
  serverDiscoveryToken: string;
  /** OpenSSH public key of the automation tool, put in the user's authorized keys. */
  publicKey: string;
  /** The user the automation tool logs in as. Default `ansible`. */
  username?: string;
  /** Timeout in seconds of each registration request. Default 20. */
  timeout?: number;
  /** When true, the output has the user and packages but no discovery files. Default false. */
  noDiscovery?: boolean;
  /**
   * PEM certificate(s) that verify the control plane's TLS certificate, written to the host
   * and used by the discovery script instead of the system trust store. TLS verification is
   * always on. Ignored (but still validated) with `noDiscovery`.
   */
  caBundle?: string | null;
  /**
   * Seconds after which the discovery script stops retrying a registration that keeps
   * failing for a transient reason (connection error, 5xx, 429). Default 1800.
   */
  retryDeadline?: number;
}

/** Options of {@link generate_cloud_config}: the contract's snake_case names. */
export interface CloudConfigSnakeOptions {
  /** See {@link CloudConfigOptions.url}. */
  url: string;
  /** See {@link CloudConfigOptions.serverDiscoveryToken}. */
  server_discovery_token: string;
  /** See {@link CloudConfigOptions.publicKey}. */
  public_key: string;
  /** See {@link CloudConfigOptions.username}. */
  username?: string;
  /** See {@link CloudConfigOptions.timeout}. */
  timeout?: number;
  /** See {@link CloudConfigOptions.noDiscovery}. */
  no_discovery?: boolean;
  /** See {@link CloudConfigOptions.caBundle}. */
  ca_bundle?: string | null;
  /** See {@link CloudConfigOptions.retryDeadline}. */
  retry_deadline?: number;
}

/**
 * Content of the discovery script's JSON configuration file ({@link DISCOVERY_PATHS}.config).
 * The script also reads `backoff_initial` (default 1) and `backoff_max` (default 60),
 * which the generator leaves at their defaults.
 */
export interface DiscoveryConfig {
  /** Base URL of the control plane (an origin: no path). */
  url: string;
  /** The discovery token. */
  token: string;
  /** The user name registered for the automation tool. */
  username: string;
  /** Timeout in seconds of each request. */
  timeout: number;
  /** Seconds after which retrying stops. */
  deadline: number;
  /** Path of the CA bundle, when one is given. */
  cafile?: string;
}

interface Normalised {
  url: string;
  token: string;
  publicKey: string;
  username: string;
  timeout: number;
  noDiscovery: boolean;
  caBundle: string | undefined;
  retryDeadline: number;
}

type Names = Record<keyof Normalised, string>;

const CAMEL: Names = {
  url: 'url',
  token: 'serverDiscoveryToken',
  publicKey: 'publicKey',
  username: 'username',
  timeout: 'timeout',
  noDiscovery: 'noDiscovery',
  caBundle: 'caBundle',
  retryDeadline: 'retryDeadline',
};

const SNAKE: Names = {
  url: 'url',
  token: 'server_discovery_token',
  publicKey: 'public_key',
  username: 'username',
  timeout: 'timeout',
  noDiscovery: 'no_discovery',
  caBundle: 'ca_bundle',
  retryDeadline: 'retry_deadline',
};

function normalise(input: unknown, names: Names, fn: string): Normalised {
  const options = checkKeys(input, Object.values(names), fn);
  const get = (key: keyof Normalised): unknown => options[names[key]];
  const optional = <T>(key: keyof Normalised, check: (value: unknown, option: string) => T, fallback: T): T => {
    const value = get(key);
    return value === undefined ? fallback : check(value, names[key]);
  };
  const caBundle = get('caBundle');
  return {
    url: checkUrl(get('url'), names.url),
    token: checkToken(get('token'), names.token),
    publicKey: checkPublicKey(get('publicKey'), names.publicKey),
    username: optional('username', checkUsername, DEFAULT_USERNAME),
    timeout: optional('timeout', checkSeconds, DEFAULT_TIMEOUT),
    noDiscovery: optional('noDiscovery', checkBoolean, false),
    caBundle: caBundle === undefined || caBundle === null ? undefined : checkCaBundle(caBundle, names.caBundle),
    retryDeadline: optional('retryDeadline', checkSeconds, DEFAULT_RETRY_DEADLINE),
  };
}

function discoveryUnit(): string {
  return [
    '[Unit]',
    'Description=Carapace server discovery: register this host with the control plane',
    // No default dependencies, so that multi-user.target is reached without waiting for
    // this oneshot, which may retry for up to its deadline (systemd still reports the
    // system as "starting" while the job runs). The usual dependencies of a service are
    // restated instead. After cloud-final.service: at first boot, registration comes
    // once cloud-init has finished setting the host up.
    'DefaultDependencies=no',
    'Requires=sysinit.target',
    'Wants=network-online.target',
    'After=sysinit.target basic.target network-online.target cloud-final.service',
    'Conflicts=shutdown.target',
    'Before=shutdown.target',
    `ConditionPathExists=${DISCOVERY_PATHS.config}`,
    '',
    '[Service]',
    'Type=oneshot',
    `ExecStart=${DISCOVERY_PATHS.script} --config ${DISCOVERY_PATHS.config} --log ${DISCOVERY_PATHS.log}`,
    // The script enforces its own deadline.
    'TimeoutStartSec=infinity',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/** The `runcmd` step that installs python3 and sudo only where they are missing. */
function installMissing(): string[] {
  return ['sh', '-c', INSTALL_MISSING_SCRIPT, 'carapace-packages', ...PACKAGES];
}

function render(options: Normalised): string {
  const config: Record<string, unknown> = {
    users: [
      {
        name: options.username,
        gecos: 'Carapace automation',
        shell: '/bin/bash',
        lock_passwd: true,
        sudo: SUDO_RULE,
        ssh_authorized_keys: [options.publicKey],
      },
    ],
    // Not cloud-init's `package_update`/`packages`: they run apt-get even when everything is
    // installed, which on a host without a reachable mirror costs half a minute of retries
    // and fails the stage before discovery runs.
    runcmd: [installMissing()],
  };
  if (!options.noDiscovery) {
    const discovery: DiscoveryConfig = {
      url: options.url,
      token: options.token,
      username: options.username,
      timeout: options.timeout,
      deadline: options.retryDeadline,
    };
    if (options.caBundle !== undefined) discovery.cafile = DISCOVERY_PATHS.caBundle;
    const file = (path: string, permissions: string, content: string): Record<string, string> => ({
      path,
      owner: 'root:root',
      permissions,
      content,
    });
    config.write_files = [
      file(DISCOVERY_PATHS.script, '0755', DISCOVERY_SCRIPT),
      file(DISCOVERY_PATHS.config, '0600', `${JSON.stringify(discovery, null, 2)}\n`),
      ...(options.caBundle === undefined ? [] : [file(DISCOVERY_PATHS.caBundle, '0644', options.caBundle)]),
      file(DISCOVERY_PATHS.unit, '0644', discoveryUnit()),
    ];
    config.runcmd = [
      installMissing(),
      ['systemctl', 'daemon-reload'],
      ['systemctl', 'enable', DISCOVERY_UNIT_NAME],
      ['systemctl', 'start', '--no-block', DISCOVERY_UNIT_NAME],
    ];
  }
  // YAML 1.1 is what cloud-init's PyYAML reads: the `yaml` package then quotes every
  // string that 1.1 would take for something else ("on", "0755", "yes", ...).
  const doc = new Document(config, { version: '1.1' });
  const runcmd = doc.get('runcmd');
  // One line per command, except the install step, whose script reads better as a block.
  if (isSeq(runcmd)) for (const item of runcmd.items.slice(1)) if (isSeq(item)) item.flow = true;
  return `#cloud-config\n${doc.toString({ lineWidth: 0, blockQuote: 'literal' })}`;
}

/**
 * Generates the cloud-init user-data (`#cloud-config` YAML) with which a new server
 * prepares itself for Carapace and registers itself at first boot.
 *
 * The output creates `username` with passwordless sudo, a locked password, `/bin/bash`
 * and `publicKey` as its only authorized key, and installs python3 and sudo where they are
 * missing (never calling the package manager when they are present). Unless
 * `noDiscovery`, it also writes the discovery script, its configuration (mode 0600: it
 * holds the token), the optional CA bundle, and a systemd unit that runs the script at
 * every boot (no `/etc/rc.local`), and enables and starts that unit from `runcmd`.
 * See {@link DISCOVERY_PATHS}.
 *
 * Pure: no I/O. The YAML is built with the `yaml` package, so every value is quoted as
 * needed.
 *
 * @param options - See {@link CloudConfigOptions}.
 * @returns The user-data text, starting with `#cloud-config\n`.
 * @throws TypeError when an option is missing, unknown or invalid. The message names
 *   the option and never contains the token.
 */
export function generateCloudConfig(options: CloudConfigOptions): string {
  return render(normalise(options, CAMEL, 'generateCloudConfig'));
}

/**
 * {@link generateCloudConfig} with the contract's snake_case option names: `url`,
 * `server_discovery_token`, `public_key`, `username` (default `ansible`), `timeout`
 * (default 20), `no_discovery` (default false), `ca_bundle`, `retry_deadline`.
 *
 * @param options - See {@link CloudConfigSnakeOptions}.
 * @returns The user-data text, starting with `#cloud-config\n`.
 * @throws TypeError when an option is missing, unknown or invalid.
 */
export function generate_cloud_config(options: CloudConfigSnakeOptions): string {
  return render(normalise(options, SNAKE, 'generate_cloud_config'));
}
