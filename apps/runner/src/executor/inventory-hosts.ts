// Ansible's ssh connection puts the host last on ssh's command line, without "--": a host
// such as "-oProxyCommand=..." would be read by ssh as an option and run a command here.
// The control plane accepts only real hosts; the runner checks again before Ansible starts,
// since a configuration can be edited, and variables can name another host.
import { hostProblem } from '@carapace/models';

/** The variables that tell Ansible which address to connect to. */
const ADDRESS_VARIABLES = ['ansible_host', 'ansible_ssh_host'] as const;

/**
 * Why the inventory or the extra variables of a run name something that is not a host (an
 * IPv4 or IPv6 address or a DNS name, see `hostProblem`), or null when every host is one.
 * Checked: every host of every group (list or object form), every `_meta.hostvars` key, and
 * `ansible_host` / `ansible_ssh_host` in host variables, group `vars` and `globalVars`.
 */
export function inventoryHostProblem(inventory: Record<string, unknown>, globalVars: Record<string, unknown>): string | null {
  const problems: string[] = [];
  const checkHost = (host: string, where: string): void => {
    const problem = hostProblem(host);
    if (problem !== null) problems.push(`${where}: ${JSON.stringify(host.slice(0, 64))} is not an IP address or a DNS name (${problem})`);
  };
  const checkVars = (vars: unknown, where: string): void => {
    if (!isRecord(vars)) return;
    for (const name of ADDRESS_VARIABLES) {
      const value = vars[name];
      if (value === undefined) continue;
      if (typeof value !== 'string') problems.push(`${name} of ${where} is not a string`);
      else checkHost(value, `${name} of ${where}`);
    }
  };

  checkVars(globalVars, 'global_vars');
  for (const [name, group] of Object.entries(inventory)) {
    if (name === '_meta') {
      const hostvars = isRecord(group) ? group.hostvars : undefined;
      if (!isRecord(hostvars)) continue;
      for (const [host, vars] of Object.entries(hostvars)) {
        checkHost(host, '_meta.hostvars');
        checkVars(vars, `host ${JSON.stringify(host.slice(0, 64))}`);
      }
      continue;
    }
    const hosts = Array.isArray(group) ? group : isRecord(group) ? group.hosts : undefined;
    const names = Array.isArray(hosts) ? hosts : isRecord(hosts) ? Object.keys(hosts) : [];
    for (const host of names) {
      if (typeof host === 'string') checkHost(host, `group ${JSON.stringify(name.slice(0, 64))}`);
      else problems.push(`group ${JSON.stringify(name.slice(0, 64))} lists a host that is not a string`);
    }
    if (isRecord(hosts)) for (const [host, vars] of Object.entries(hosts)) checkVars(vars, `host ${JSON.stringify(host.slice(0, 64))}`);
    if (isRecord(group)) checkVars(group.vars, `group ${JSON.stringify(name.slice(0, 64))}`);
  }
  if (problems.length === 0) return null;
  const shown = problems.slice(0, 3).join('; ');
  return problems.length > 3 ? `${shown}; and ${problems.length - 3} more` : shown;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
