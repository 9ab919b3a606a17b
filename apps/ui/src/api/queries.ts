/**
 * The UI's data layer: every query key (`queryKeys`), every query (`queries`: key and
 * function, the function passing TanStack Query's abort `signal` to the client call) and
 * every query hook (`use...`). No other module writes a query key or calls `useQuery`
 * (queries.test.ts checks both).
 *
 * Keys are hierarchical: `queryKeys.clusters.all` is the prefix of every cluster query (its
 * lists, each cluster, its status, versions, ...), so invalidating it refreshes them all; a
 * list's key holds its parameters, so two pages asking for the same list share one query.
 */
import { ServiceApiError, type Client, type ListParams, type Page } from '@carapace/client';
import type { Cluster, Execution, PlaybookConfigurationModel, Role, Server, User } from '@carapace/models';
import { queryOptions, useQuery, type QueryKey, type UseQueryOptions } from '@tanstack/react-query';
import { SERVER_STATE_NAMES } from './servers.ts';
import { useClient, useSession } from './sessionContext.ts';

/** The keys of every query of the UI. */
export const queryKeys = {
  /** The signed-in user and their role, per token. */
  session: (token: string | null) => ['session', token] as const,
  /** A password reset token, checked. */
  passwordReset: (token: string) => ['password-reset', token] as const,
  playbooks: () => ['playbooks'] as const,
  permissions: () => ['permissions'] as const,
  runners: () => ['runners'] as const,
  users: {
    all: ['users'] as const,
    list: (params: ListParams) => ['users', 'list', params] as const,
  },
  roles: {
    all: ['roles'] as const,
    list: (params: ListParams) => ['roles', 'list', params] as const,
  },
  clusters: {
    all: ['clusters'] as const,
    list: (params: ListParams) => ['clusters', 'list', params] as const,
    /** The status of every cluster (the dashboard's badges). */
    statuses: () => ['clusters', 'statuses'] as const,
    detail: (id: string) => ['clusters', 'detail', id] as const,
    versions: (id: string, params: ListParams) => ['clusters', 'detail', id, 'versions', params] as const,
    status: (id: string) => ['clusters', 'detail', id, 'status'] as const,
    statusHistory: (id: string, hours: number) => ['clusters', 'detail', id, 'status', 'history', hours] as const,
    cinder: (id: string, root: string) => ['clusters', 'detail', id, 'cinder', root] as const,
  },
  servers: {
    all: ['servers'] as const,
    list: (params: ListParams) => ['servers', 'list', params] as const,
    /** How many servers there are, in all and in each state. */
    counts: () => ['servers', 'counts'] as const,
    detail: (id: string) => ['servers', 'detail', id] as const,
    versions: (id: string, params: ListParams) => ['servers', 'detail', id, 'versions', params] as const,
  },
  configurations: {
    all: ['playbook_configurations'] as const,
    list: (params: ListParams) => ['playbook_configurations', 'list', params] as const,
    detail: (id: string) => ['playbook_configurations', 'detail', id] as const,
    /** Every version, as of the latest one (a new version makes a new query). */
    versions: (id: string, latest: number) => ['playbook_configurations', 'detail', id, 'versions', latest] as const,
  },
  executions: {
    all: ['executions'] as const,
    /** A page of the executions: of the real runs, or of the previews. */
    list: (params: ListParams, kind: 'runs' | 'previews' = 'runs') => ['executions', 'list', kind, params] as const,
    detail: (id: string) => ['executions', 'detail', id] as const,
    steps: (id: string) => ['executions', 'detail', id, 'steps'] as const,
    preview: (id: string) => ['executions', 'detail', id, 'preview'] as const,
  },
};

/** Whether a failed call is worth a retry: not when the API refused it (4xx). */
function retryUnlessRefused(count: number, err: unknown): boolean {
  return !(err instanceof ServiceApiError && err.status < 500) && count < 2;
}

/**
 * Each query's key and function, for a client: the function passes the abort `signal` to
 * the client's call (so a query that is no longer wanted stops its request).
 */
export const queries = {
  session: (client: Client, token: string | null) =>
    queryOptions({
      queryKey: queryKeys.session(token),
      queryFn: async ({ signal }) => {
        const [user, role] = await Promise.all([
          client.getUserSelf({ signal }),
          // A user without a role: 404.
          client.getRoleSelf({ signal }).catch((err: unknown) => {
            if (err instanceof ServiceApiError && err.status === 404) return null;
            throw err;
          }),
        ]);
        return { user, role };
      },
    }),
  passwordReset: (client: Client, token: string) =>
    queryOptions({ queryKey: queryKeys.passwordReset(token), queryFn: ({ signal }) => client.peekPasswordReset(token, { signal }) }),
  playbooks: (client: Client) => queryOptions({ queryKey: queryKeys.playbooks(), queryFn: ({ signal }) => client.getPlaybooks({ signal }) }),
  permissions: (client: Client) => queryOptions({ queryKey: queryKeys.permissions(), queryFn: ({ signal }) => client.getPermissions({ signal }) }),
  runners: (client: Client) => queryOptions({ queryKey: queryKeys.runners(), queryFn: ({ signal }) => client.getRunners({ signal }) }),
  users: (client: Client, params: ListParams) => queryOptions({ queryKey: queryKeys.users.list(params), queryFn: ({ signal }) => client.getUsers(params, { signal }) }),
  roles: (client: Client, params: ListParams) => queryOptions({ queryKey: queryKeys.roles.list(params), queryFn: ({ signal }) => client.getRoles(params, { signal }) }),
  clusters: (client: Client, params: ListParams) =>
    queryOptions({ queryKey: queryKeys.clusters.list(params), queryFn: ({ signal }) => client.getClusters(params, { signal }) }),
  clusterStatuses: (client: Client) => queryOptions({ queryKey: queryKeys.clusters.statuses(), queryFn: ({ signal }) => client.getClusterStatuses({ signal }) }),
  cluster: (client: Client, id: string) => queryOptions({ queryKey: queryKeys.clusters.detail(id), queryFn: ({ signal }) => client.getCluster(id, { signal }) }),
  clusterVersions: (client: Client, id: string, params: ListParams) =>
    queryOptions({ queryKey: queryKeys.clusters.versions(id, params), queryFn: ({ signal }) => client.getClusterVersions(id, params, { signal }) }),
  clusterStatus: (client: Client, id: string) => queryOptions({ queryKey: queryKeys.clusters.status(id), queryFn: ({ signal }) => client.getClusterStatus(id, { signal }) }),
  clusterStatusHistory: (client: Client, id: string, hours: number) =>
    queryOptions({ queryKey: queryKeys.clusters.statusHistory(id, hours), queryFn: ({ signal }) => client.getClusterStatusHistory(id, hours, { signal }) }),
  cinderIntegration: (client: Client, id: string, root: string) =>
    queryOptions({ queryKey: queryKeys.clusters.cinder(id, root), queryFn: ({ signal }) => client.getCinderIntegration(id, root, { signal }) }),
  servers: (client: Client, params: ListParams) => queryOptions({ queryKey: queryKeys.servers.list(params), queryFn: ({ signal }) => client.getServers(params, { signal }) }),
  serverCounts: (client: Client) =>
    queryOptions({
      queryKey: queryKeys.servers.counts(),
      queryFn: async ({ signal }) => {
        const [all, ...states] = await Promise.all([
          client.getServers({ perPage: 1 }, { signal }),
          ...SERVER_STATE_NAMES.map((state) => client.getServers({ filter: { state }, perPage: 1 }, { signal })),
        ]);
        return { total: all?.total ?? 0, states: SERVER_STATE_NAMES.map((state, i) => ({ state, count: states[i]?.total ?? 0 })) };
      },
    }),
  server: (client: Client, id: string) => queryOptions({ queryKey: queryKeys.servers.detail(id), queryFn: ({ signal }) => client.getServer(id, { signal }) }),
  serverVersions: (client: Client, id: string, params: ListParams) =>
    queryOptions({ queryKey: queryKeys.servers.versions(id, params), queryFn: ({ signal }) => client.getServerVersions(id, params, { signal }) }),
  configurations: (client: Client, params: ListParams) =>
    queryOptions({ queryKey: queryKeys.configurations.list(params), queryFn: ({ signal }) => client.getPlaybookConfigurations(params, { signal }) }),
  configuration: (client: Client, id: string) =>
    queryOptions({ queryKey: queryKeys.configurations.detail(id), queryFn: ({ signal }) => client.getPlaybookConfiguration(id, { signal }) }),
  configurationVersions: (client: Client, id: string, latest: number) =>
    queryOptions({
      queryKey: queryKeys.configurations.versions(id, latest),
      queryFn: ({ signal }) => client.getPlaybookConfigurationVersions(id, { all: true }, { signal }),
    }),
  executions: (client: Client, params: ListParams, kind: 'runs' | 'previews' = 'runs') =>
    queryOptions({
      queryKey: queryKeys.executions.list(params, kind),
      queryFn: ({ signal }) => (kind === 'previews' ? client.getPreviews(params, { signal }) : client.getExecutions(params, { signal })),
    }),
  execution: (client: Client, id: string) => queryOptions({ queryKey: queryKeys.executions.detail(id), queryFn: ({ signal }) => client.getExecution(id, { signal }) }),
  executionSteps: (client: Client, id: string) =>
    queryOptions({ queryKey: queryKeys.executions.steps(id), queryFn: ({ signal }) => client.getExecutionSteps(id, { all: true }, { signal }) }),
  executionPreview: (client: Client, id: string) =>
    queryOptions({ queryKey: queryKeys.executions.preview(id), queryFn: ({ signal }) => client.getExecutionPreview(id, { signal }) }),
};

/** What a hook's caller may add to its query: when it runs, how often, what it shows meanwhile. */
export type QueryExtras<TData, TKey extends QueryKey = QueryKey> = Omit<UseQueryOptions<TData, Error, TData, TKey>, 'queryKey' | 'queryFn'>;

/** The signed-in user and their role (`role` null: the user has none), while `token` is set. */
export function useSessionSelfQuery(token: string | null) {
  return useQuery({ ...queries.session(useClient(), token), enabled: token !== null, staleTime: 60_000, retry: retryUnlessRefused });
}

/** A password reset token, checked once (404: unknown, used or expired). */
export function usePasswordResetQuery(token: string) {
  return useQuery({ ...queries.passwordReset(useClient(), token), retry: false, staleTime: Infinity });
}

/** Every playbook (`GET /v1/playbook/`: any signed-in user). */
export function usePlaybooks() {
  return useQuery({ ...queries.playbooks(useClient()), staleTime: 5 * 60_000 });
}

/** Every permission of the system, by group. */
export function usePermissions() {
  return useQuery({ ...queries.permissions(useClient()), staleTime: 5 * 60_000 });
}

/** The runners with their live state. */
export function useRunners(extras?: QueryExtras<Awaited<ReturnType<Client['getRunners']>>, ReturnType<typeof queryKeys.runners>>) {
  return useQuery({ ...queries.runners(useClient()), ...extras });
}

/** A page (or all) of the users. */
export function useUsers(params: ListParams, extras?: QueryExtras<Page<User>, ReturnType<typeof queryKeys.users.list>>) {
  return useQuery({ ...queries.users(useClient(), params), ...extras });
}

/** A page (or all) of the roles. */
export function useRoles(params: ListParams, extras?: QueryExtras<Page<Role>, ReturnType<typeof queryKeys.roles.list>>) {
  return useQuery({ ...queries.roles(useClient(), params), ...extras });
}

/** Every role, when the user may see them. */
export function useAllRoles(enabled = true) {
  const { can } = useSession();
  return useRoles({ all: true }, { enabled: enabled && can('view_role') });
}

/** A page (or all) of the clusters. */
export function useClusters(params: ListParams, extras?: QueryExtras<Page<Cluster>, ReturnType<typeof queryKeys.clusters.list>>) {
  return useQuery({ ...queries.clusters(useClient(), params), ...extras });
}

/** Every cluster, by name, when the user may see them (one query for every page that names clusters). */
export function useAllClusters(extras?: QueryExtras<Page<Cluster>, ReturnType<typeof queryKeys.clusters.list>>) {
  const { can } = useSession();
  return useClusters({ all: true, sortBy: { name: 1 } }, { staleTime: 30_000, ...extras, enabled: can('view_cluster') && (extras?.enabled ?? true) });
}

/** The status of every cluster the user may see. */
export function useClusterStatuses(extras?: QueryExtras<Awaited<ReturnType<Client['getClusterStatuses']>>, ReturnType<typeof queryKeys.clusters.statuses>>) {
  return useQuery({ ...queries.clusterStatuses(useClient()), ...extras });
}

/** One cluster. */
export function useCluster(id: string, extras?: QueryExtras<Cluster, ReturnType<typeof queryKeys.clusters.detail>>) {
  return useQuery({ ...queries.cluster(useClient(), id), ...extras });
}

/** A page of a cluster's versions. */
export function useClusterVersions(id: string, params: ListParams, extras?: QueryExtras<Page<Cluster>, ReturnType<typeof queryKeys.clusters.versions>>) {
  return useQuery({ ...queries.clusterVersions(useClient(), id, params), ...extras });
}

/** A cluster's status as Ceph reports it. */
export function useClusterStatus(id: string, extras?: QueryExtras<Awaited<ReturnType<Client['getClusterStatus']>>, ReturnType<typeof queryKeys.clusters.status>>) {
  return useQuery({ ...queries.clusterStatus(useClient(), id), ...extras });
}

/** The time series of a cluster's status over the last `hours`. */
export function useClusterStatusHistory(
  id: string,
  hours: number,
  extras?: QueryExtras<Awaited<ReturnType<Client['getClusterStatusHistory']>>, ReturnType<typeof queryKeys.clusters.statusHistory>>,
) {
  return useQuery({ ...queries.clusterStatusHistory(useClient(), id, hours), ...extras });
}

/** The files a Cinder, Glance or Nova host needs to use a cluster, under `root`. */
export function useCinderIntegration(id: string, root: string) {
  return useQuery(queries.cinderIntegration(useClient(), id, root));
}

/** A page (or all) of the servers. */
export function useServers(params: ListParams, extras?: QueryExtras<Page<Server>, ReturnType<typeof queryKeys.servers.list>>) {
  return useQuery({ ...queries.servers(useClient(), params), ...extras });
}

/** Every server, when the user may see them. */
export function useAllServers(enabled = true) {
  const { can } = useSession();
  return useServers({ all: true }, { enabled: enabled && can('view_server'), staleTime: 15_000 });
}

/** How many servers there are, in all and in each state. */
export function useServerCounts(extras?: QueryExtras<{ total: number; states: { state: (typeof SERVER_STATE_NAMES)[number]; count: number }[] }, ReturnType<typeof queryKeys.servers.counts>>) {
  return useQuery({ ...queries.serverCounts(useClient()), ...extras });
}

/** One server. */
export function useServer(id: string) {
  return useQuery(queries.server(useClient(), id));
}

/** A page of a server's versions. */
export function useServerVersions(id: string, params: ListParams, extras?: QueryExtras<Page<Server>, ReturnType<typeof queryKeys.servers.versions>>) {
  return useQuery({ ...queries.serverVersions(useClient(), id, params), ...extras });
}

/** A page of the playbook configurations. */
export function useConfigurations(
  params: ListParams,
  extras?: QueryExtras<Page<PlaybookConfigurationModel>, ReturnType<typeof queryKeys.configurations.list>>,
) {
  return useQuery({ ...queries.configurations(useClient(), params), ...extras });
}

/** One playbook configuration. */
export function useConfiguration(id: string) {
  return useQuery(queries.configuration(useClient(), id));
}

/** Every version of a playbook configuration, as of its latest version. */
export function useConfigurationVersions(id: string, latest: number) {
  return useQuery(queries.configurationVersions(useClient(), id, latest));
}

/** A page of the executions (`kind`: of the real runs or of the previews), newest first. */
export function useExecutions(
  params: ListParams,
  kind: 'runs' | 'previews' = 'runs',
  extras?: QueryExtras<Page<Execution>, ReturnType<typeof queryKeys.executions.list>>,
) {
  return useQuery({ ...queries.executions(useClient(), params, kind), ...extras });
}

/** One execution. */
export function useExecution(id: string, extras?: QueryExtras<Execution, ReturnType<typeof queryKeys.executions.detail>>) {
  return useQuery({ ...queries.execution(useClient(), id), ...extras });
}

/** Every step of an execution. */
export function useExecutionSteps(id: string, extras?: QueryExtras<Awaited<ReturnType<Client['getExecutionSteps']>>, ReturnType<typeof queryKeys.executions.steps>>) {
  return useQuery({ ...queries.executionSteps(useClient(), id), ...extras });
}

/** What a preview found. */
export function useExecutionPreview(id: string, extras?: QueryExtras<Awaited<ReturnType<Client['getExecutionPreview']>>, ReturnType<typeof queryKeys.executions.preview>>) {
  return useQuery({ ...queries.executionPreview(useClient(), id), ...extras });
}
