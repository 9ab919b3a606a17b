import type { Server } from '@carapace/models';
import { Anchor, Group, Select, Text, TextInput } from '@mantine/core';
import { keepPreviousData } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link } from 'react-router';
import { useAllClusters, useServers } from '../../api/queries.ts';
import { SERVER_STATE_NAMES, serverFacts } from '../../api/servers.ts';
import { useSession } from '../../api/session.tsx';
import { DataTable, type Column } from '../../components/DataTable.tsx';
import { escapeRegexp, formatAgo, formatTime } from '../../components/format.ts';
import { PAGE_SIZES, useListParams, useSearchText, type ListSpec } from '../../components/listParams.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StateBadge, stateLabel } from '../../components/StateBadge.tsx';

/** The columns one can sort on, and the API field each sorts by. */
const SORTABLE = {
  name: 'name',
  fqdn: 'fqdn',
  ip: 'ip',
  state: 'state',
  seen: 'facts.gathered_at',
} as const;
type SortKey = keyof typeof SORTABLE;

const SEARCH_FIELDS = [
  { value: 'name', label: 'Name' },
  { value: 'fqdn', label: 'FQDN' },
  { value: 'ip', label: 'IP address' },
  { value: 'id', label: 'Id' },
];

/** The page's state in the address: `?q=&field=&state=&cluster=&sort=&order=&page=&per_page=`. */
const LIST: ListSpec<'q' | 'field' | 'state' | 'cluster'> = {
  filters: ['q', 'field', 'state', 'cluster'],
  pageSizes: PAGE_SIZES,
  sortColumns: Object.keys(SORTABLE),
};

/** Builds the API filter of the page's search controls. */
export function serverFilter(options: { search: string; field: string; state: string | null; cluster: string | null }): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  const search = options.search.trim();
  if (search) filter[options.field] = { regexp: `(?i)${escapeRegexp(search)}` };
  if (options.state) filter.state = options.state;
  if (options.cluster === 'none') filter.cluster_id = null;
  else if (options.cluster) filter.cluster_id = options.cluster;
  return filter;
}

/**
 * The servers: search (a case-insensitive match on a chosen field), state and cluster filters,
 * sort by column, pages. Everything is done by the API (`filter`, `sort_by`, `page`,
 * `per_page`), so a page costs the same over ten servers or ten thousand; the controls live in
 * the address so that Back and links keep them.
 */
export default function ServersPage() {
  const { can } = useSession();
  const list = useListParams(LIST);
  const sort = (list.sort ?? 'name') as SortKey;
  const { q, state, cluster } = list.filters;
  const field = SEARCH_FIELDS.some((f) => f.value === list.filters.field) ? (list.filters.field as string) : 'name';
  const search = useSearchText(q ?? '', (text) => list.setFilter('q', text || null));

  const filter = useMemo(() => serverFilter({ search: q ?? '', field, state, cluster }), [q, field, state, cluster]);
  const servers = useServers(
    { filter, sortBy: { [SORTABLE[sort]]: list.order, ...(sort === 'name' ? {} : { name: 1 }) }, page: list.page, perPage: list.perPage },
    { placeholderData: keepPreviousData },
  );
  const clusters = useAllClusters();
  const clusterNames = useMemo(() => new Map((clusters.data?.items ?? []).map((c) => [c.id, c.data.name])), [clusters.data]);

  const columns: Column<Server>[] = [
    {
      header: 'Name',
      sort: 'name',
      cell: (server) => (
        <Anchor component={Link} to={`/servers/${server.id}`} fw={500}>
          {server.data.name || server.id}
        </Anchor>
      ),
    },
    { header: 'FQDN', sort: 'fqdn', cell: (server) => server.data.fqdn },
    {
      header: 'IP address',
      sort: 'ip',
      cell: (server) => (
        <Text ff="monospace" size="sm">
          {server.data.ip}
        </Text>
      ),
    },
    { header: 'State', sort: 'state', cell: (server) => <StateBadge state={server.data.state} /> },
    {
      header: 'Cluster',
      cell: (server) => {
        const clusterId = server.data.cluster_id;
        return clusterId ? (
          <Anchor component={Link} to={`/clusters/${clusterId}`}>
            {clusterNames.get(clusterId) ?? clusterId.slice(0, 8)}
          </Anchor>
        ) : (
          <Text c="dimmed" size="sm">
            —
          </Text>
        );
      },
    },
    {
      header: 'Last seen',
      sort: 'seen',
      title: (server) => formatTime(serverFacts(server)?.gathered_at ?? server.time_updated),
      cell: (server) => formatAgo(serverFacts(server)?.gathered_at ?? null),
    },
  ];

  return (
    <>
      <PageHeader title="Servers" description="Servers register themselves at first boot; facts come from the runners." />
      <Group align="flex-end" gap="sm" mb="md" wrap="wrap">
        <TextInput
          label="Search servers"
          placeholder={`Part of the ${SEARCH_FIELDS.find((f) => f.value === field)?.label ?? 'name'}`}
          value={search.text}
          onChange={(event) => search.setText(event.currentTarget.value)}
          w={260}
          type="search"
        />
        <Select label="Search in" data={SEARCH_FIELDS} value={field} onChange={(value) => list.setFilter('field', value === 'name' ? null : value)} allowDeselect={false} w={140} />
        <Select
          label="State"
          placeholder="Any state"
          data={SERVER_STATE_NAMES.map((s) => ({ value: s, label: stateLabel(s) }))}
          value={state}
          onChange={(value) => list.setFilter('state', value)}
          clearable
          w={210}
        />
        {can('view_cluster') && (
          <Select
            label="Cluster"
            placeholder="Any cluster"
            data={[{ value: 'none', label: '(not in a cluster)' }, ...(clusters.data?.items ?? []).map((c) => ({ value: c.id, label: c.data.name }))]}
            value={cluster}
            onChange={(value) => list.setFilter('cluster', value)}
            clearable
            searchable
            w={220}
          />
        )}
      </Group>
      <DataTable
        label="Servers"
        columns={columns}
        query={servers}
        rowKey={(server) => server.id}
        minWidth={760}
        skeletonRows={6}
        empty={Object.keys(filter).length ? 'No server matches.' : 'No server has registered yet.'}
        sort={{ column: sort, order: list.order, onSort: (column) => list.change({ sort: column, order: sort === column && list.order === 1 ? -1 : 1 }) }}
        paging={list.paging('servers')}
      />
    </>
  );
}
