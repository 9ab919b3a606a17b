// Whoever may edit a playbook configuration writes the inventory and the extra variables
// that ansible-playbook reads here, on the runner, which holds the SSH key of every server
// and the runner token. Two things keep them data:
// - connection variables that would run a program, add ssh options, use another key or turn
//   the host key check off on this machine are refused before the run starts;
// - every string value reaches Ansible marked unsafe (`{"__ansible_unsafe": "..."}`, which
//   Ansible's JSON reader turns into an AnsibleUnsafeText for inventory script output and
//   `-e @file.json`), so that `{{ lookup('pipe', ...) }}` is text and never templated.
// Keys are not templated by Ansible; group names are (in `group_names`), hence their rule.

/** What the runner lets a configuration choose. */
export interface VariablePolicy {
  /** `ansible_connection: local` runs tasks on the runner itself: tests and labs only. */
  readonly allowLocalConnection: boolean;
}

// Ansible reads variables by exact name: anything but an identifier is not a variable a
// playbook can use, and some plugin options are looked up under names such as
// "delegated_vars['ansible_host']".
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
// Ansible's own rule for group names, plus "-" and "." which it accepts with a warning.
const GROUP_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
// the control plane takes server user names as `^[a-z_][a-z0-9_-]*[$]?$`; AD-style names too
const USER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}\$?$/;
const INTERPRETER = /^(?:auto|auto_silent|auto_legacy|auto_legacy_silent|\/[A-Za-z0-9_.+/-]{1,255})$/;

const RUNS_A_PROGRAM = 'names a program the runner would run';
const SSH_OPTIONS = 'adds options to ssh, scp or sftp on the runner (ProxyCommand, LocalCommand and the like run commands there)';
const KEY_ONLY = 'the runner logs in with its own key only';
const HOST_KEYS = 'the host keys are checked by the runner (pre-flight and known_hosts); this would turn the check off';
const CONTROL_SOCKETS = "moves the SSH master connections out of the execution's private directory";
const MAGIC = 'Ansible sets it itself; a value given here would change which host is connected to';

/** Variables a configuration may not set, anywhere (global, group or host variables), and why. */
export const REFUSED_VARIABLES: Readonly<Record<string, string>> = {
  ansible_ssh_executable: RUNS_A_PROGRAM,
  ansible_scp_executable: RUNS_A_PROGRAM,
  ansible_sftp_executable: RUNS_A_PROGRAM,
  ansible_ssh_args: SSH_OPTIONS,
  ansible_ssh_common_args: SSH_OPTIONS,
  ansible_ssh_extra_args: SSH_OPTIONS,
  ansible_scp_extra_args: SSH_OPTIONS,
  ansible_sftp_extra_args: SSH_OPTIONS,
  ansible_ssh_pkcs11_provider: 'loads a library into ssh on the runner',
  ansible_private_key_file: `${KEY_ONLY}; this names a file of the runner`,
  ansible_ssh_private_key_file: `${KEY_ONLY}; this names a file of the runner`,
  ansible_password: `${KEY_ONLY} (a password makes Ansible run sshpass on the runner)`,
  ansible_ssh_pass: `${KEY_ONLY} (a password makes Ansible run sshpass on the runner)`,
  ansible_ssh_password: `${KEY_ONLY} (a password makes Ansible run sshpass on the runner)`,
  ansible_sshpass_prompt: `${KEY_ONLY} (a password makes Ansible run sshpass on the runner)`,
  ansible_host_key_checking: HOST_KEYS,
  ansible_ssh_host_key_checking: HOST_KEYS,
  ansible_control_path: CONTROL_SOCKETS,
  ansible_control_path_dir: CONTROL_SOCKETS,
  inventory_hostname: MAGIC,
  inventory_hostname_short: MAGIC,
  group_names: MAGIC,
  groups: MAGIC,
  hostvars: MAGIC,
  ansible_delegated_vars: MAGIC,
  carapace_artifacts_dir: 'the runner sets it itself: the directory on the runner where a run may put files for the control plane',
};

const SSH_CONNECTIONS: ReadonlySet<string> = new Set(['ssh', 'ansible.builtin.ssh']);
const LOCAL_CONNECTIONS: ReadonlySet<string> = new Set(['local', 'ansible.builtin.local']);
// What Ansible's JSON reader gives a meaning of its own, in any object.
const DECODER_KEYS: ReadonlySet<string> = new Set(['__ansible_unsafe', '__ansible_vault']);
const GROUP_KEYS = ['hosts', 'vars', 'children'] as const;

/**
 * Why the variables or the shape of a configuration cannot be run, or null. Refused: a
 * variable name that is not an identifier, a variable of `REFUSED_VARIABLES`,
 * `ansible_connection` other than ssh (or `local` when the policy allows it), an
 * `ansible_port`, `ansible_user` or `ansible_*_interpreter` of the wrong form, a key
 * `__ansible_unsafe` / `__ansible_vault` in a value, a group name that is not Ansible's, and
 * an inventory Ansible's script inventory would read otherwise than written (hosts given as
 * an object, a group without `hosts`, `vars` or `children`). Hosts themselves are
 * `inventoryHostProblem`'s part.
 */
export function configurationProblem(inventory: Record<string, unknown>, globalVars: Record<string, unknown>, policy: VariablePolicy): string | null {
  const problems: string[] = [];
  const checkVars = (vars: unknown, where: string): void => {
    if (!isRecord(vars)) {
      problems.push(`the variables of ${where} are not an object`);
      return;
    }
    for (const [name, value] of Object.entries(vars)) {
      const problem = variableProblem(name, value, policy);
      if (problem !== null) problems.push(`${show(name)} in ${where}: ${problem}`);
    }
  };
  const checkGroupName = (name: string, where: string): void => {
    if (!GROUP_NAME.test(name)) problems.push(`${where}: ${show(name)} is not a group name (letters, digits, "_", "-" and ".")`);
  };

  checkVars(globalVars, 'global_vars');
  for (const [name, group] of Object.entries(inventory)) {
    if (name === '_meta') {
      if (!isRecord(group)) {
        problems.push('_meta is not an object');
        continue;
      }
      if (group.hostvars === undefined) continue;
      if (!isRecord(group.hostvars)) {
        problems.push('_meta.hostvars is not an object');
        continue;
      }
      for (const [host, vars] of Object.entries(group.hostvars)) checkVars(vars, `host ${show(host)}`);
      continue;
    }
    const where = `group ${show(name)}`;
    checkGroupName(name, 'inventory');
    if (Array.isArray(group)) continue;
    if (!isRecord(group) || !GROUP_KEYS.some((key) => key in group)) {
      // Ansible would read such a group as a host of the group's name with these variables
      problems.push(`${where} is neither a list of hosts nor an object with "hosts", "vars" or "children"`);
      continue;
    }
    if (group.hosts !== undefined && !Array.isArray(group.hosts)) problems.push(`${where}: "hosts" must be a list of hosts`);
    if (group.vars !== undefined) checkVars(group.vars, where);
    if (group.children !== undefined) {
      if (!Array.isArray(group.children)) problems.push(`${where}: "children" must be a list of group names`);
      else for (const child of group.children) checkGroupName(typeof child === 'string' ? child : JSON.stringify(child), `children of ${where}`);
    }
  }
  if (problems.length === 0) return null;
  const shown = problems.slice(0, 3).join('; ');
  return problems.length > 3 ? `${shown}; and ${problems.length - 3} more` : shown;
}

function variableProblem(name: string, value: unknown, policy: VariablePolicy): string | null {
  if (!VARIABLE_NAME.test(name)) return 'not a variable name (letters, digits and "_", not starting with a digit)';
  const refused = REFUSED_VARIABLES[name];
  if (refused !== undefined && Object.hasOwn(REFUSED_VARIABLES, name)) return `refused: ${refused}`;
  switch (name) {
    case 'ansible_connection': {
      if (typeof value === 'string' && SSH_CONNECTIONS.has(value)) break;
      if (typeof value === 'string' && LOCAL_CONNECTIONS.has(value) && policy.allowLocalConnection) break;
      return `refused: ${preview(value)} is not "ssh" (other connections run tasks on the runner or skip its key and host key checks)`;
    }
    case 'ansible_port':
    case 'ansible_ssh_port':
      if (!isPort(value)) return `${preview(value)} is not a TCP port (1-65535)`;
      break;
    case 'ansible_user':
    case 'ansible_ssh_user':
      if (typeof value !== 'string' || !USER_NAME.test(value)) return `${preview(value)} is not a user name`;
      break;
    default:
      // on a remote host the interpreter is that host's business, but Ansible puts it
      // unquoted on a shell command line, which is the runner's for a task run there
      if (/^ansible_\w+_interpreter$/.test(name) && (typeof value !== 'string' || !INTERPRETER.test(value))) {
        return `${preview(value)} is not an absolute path without spaces or "auto"`;
      }
      if (name === 'ansible_interpreter_python_fallback' && !(Array.isArray(value) && value.every((v) => typeof v === 'string' && INTERPRETER.test(v)))) {
        return 'must be a list of absolute paths without spaces';
      }
  }
  const key = decoderKeyIn(value);
  if (key !== null) return `holds the key ${show(key)}, which Ansible would not read as data`;
  return null;
}

function isPort(value: unknown): boolean {
  const port = typeof value === 'string' && /^\d{1,5}$/.test(value) ? Number(value) : value;
  return typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65_535;
}

function decoderKeyIn(value: unknown): string | null {
  if (Array.isArray(value)) {
    for (const item of value) {
      const key = decoderKeyIn(item);
      if (key !== null) return key;
    }
  } else if (isRecord(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (DECODER_KEYS.has(key)) return key;
      const inner = decoderKeyIn(item);
      if (inner !== null) return inner;
    }
  }
  return null;
}

/**
 * The value with every string, at any depth, written as `{"__ansible_unsafe": "<text>"}`:
 * Ansible's JSON reader makes it an unsafe string, which templating leaves as it is. Keys,
 * numbers, booleans and null are kept.
 */
export function markUnsafe(value: unknown): unknown {
  if (typeof value === 'string') return { __ansible_unsafe: value };
  if (Array.isArray(value)) return value.map(markUnsafe);
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = markUnsafe(item);
    return out;
  }
  return value;
}

/** Variables (`global_vars`, group or host variables) as `vars.json` holds them. */
export function unsafeVars(vars: Record<string, unknown>): Record<string, unknown> {
  return markUnsafe(vars) as Record<string, unknown>;
}

/**
 * The inventory as `inventory.json` holds it: groups with their `hosts` and `children` as
 * given (hosts and group names are checked, and must stay plain names), their `vars` and
 * `_meta.hostvars` marked unsafe. Keys Ansible's script inventory ignores are left out.
 * Expects an inventory `configurationProblem` accepted.
 */
export function unsafeInventory(inventory: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, group] of Object.entries(inventory)) {
    if (name === '_meta') {
      const hostvars = isRecord(group) && isRecord(group.hostvars) ? group.hostvars : {};
      const vars: Record<string, unknown> = {};
      for (const [host, hostVars] of Object.entries(hostvars)) vars[host] = isRecord(hostVars) ? unsafeVars(hostVars) : {};
      out._meta = { hostvars: vars };
      continue;
    }
    if (!isRecord(group)) {
      out[name] = group;
      continue;
    }
    const entry: Record<string, unknown> = {};
    if (group.hosts !== undefined) entry.hosts = group.hosts;
    if (isRecord(group.vars)) entry.vars = unsafeVars(group.vars);
    if (group.children !== undefined) entry.children = group.children;
    out[name] = entry;
  }
  return out;
}

function show(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
}

function preview(value: unknown): string {
  return typeof value === 'string' ? show(value) : (JSON.stringify(value) ?? String(value)).slice(0, 64);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
