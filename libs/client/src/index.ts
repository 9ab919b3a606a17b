/**
 * `@carapace/client`: the client library of the Carapace API v1, on `fetch`.
 *
 * @packageDocumentation
 */
export { Client, SNAKE_CASE_ALIASES } from './client.js';
export { ClientCore } from './core.client.js';
export { AccountsClient } from './accounts.client.js';
export { InfrastructureClient } from './infrastructure.client.js';
export {
  ExecutionClient,
  FINAL_EXECUTION_STATES,
  isFinalExecutionState,
  type ExecutionProgress,
  type FollowOptions,
  type WatchOptions,
} from './execution.client.js';
export { TokenAuth, noAuth, type AuthProvider, type LoginFunction } from './auth.js';
export { NotLoggedInError, ServiceError, ServiceApiError, type ApiErrorBody } from './errors.js';
export { normaliseBaseUrl, type FetchFunction, type HeadersLike, type QueryValue, type RequestOptions } from './transport.js';
export {
  listQuery,
  permissionGroups,
  type CinderIntegration,
  type ClientOptions,
  type HintValue,
  type IterParams,
  type ListParams,
  type Message,
  type Page,
  type PermissionList,
  type PlaybookList,
  type RolePermissions,
  type RunnerList,
} from './types.js';
