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

/**
 * What the hosts need: python3 for Ansible and the discovery script, sudo for the rule above.
 * Each is a package of that name providing a command of that name (Debian, Ubuntu, Fedora, EL).
 */
export const PACKAGES: readonly string[] = ['python3', 'sudo'];

/**
 * The first `runcmd` step (`sh -c INSTALL_MISSING_SCRIPT carapace-packages python3 sudo`):
 * installs the packages named after `$0` whose command is missing, and nothing else. A host
 * that has them (most images) never calls the package manager, so a host with no reachable
 * mirror (air-gapped) loses no time and fails nothing; one that lacks them and cannot get them
 * fails this step with a message naming them (discovery could not run without python3).
 */
export const INSTALL_MISSING_SCRIPT = [
  'missing=""',
  'for p in "$@"; do command -v "$p" >/dev/null 2>&1 || missing="$missing $p"; done',
  '[ -z "$missing" ] && exit 0',
  'echo "carapace: installing$missing (not on this host)" >&2',
  'if command -v apt-get >/dev/null 2>&1; then',
  '  export DEBIAN_FRONTEND=noninteractive',
  '  apt-get update -q && apt-get install -y -q $missing && exit 0',
  'elif command -v dnf >/dev/null 2>&1; then',
  '  dnf install -y $missing && exit 0',
  'elif command -v yum >/dev/null 2>&1; then',
  '  yum install -y $missing && exit 0',
  'fi',
  'echo "carapace: could not install$missing: the discovery script and Ansible need them" >&2',
  'exit 1',
  '',
].join('\n');
