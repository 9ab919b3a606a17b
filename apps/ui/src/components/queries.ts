/** Queries shared by several pages (same keys, so TanStack Query fetches them once). */
import type { Client } from '@carapace/client';
import { useQuery } from '@tanstack/react-query';
import { useClient, useSession } from '../api/session.tsx';

export const keys = {
  playbooks: ['playbooks'] as const,
  clustersAll: ['clusters', 'all'] as const,
  serversAll: ['servers', 'all'] as const,
  configurations: ['playbook_configurations'] as const,
  configuration: (id: string) => ['playbook_configurations', id] as const,
  configurationVersions: (id: string) => ['playbook_configurations', id, 'versions'] as const,
  executions: ['executions'] as const,
  execution: (id: string) => ['executions', id] as const,
  steps: (id: string) => ['executions', id, 'steps'] as const,
  users: ['users'] as const,
  roles: ['roles'] as const,
  permissions: ['permissions'] as const,
  runners: ['runners'] as const,
};

/** Every playbook (`GET /v1/playbook/`: any signed-in user). */
export function usePlaybooks() {
  const client = useClient();
  return useQuery({ queryKey: keys.playbooks, queryFn: () => client.getPlaybooks(), staleTime: 5 * 60_000 });
}

/** Every cluster, when the user may see them. */
export function useAllClusters() {
  const client = useClient();
  const { can } = useSession();
  return useQuery({ queryKey: keys.clustersAll, queryFn: () => client.getClusters({ all: true }), enabled: can('view_cluster'), staleTime: 30_000 });
}

/** Every server, when the user may see them. */
export function useAllServers(enabled = true) {
  const client = useClient();
  const { can } = useSession();
  return useQuery({ queryKey: keys.serversAll, queryFn: () => client.getServers({ all: true }), enabled: enabled && can('view_server'), staleTime: 15_000 });
}

/** Every role, when the user may see them. */
export function useAllRoles(enabled = true) {
  const client = useClient();
  const { can } = useSession();
  return useQuery({ queryKey: keys.roles, queryFn: () => client.getRoles({ all: true }), enabled: enabled && can('view_role') });
}

/** Saves `text` as a file named `name` in the browser. */
export function downloadText(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export type { Client };
