import type { ApiPermission } from '@carapace/models';

/** A link of the navigation bar, shown when the user holds `permission` (always when absent). */
export interface NavItem {
  label: string;
  to: string;
  permission?: ApiPermission;
  /** Matches only this exact path (the dashboard), not the paths under it. */
  end?: boolean;
}

/** The main links. */
export const MAIN_NAV: readonly NavItem[] = [
  { label: 'Dashboard', to: '/', end: true },
  { label: 'Servers', to: '/servers', permission: 'view_server' },
  { label: 'Clusters', to: '/clusters', permission: 'view_cluster' },
  { label: 'Playbook configurations', to: '/playbook-configurations', permission: 'view_playbook_configuration' },
  { label: 'Executions', to: '/executions', permission: 'view_execution' },
];

/**
 * The administration links. The cloud-config generator needs the runners' SSH public key
 * (`GET /v1/runner/`, `view_runner`); the discovery token is typed in by the operator.
 */
export const ADMIN_NAV: readonly NavItem[] = [
  { label: 'Users', to: '/admin/users', permission: 'view_user' },
  { label: 'Roles', to: '/admin/roles', permission: 'view_role' },
  { label: 'Runners', to: '/admin/runners', permission: 'view_runner' },
  { label: 'Cloud config', to: '/admin/cloud-config', permission: 'view_runner' },
];

/** The links a user may follow. */
export function visibleNav(items: readonly NavItem[], can: (permission: ApiPermission) => boolean): NavItem[] {
  return items.filter((item) => item.permission === undefined || can(item.permission));
}
