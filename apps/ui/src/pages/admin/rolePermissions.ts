import type { PermissionGroup } from '@carapace/models';

/** Group name → chosen permission names, from a role's permissions. */
export function selectionOf(groups: readonly PermissionGroup[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const g of groups) out[g.name] = [...g.permissions];
  return out;
}

/** The API's list of groups from a selection: every known group, names sorted, unknown names dropped. */
export function groupsOf(selection: Record<string, readonly string[]>, known: readonly PermissionGroup[]): PermissionGroup[] {
  return known.map((g) => ({ name: g.name, permissions: (selection[g.name] ?? []).filter((p) => g.permissions.includes(p)).sort() }));
}

/** Counts the permissions of a role. */
export function countPermissions(groups: readonly PermissionGroup[]): number {
  return groups.reduce((n, g) => n + g.permissions.length, 0);
}

/** A group's title. */
export function groupTitle(name: string): string {
  return name === 'api' ? 'API permissions' : name === 'playbook' ? 'Playbook permissions' : `${name} permissions`;
}
