/** The two permission groups of a role. */
export const PERMISSION_GROUPS = ['api', 'playbook'] as const;
export type PermissionGroupName = (typeof PERMISSION_GROUPS)[number];

/**
 * Every `api` permission: the 30 of the contract, plus `view_cinder` (api-v1 §7) and
 * `view_runner`, `create_runner` and `delete_runner` (Carapace extension: runners and their tokens).
 */
export const API_PERMISSIONS = [
  'create_cluster',
  'create_execution',
  'create_playbook_configuration',
  'create_role',
  'create_runner',
  'create_server',
  'create_user',
  'delete_cluster',
  'delete_execution',
  'delete_playbook_configuration',
  'delete_role',
  'delete_runner',
  'delete_server',
  'delete_user',
  'edit_cluster',
  'edit_playbook_configuration',
  'edit_role',
  'edit_server',
  'edit_user',
  'view_cinder',
  'view_cluster',
  'view_cluster_versions',
  'view_execution',
  'view_execution_steps',
  'view_execution_version',
  'view_playbook_configuration',
  'view_playbook_configuration_version',
  'view_role',
  'view_role_versions',
  'view_runner',
  'view_server',
  'view_server_versions',
  'view_user',
  'view_user_versions',
] as const;
export type ApiPermission = (typeof API_PERMISSIONS)[number];

/** Every `playbook` permission: one per playbook id. */
export const PLAYBOOK_PERMISSIONS = ['add_mon', 'add_osd', 'add_pool', 'cinder_integration', 'cluster_deploy', 'hello_world', 'maintenance_enter', 'maintenance_exit', 'purge_cluster', 'remove_mon', 'remove_osd', 'remove_pool', 'replace_mon', 'replace_osd', 'restart_services', 'update_ceph_configuration', 'upgrade_ceph'] as const;
export type PlaybookPermission = (typeof PLAYBOOK_PERMISSIONS)[number];

/** Tells whether `name` is a known api permission. */
export function isApiPermission(name: string): name is ApiPermission {
  return (API_PERMISSIONS as readonly string[]).includes(name);
}

/** Tells whether `name` is a known playbook permission. */
export function isPlaybookPermission(name: string): name is PlaybookPermission {
  return (PLAYBOOK_PERMISSIONS as readonly string[]).includes(name);
}
