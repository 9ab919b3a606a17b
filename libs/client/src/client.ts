import { ExecutionClient } from './execution.client.js';

/**
 * The client of the Carapace API v1 (contract, "Client library contract"): one method per
 * endpoint, in camelCase (`createCluster`) and under the contract's snake_case names
 * (`create_cluster`), which are the same functions.
 *
 * Construction does not log in; the first call that needs a token does, once for all the
 * calls made at the same time, and again once when the server refuses an expired or revoked
 * token. Every method takes, last, {@link RequestOptions} passed to the underlying `fetch`.
 * Answers are parsed JSON typed with `@carapace/models`; failures raise
 * {@link ServiceError}, error answers {@link ServiceApiError}.
 *
 * @example
 * ```ts
 * const client = new Client({ url: 'http://127.0.0.1:8080', login: 'root', password });
 * const cluster = await client.createCluster('ceph');
 * for await (const server of client.iterServers()) console.log(server.data.fqdn);
 * ```
 */
export class Client extends ExecutionClient {
  /** The contract's name of {@link Client.createCluster}. */
  declare readonly create_cluster: Client['createCluster'];
  /** The contract's name of {@link Client.createExecution}. */
  declare readonly create_execution: Client['createExecution'];
  /** The contract's name of {@link Client.createPlaybookConfiguration}. */
  declare readonly create_playbook_configuration: Client['createPlaybookConfiguration'];
  /** The contract's name of {@link Client.createRole}. */
  declare readonly create_role: Client['createRole'];
  /** The snake_case name of {@link Client.createRunner} (Carapace extension). */
  declare readonly create_runner: Client['createRunner'];
  /** The contract's name of {@link Client.createServer}. */
  declare readonly create_server: Client['createServer'];
  /** The contract's name of {@link Client.createUser}. */
  declare readonly create_user: Client['createUser'];
  /** The contract's name of {@link Client.cancelExecution}. */
  declare readonly cancel_execution: Client['cancelExecution'];
  /** The contract's name of {@link Client.deleteCluster}. */
  declare readonly delete_cluster: Client['deleteCluster'];
  /** The contract's name of {@link Client.deletePlaybookConfiguration}. */
  declare readonly delete_playbook_configuration: Client['deletePlaybookConfiguration'];
  /** The contract's name of {@link Client.deleteRole}. */
  declare readonly delete_role: Client['deleteRole'];
  /** The snake_case name of {@link Client.deleteRunner} (Carapace extension). */
  declare readonly delete_runner: Client['deleteRunner'];
  /** The contract's name of {@link Client.deleteServer}. */
  declare readonly delete_server: Client['deleteServer'];
  /** The contract's name of {@link Client.deleteUser}. */
  declare readonly delete_user: Client['deleteUser'];
  /** The contract's name of {@link Client.getCinderIntegration}. */
  declare readonly get_cinder_integration: Client['getCinderIntegration'];
  /** The contract's name of {@link Client.getCluster}. */
  declare readonly get_cluster: Client['getCluster'];
  /** The snake_case name of {@link Client.getClusterStatus} (Carapace extension). */
  declare readonly get_cluster_status: Client['getClusterStatus'];
  /** The snake_case name of {@link Client.getClusterStatusHistory} (Carapace extension). */
  declare readonly get_cluster_status_history: Client['getClusterStatusHistory'];
  /** The snake_case name of {@link Client.getClusterStatuses} (Carapace extension). */
  declare readonly get_cluster_statuses: Client['getClusterStatuses'];
  /** The contract's name of {@link Client.getClusterVersion}. */
  declare readonly get_cluster_version: Client['getClusterVersion'];
  /** The contract's name of {@link Client.getClusterVersions}. */
  declare readonly get_cluster_versions: Client['getClusterVersions'];
  /** The contract's name of {@link Client.getClusters}. */
  declare readonly get_clusters: Client['getClusters'];
  /** The contract's name of {@link Client.getExecution}. */
  declare readonly get_execution: Client['getExecution'];
  /** The contract's name of {@link Client.getExecutionLog}. */
  declare readonly get_execution_log: Client['getExecutionLog'];
  /** The contract's name of {@link Client.getExecutionSteps}. */
  declare readonly get_execution_steps: Client['getExecutionSteps'];
  /** The contract's name of {@link Client.getExecutionVersion}. */
  declare readonly get_execution_version: Client['getExecutionVersion'];
  /** The contract's name of {@link Client.getExecutionVersions}. */
  declare readonly get_execution_versions: Client['getExecutionVersions'];
  /** The contract's name of {@link Client.getExecutions}. */
  declare readonly get_executions: Client['getExecutions'];
  /** The snake_case name of {@link Client.createPreview} (Carapace extension). */
  declare readonly create_preview: Client['createPreview'];
  /** The snake_case name of {@link Client.getPreviews} (Carapace extension). */
  declare readonly get_previews: Client['getPreviews'];
  /** The snake_case name of {@link Client.getExecutionPreview} (Carapace extension). */
  declare readonly get_execution_preview: Client['getExecutionPreview'];
  /** The snake_case name of {@link Client.relaunchExecution} (Carapace extension). */
  declare readonly relaunch_execution: Client['relaunchExecution'];
  /** The contract's name of {@link Client.getInfo}. */
  declare readonly get_info: Client['getInfo'];
  /** The contract's name of {@link Client.getPermissions}. */
  declare readonly get_permissions: Client['getPermissions'];
  /** The contract's name of {@link Client.getPlaybookConfiguration}. */
  declare readonly get_playbook_configuration: Client['getPlaybookConfiguration'];
  /** The contract's name of {@link Client.getPlaybookConfigurationVersion}. */
  declare readonly get_playbook_configuration_version: Client['getPlaybookConfigurationVersion'];
  /** The contract's name of {@link Client.getPlaybookConfigurationVersions}. */
  declare readonly get_playbook_configuration_versions: Client['getPlaybookConfigurationVersions'];
  /** The contract's name of {@link Client.getPlaybookConfigurations}. */
  declare readonly get_playbook_configurations: Client['getPlaybookConfigurations'];
  /** The contract's name of {@link Client.getPlaybooks}. */
  declare readonly get_playbooks: Client['getPlaybooks'];
  /** The contract's name of {@link Client.getRole}. */
  declare readonly get_role: Client['getRole'];
  /** The contract's name of {@link Client.getRoleSelf}. */
  declare readonly get_role_self: Client['getRoleSelf'];
  /** The contract's name of {@link Client.getRoleVersion}. */
  declare readonly get_role_version: Client['getRoleVersion'];
  /** The contract's name of {@link Client.getRoleVersions}. */
  declare readonly get_role_versions: Client['getRoleVersions'];
  /** The contract's name of {@link Client.getRoles}. */
  declare readonly get_roles: Client['getRoles'];
  /** The snake_case name of {@link Client.getRunners} (Carapace extension). */
  declare readonly get_runners: Client['getRunners'];
  /** The contract's name of {@link Client.getServer}. */
  declare readonly get_server: Client['getServer'];
  /** The contract's name of {@link Client.getServerVersion}. */
  declare readonly get_server_version: Client['getServerVersion'];
  /** The contract's name of {@link Client.getServerVersions}. */
  declare readonly get_server_versions: Client['getServerVersions'];
  /** The contract's name of {@link Client.getServers}. */
  declare readonly get_servers: Client['getServers'];
  /** The contract's name of {@link Client.getUser}. */
  declare readonly get_user: Client['getUser'];
  /** The contract's name of {@link Client.getUserSelf}. */
  declare readonly get_user_self: Client['getUserSelf'];
  /** The contract's name of {@link Client.getUserVersion}. */
  declare readonly get_user_version: Client['getUserVersion'];
  /** The contract's name of {@link Client.getUserVersions}. */
  declare readonly get_user_versions: Client['getUserVersions'];
  /** The contract's name of {@link Client.getUsers}. */
  declare readonly get_users: Client['getUsers'];
  /** The contract's name of {@link Client.peekPasswordReset}. */
  declare readonly peek_password_reset: Client['peekPasswordReset'];
  /** The contract's name of {@link Client.putServer}. */
  declare readonly put_server: Client['putServer'];
  /** The contract's name of {@link Client.requestPasswordReset}. */
  declare readonly request_password_reset: Client['requestPasswordReset'];
  /** The contract's name of {@link Client.resetPassword}. */
  declare readonly reset_password: Client['resetPassword'];
  /** The contract's name of {@link Client.updateCluster}. */
  declare readonly update_cluster: Client['updateCluster'];
  /** The contract's name of {@link Client.updatePlaybookConfiguration}. */
  declare readonly update_playbook_configuration: Client['updatePlaybookConfiguration'];
  /** The contract's name of {@link Client.updateRole}. */
  declare readonly update_role: Client['updateRole'];
  /** The contract's name of {@link Client.updateUser}. */
  declare readonly update_user: Client['updateUser'];
}

/**
 * Each snake_case name and the method it names: the contract's, and those of the Carapace
 * extensions (`create_runner`, `delete_runner`, `get_runners`, `create_preview`, `get_previews`,
 * `get_execution_preview`, `relaunch_execution`, `get_cluster_status`,
 * `get_cluster_status_history`, `get_cluster_statuses`).
 */
export const SNAKE_CASE_ALIASES = {
  create_cluster: 'createCluster',
  create_execution: 'createExecution',
  create_playbook_configuration: 'createPlaybookConfiguration',
  create_role: 'createRole',
  create_runner: 'createRunner',
  create_server: 'createServer',
  create_user: 'createUser',
  cancel_execution: 'cancelExecution',
  delete_cluster: 'deleteCluster',
  delete_playbook_configuration: 'deletePlaybookConfiguration',
  delete_role: 'deleteRole',
  delete_runner: 'deleteRunner',
  delete_server: 'deleteServer',
  delete_user: 'deleteUser',
  get_cinder_integration: 'getCinderIntegration',
  get_cluster: 'getCluster',
  get_cluster_status: 'getClusterStatus',
  get_cluster_status_history: 'getClusterStatusHistory',
  get_cluster_statuses: 'getClusterStatuses',
  get_cluster_version: 'getClusterVersion',
  get_cluster_versions: 'getClusterVersions',
  get_clusters: 'getClusters',
  get_execution: 'getExecution',
  get_execution_log: 'getExecutionLog',
  get_execution_steps: 'getExecutionSteps',
  get_execution_version: 'getExecutionVersion',
  get_execution_versions: 'getExecutionVersions',
  get_executions: 'getExecutions',
  create_preview: 'createPreview',
  get_previews: 'getPreviews',
  get_execution_preview: 'getExecutionPreview',
  relaunch_execution: 'relaunchExecution',
  get_info: 'getInfo',
  get_permissions: 'getPermissions',
  get_playbook_configuration: 'getPlaybookConfiguration',
  get_playbook_configuration_version: 'getPlaybookConfigurationVersion',
  get_playbook_configuration_versions: 'getPlaybookConfigurationVersions',
  get_playbook_configurations: 'getPlaybookConfigurations',
  get_playbooks: 'getPlaybooks',
  get_role: 'getRole',
  get_role_self: 'getRoleSelf',
  get_role_version: 'getRoleVersion',
  get_role_versions: 'getRoleVersions',
  get_roles: 'getRoles',
  get_runners: 'getRunners',
  get_server: 'getServer',
  get_server_version: 'getServerVersion',
  get_server_versions: 'getServerVersions',
  get_servers: 'getServers',
  get_user: 'getUser',
  get_user_self: 'getUserSelf',
  get_user_version: 'getUserVersion',
  get_user_versions: 'getUserVersions',
  get_users: 'getUsers',
  peek_password_reset: 'peekPasswordReset',
  put_server: 'putServer',
  request_password_reset: 'requestPasswordReset',
  reset_password: 'resetPassword',
  update_cluster: 'updateCluster',
  update_playbook_configuration: 'updatePlaybookConfiguration',
  update_role: 'updateRole',
  update_user: 'updateUser',
} as const satisfies Record<string, keyof Client>;

for (const [alias, method] of Object.entries(SNAKE_CASE_ALIASES) as [string, keyof Client][]) {
  Object.defineProperty(Client.prototype, alias, {
    value: Reflect.get(Client.prototype, method),
    writable: true,
    configurable: true,
    enumerable: false,
  });
}
