/**
 * Where the generated user-data puts the discovery files on the host. All of them are
 * owned by root; only the configuration, which holds the discovery token, is private.
 */
export const DISCOVERY_PATHS = {
  /** The discovery script (python3, standard library only), mode 0755. */
  script: '/usr/local/lib/carapace/carapace-discovery.py',
  /** Its JSON configuration (URL, token, user name, timeouts), mode 0600. */
  config: '/etc/carapace/discovery.json',
  /** The CA bundle that verifies the control plane's certificate, when one is given; mode 0644. */
  caBundle: '/etc/carapace/ca.pem',
  /** The systemd unit that runs the script at every boot, mode 0644. */
  unit: '/etc/systemd/system/carapace-discovery.service',
  /** The log the script appends to (it also logs to stderr, hence the journal). */
  log: '/var/log/carapace-discovery.log',
} as const;

/** Name of the systemd unit that runs the discovery script at every boot. */
export const DISCOVERY_UNIT_NAME = 'carapace-discovery.service';

/** The user the automation tool (Ansible) logs in as, unless told otherwise. */
export const DEFAULT_USERNAME = 'ansible';

/** Default timeout, in seconds, of each registration request (the contract's default). */
export const DEFAULT_TIMEOUT = 20;

/**
 * Default time, in seconds, after which the discovery script stops retrying a
 * registration that keeps failing for transient reasons (30 minutes).
 */
export const DEFAULT_RETRY_DEADLINE = 1800;

/** The sudo rule given to the automation user: passwordless sudo for everything. */
export const SUDO_RULE = 'ALL=(ALL) NOPASSWD:ALL';

/** Packages the user-data installs: python3 for Ansible and the discovery script, sudo for the rule above. */
export const PACKAGES: readonly string[] = ['python3', 'sudo'];
