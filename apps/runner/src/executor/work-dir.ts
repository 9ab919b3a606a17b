// The private directory of one execution: what ansible-playbook reads (inventory, vars,
// ansible.cfg, known_hosts) and what it writes (temporary files, SSH control sockets).
import { chmod, copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { SharedAnsibleContent } from '@carapace/playbooks';
import { inventoryHostProblem } from './inventory-hosts.js';
import { configurationProblem, unsafeInventory, unsafeVars, type VariablePolicy } from './inventory-vars.js';

/** The files of an execution's work dir, all absolute paths. */
export interface WorkDir {
  readonly dir: string;
  /**
   * The configuration's inventory (Ansible's JSON inventory shape), every string of its
   * variables marked unsafe for templating (`unsafeInventory`).
   */
  readonly inventoryJson: string;
  /** The executable inventory script that prints `inventory.json`: what `-i` points at. */
  readonly inventoryScript: string;
  /** `global_vars`, passed as `-e @vars.json`, every string marked unsafe (`unsafeVars`). */
  readonly varsJson: string;
  /**
   * The runner's own extra vars, passed after `vars.json` (`-e @runner-vars.json`) so that
   * they win over the configuration's: `carapace_artifacts_dir`.
   */
  readonly runnerVarsJson: string;
  /**
   * Where the playbook may put files for the control plane (`carapace_artifacts_dir`, e.g.
   * with `ansible.builtin.fetch`); read after a successful run (`collectArtifacts`).
   */
  readonly artifactsDir: string;
  readonly ansibleCfg: string;
  readonly knownHosts: string;
  /**
   * SSH connection multiplexing sockets (ControlPath): `cp` in the work dir, or a private
   * directory under /tmp when that path would be too long for a Unix socket.
   */
  readonly controlDir: string;
}

// A socket path holds at most 107 bytes, and ssh binds `<ControlPath>.<16 random chars>`
// first; Ansible's ControlPath is `<control_path_dir>/<10 hex chars>`.
const MAX_CONTROL_DIR_LENGTH = 107 - 17 - 11 - 8;

/** Where the SSH control sockets of a work dir go. */
async function controlDirFor(dir: string): Promise<string> {
  const inside = join(dir, 'cp');
  if (Buffer.byteLength(inside) <= MAX_CONTROL_DIR_LENGTH) {
    await mkdir(inside, { mode: 0o700 });
    return inside;
  }
  // mkdtemp creates it with mode 0700
  return mkdtemp('/tmp/carapace-cp-');
}

/** Removes the work dir and, when it was elsewhere, the control socket dir. */
export async function removeWorkDir(workDir: WorkDir): Promise<void> {
  await rm(workDir.dir, { recursive: true, force: true });
  if (!workDir.controlDir.startsWith(`${workDir.dir}/`)) await rm(workDir.controlDir, { recursive: true, force: true });
}

/** What the work dir is made of. */
export interface WorkDirInput {
  readonly workRoot: string;
  readonly executionId: string;
  readonly globalVars: Record<string, unknown>;
  readonly inventory: Record<string, unknown>;
  /** known_hosts lines to start from (the pre-flight's), copied into the work dir. */
  readonly knownHostsFile: string | undefined;
  readonly callbackPluginDir: string;
  readonly maxForks: number;
  /** The playbooks' shared roles, modules and module utils (`SHARED_ANSIBLE_CONTENT`). */
  readonly shared: SharedAnsibleContent;
  /** What the configuration may choose; no local connection by default. */
  readonly policy?: VariablePolicy;
}

/** The extra var naming the run's artifacts directory, set by the runner only. */
export const ARTIFACTS_DIR_VARIABLE = 'carapace_artifacts_dir';

// Execution ids are UUIDs; anything that could leave workRoot is refused.
const EXECUTION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The path of an execution's work dir; throws for an id that is not a plain file name. */
export function workDirPath(workRoot: string, executionId: string): string {
  if (!EXECUTION_ID.test(executionId) || executionId.includes('..')) {
    throw new Error(`invalid execution id ${JSON.stringify(executionId)} for a work dir name`);
  }
  return join(resolve(workRoot), executionId);
}

/**
 * Creates the work dir (mode 0700; a stale one left by a crashed runner is replaced) and
 * writes every file ansible-playbook needs. Throws on any failure, after removing what it
 * created; throws before creating anything when the inventory or the variables name a host
 * that is not an IP address or a DNS name (`inventoryHostProblem`), or set a variable the
 * runner refuses (`configurationProblem`).
 */
export async function prepareWorkDir(input: WorkDirInput): Promise<WorkDir> {
  const dir = workDirPath(input.workRoot, input.executionId);
  const problem =
    inventoryHostProblem(input.inventory, input.globalVars) ??
    configurationProblem(input.inventory, input.globalVars, input.policy ?? { allowLocalConnection: false });
  if (problem !== null) throw new Error(`refused to run: ${problem}`);
  await mkdir(resolve(input.workRoot), { recursive: true, mode: 0o700 });
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { mode: 0o700 });
  let controlDir: string | undefined;
  try {
    // mkdir's mode is filtered by the umask; the dir holds the vars, which may be secret
    await chmod(dir, 0o700);
    controlDir = await controlDirFor(dir);
    const paths: WorkDir = {
      dir,
      inventoryJson: join(dir, 'inventory.json'),
      inventoryScript: join(dir, 'inventory.sh'),
      varsJson: join(dir, 'vars.json'),
      runnerVarsJson: join(dir, 'runner-vars.json'),
      artifactsDir: join(dir, 'artifacts'),
      ansibleCfg: join(dir, 'ansible.cfg'),
      knownHosts: join(dir, 'known_hosts'),
      controlDir,
    };
    const config = ansibleConfig({
      dir,
      knownHosts: paths.knownHosts,
      controlDir: paths.controlDir,
      callbackPluginDir: input.callbackPluginDir,
      shared: input.shared,
      forks: forksFor(input.inventory, input.maxForks),
    });
    await mkdir(join(dir, 'tmp'), { mode: 0o700 });
    await writeFile(paths.inventoryJson, JSON.stringify(unsafeInventory(input.inventory), null, 2) + '\n', { mode: 0o600 });
    await writeFile(paths.inventoryScript, INVENTORY_SCRIPT, { mode: 0o700 });
    await writeFile(paths.varsJson, JSON.stringify(unsafeVars(input.globalVars), null, 2) + '\n', { mode: 0o600 });
    await mkdir(paths.artifactsDir, { mode: 0o700 });
    await writeFile(paths.runnerVarsJson, JSON.stringify(unsafeVars({ [ARTIFACTS_DIR_VARIABLE]: paths.artifactsDir }), null, 2) + '\n', { mode: 0o600 });
    await writeFile(paths.ansibleCfg, config, { mode: 0o600 });
    if (input.knownHostsFile !== undefined) {
      await copyFile(input.knownHostsFile, paths.knownHosts);
      await chmod(paths.knownHosts, 0o600);
    } else {
      await writeFile(paths.knownHosts, '', { mode: 0o600 });
    }
    return paths;
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    if (controlDir !== undefined) await rm(controlDir, { recursive: true, force: true });
    throw err;
  }
}

// The configuration's inventory is Ansible's JSON inventory (group → host list,
// `_meta.hostvars`), which is the output format of inventory scripts: Ansible's file-based
// inventory plugins do not read it. A two-line script hands it to the script plugin as is.
const INVENTORY_SCRIPT = `#!/bin/sh
# The inventory of this execution, for Ansible's script inventory plugin.
case "$1" in
  --host) echo '{}' ;;
  *) exec cat -- "\${0%/*}/inventory.json" ;;
esac
`;

/**
 * The number of distinct hosts of a JSON inventory (`_meta.hostvars` keys and the hosts of
 * every group, in list or object form).
 */
export function countInventoryHosts(inventory: Record<string, unknown>): number {
  const hosts = new Set<string>();
  for (const [name, group] of Object.entries(inventory)) {
    if (name === '_meta') {
      const hostvars = isRecord(group) ? group.hostvars : undefined;
      if (isRecord(hostvars)) for (const host of Object.keys(hostvars)) hosts.add(host);
      continue;
    }
    const list = Array.isArray(group) ? group : isRecord(group) ? group.hosts : undefined;
    if (Array.isArray(list)) {
      for (const host of list) if (typeof host === 'string') hosts.add(host);
    } else if (isRecord(list)) {
      for (const host of Object.keys(list)) hosts.add(host);
    }
  }
  return hosts.size;
}

// One fork per host runs every host in parallel; the cap bounds the runner's memory (each
// fork is a Python process).
function forksFor(inventory: Record<string, unknown>, maxForks: number): number {
  return Math.max(1, Math.min(countInventoryHosts(inventory), Math.max(1, Math.floor(maxForks))));
}

interface ConfigInput {
  readonly dir: string;
  readonly knownHosts: string;
  readonly controlDir: string;
  readonly callbackPluginDir: string;
  readonly shared: SharedAnsibleContent;
  readonly forks: number;
}

/** Seconds to establish an SSH connection to a host before it is unreachable. */
export const CONNECT_TIMEOUT_S = 10;
/** Seconds Ansible waits for privilege escalation on a host it has reached (its `timeout`). */
export const BECOME_TIMEOUT_S = 30;

/** The ansible.cfg of an execution. */
export function ansibleConfig(input: ConfigInput): string {
  const sshArgs = [
    '-C',
    '-o ControlMaster=auto',
    '-o ControlPersist=60s',
    // The runner's ssh2 pre-flight has already checked (or recorded) every host key and
    // seeded known_hosts with them: a changed key is refused, a new host is accepted.
    '-o StrictHostKeyChecking=accept-new',
    `-o UserKnownHostsFile=${shellQuote(input.knownHosts)}`,
    '-o GlobalKnownHostsFile=/dev/null',
    '-o IdentitiesOnly=yes',
    // ssh keeps the first value of an option: this comes before the ConnectTimeout Ansible
    // adds from `timeout`, so that a host that does not answer is still given up after 10 s.
    `-o ConnectTimeout=${CONNECT_TIMEOUT_S}`,
  ].join(' ');
  return [
    '# Written by the Carapace runner for one execution.',
    '[defaults]',
    `forks = ${input.forks}`,
    // True only keeps Ansible from adding StrictHostKeyChecking=no; ssh_args decide.
    'host_key_checking = True',
    'retry_files_enabled = False',
    // The log is what a user would see running ansible-playbook by hand.
    'stdout_callback = default',
    'callbacks_enabled = carapace',
    `callback_plugins = ${cfgPath(input.callbackPluginDir)}`,
    `roles_path = ${cfgPath(input.shared.roles)}`,
    `library = ${cfgPath(input.shared.library)}`,
    `module_utils = ${cfgPath(input.shared.moduleUtils)}`,
    'nocolor = True',
    'force_color = False',
    `local_tmp = ${cfgPath(join(input.dir, 'tmp'))}`,
    // the discovered /usr/bin/python3 is right on Debian; no warning about it in every log
    'interpreter_python = auto_silent',
    // How long Ansible waits for sudo's prompt (plus 2 s) on a host it reached: a busy or
    // slow host (a VM under emulation, a host swapping) takes more than 10 s there.
    `timeout = ${BECOME_TIMEOUT_S}`,
    '',
    '[ssh_connection]',
    `ssh_args = ${cfgValue(sshArgs)}`,
    `control_path_dir = ${cfgPath(input.controlDir)}`,
    'pipelining = True',
    '',
  ].join('\n');
}

// Ansible reads ansible.cfg with configparser (`%` interpolation, `;` comments after
// whitespace) and expands `$VAR` and `~` in paths: refuse what cannot be written safely.
function cfgValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value) || /\s;/.test(value)) {
    throw new Error(`cannot write ${JSON.stringify(value)} into ansible.cfg`);
  }
  return value.replaceAll('%', '%%');
}

function cfgPath(path: string): string {
  if (!isAbsolute(path) || path.includes('$') || path.includes('%')) {
    throw new Error(`cannot use the path ${JSON.stringify(path)} in ansible.cfg: it must be absolute, without "$" or "%"`);
  }
  return cfgValue(path);
}

// Ansible splits ssh_args like a shell would.
function shellQuote(path: string): string {
  cfgPath(path);
  return /^[A-Za-z0-9_./@:+-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
