import type { Cluster } from '@carapace/models';
import { Anchor, Group, Pagination, Select, Table, Text, TextInput, UnstyledButton, Skeleton, Stack, Center } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { ErrorNotice } from '../../api/errors.ts';
import { SERVER_STATE_NAMES, serverFacts } from '../../api/servers.ts';
import { useAllClusters, useServers } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { escapeRegexp, formatAgo, formatTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { pageCount } from '../../components/paging.tsx';
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
const PAGE_SIZES = ['25', '50', '100'];

function isSortKey(value: string | null): value is SortKey {
  return value !== null && Object.hasOwn(SORTABLE, value);
}

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

function SortHeader({ label, column, sort, order, onSort }: { label: string; column: SortKey; sort: SortKey; order: 1 | -1; onSort: (column: SortKey) => void }) {
  const active = sort === column;
  return (
    <Table.Th aria-sort={active ? (order === 1 ? 'ascending' : 'descending') : 'none'}>
      <UnstyledButton onClick={() => onSort(column)} fw={700} fz="sm" aria-label={`Sort by ${label}`}>
        {label} {active ? (order === 1 ? '▲' : '▼') : ''}
      </UnstyledButton>
    </Table.Th>
  );
}

/**
 * The servers: search (a case-insensitive match on a chosen field), state and cluster filters,
 * sort by column, pages. Everything is done by the API (`filter`, `sort_by`, `page`,
 * `per_page`), so a page costs the same over ten servers or ten thousand; the controls live in
 * the address so that Back and links keep them.
 */
export default function ServersPage() {
  const { can } = useSession();
  const [params, setParams] = useSearchParams();
  const page = Math.max(1, Number(params.get('page')) || 1);
  const perPage = PAGE_SIZES.includes(params.get('per_page') ?? '') ? Number(params.get('per_page')) : 25;
  const sortParam = params.get('sort');
  const sort: SortKey = isSortKey(sortParam) ? sortParam : 'name';
  const order: 1 | -1 = params.get('order') === 'desc' ? -1 : 1;
  const field = SEARCH_FIELDS.some((f) => f.value === params.get('field')) ? (params.get('field') as string) : 'name';
  const state = params.get('state');
  const cluster = params.get('cluster');
  const [search, setSearch] = useState(params.get('q') ?? '');
  const [debounced] = useDebouncedValue(search, 300);

  const update = (changes: Record<string, string | null>, resetPage = true) => {
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        for (const [key, value] of Object.entries(changes)) {
          if (value === null || value === '') next.delete(key);
          else next.set(key, value);
        }
        if (resetPage) next.delete('page');
        return next;
      },
      { replace: true },
    );
  };

  // The search box writes to the address once typing pauses (only then: a link that changes
  // the address does not bring the box's text back), with the address as it is at that time.
  const current = useRef({ params, update });
  current.current = { params, update };
  useEffect(() => {
    const { params: now, update: write } = current.current;
    if ((now.get('q') ?? '') !== debounced.trim()) write({ q: debounced.trim() || null });
  }, [debounced]);

  const filter = useMemo(() => serverFilter({ search: params.get('q') ?? '', field, state, cluster }), [params, field, state, cluster]);
  const servers = useServers({ filter, sortBy: { [SORTABLE[sort]]: order, ...(sort === 'name' ? {} : { name: 1 }) }, page, perPage }, { placeholderData: keepPreviousData });
  const clusters = useAllClusters();
  const clusterNames = useMemo(() => new Map((clusters.data?.items ?? []).map((c: Cluster) => [c.id, c.data.name])), [clusters.data]);

  const onSort = (column: SortKey) => {
    const nextOrder = sort === column && order === 1 ? 'desc' : null;
    update({ sort: column === 'name' ? null : column, order: nextOrder }, false);
  };
  const total = servers.data?.total ?? 0;
  const pages = pageCount(total, perPage);

  return (
    <>
      <PageHeader title="Servers" description="Servers register themselves at first boot; facts come from the runners." />
      <Group align="flex-end" gap="sm" mb="md" wrap="wrap">
        <TextInput
          label="Search servers"
          placeholder={`Part of the ${SEARCH_FIELDS.find((f) => f.value === field)?.label ?? 'name'}`}
          value={search}
          onChange={(event) => setSearch(event.currentTarget.value)}
          w={260}
          type="search"
        />
        <Select label="Search in" data={SEARCH_FIELDS} value={field} onChange={(value) => update({ field: value === 'name' ? null : value })} allowDeselect={false} w={140} />
        <Select
          label="State"
          placeholder="Any state"
          data={SERVER_STATE_NAMES.map((s) => ({ value: s, label: stateLabel(s) }))}
          value={state}
          onChange={(value) => update({ state: value })}
          clearable
          w={210}
        />
        {can('view_cluster') && (
          <Select
            label="Cluster"
            placeholder="Any cluster"
            data={[{ value: 'none', label: '(not in a cluster)' }, ...(clusters.data?.items ?? []).map((c) => ({ value: c.id, label: c.data.name }))]}
            value={cluster}
            onChange={(value) => update({ cluster: value })}
            clearable
            searchable
            w={220}
          />
        )}
      </Group>
      <ErrorNotice error={servers.error} onRetry={() => void servers.refetch()} />
      {servers.isPending ? (
        <Stack gap="xs" aria-busy="true" aria-label="Loading servers">
          {Array.from({ length: 6 }, (_, i) => (
            <Skeleton key={i} h={28} />
          ))}
        </Stack>
      ) : servers.data ? (
        <>
          <Table.ScrollContainer minWidth={760}>
            <Table striped highlightOnHover aria-label="Servers" aria-busy={servers.isFetching} style={{ opacity: servers.isPlaceholderData ? 0.6 : 1 }}>
              <Table.Thead>
                <Table.Tr>
                  <SortHeader label="Name" column="name" sort={sort} order={order} onSort={onSort} />
                  <SortHeader label="FQDN" column="fqdn" sort={sort} order={order} onSort={onSort} />
                  <SortHeader label="IP address" column="ip" sort={sort} order={order} onSort={onSort} />
                  <SortHeader label="State" column="state" sort={sort} order={order} onSort={onSort} />
                  <Table.Th>Cluster</Table.Th>
                  <SortHeader label="Last seen" column="seen" sort={sort} order={order} onSort={onSort} />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {servers.data.items.map((server) => {
                  const facts = serverFacts(server);
                  const clusterId = server.data.cluster_id;
                  return (
                    <Table.Tr key={server.id}>
                      <Table.Td>
                        <Anchor component={Link} to={`/servers/${server.id}`} fw={500}>
                          {server.data.name || server.id}
                        </Anchor>
                      </Table.Td>
                      <Table.Td>{server.data.fqdn}</Table.Td>
                      <Table.Td>
                        <Text ff="monospace" size="sm">
                          {server.data.ip}
                        </Text>
                      </Table.Td>
                      <Table.Td>
                        <StateBadge state={server.data.state} />
                      </Table.Td>
                      <Table.Td>
                        {clusterId ? (
                          <Anchor component={Link} to={`/clusters/${clusterId}`}>
                            {clusterNames.get(clusterId) ?? clusterId.slice(0, 8)}
                          </Anchor>
                        ) : (
                          <Text c="dimmed" size="sm">
                            —
                          </Text>
                        )}
                      </Table.Td>
                      <Table.Td title={formatTime(facts?.gathered_at ?? server.time_updated)}>{formatAgo(facts?.gathered_at ?? null)}</Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          {servers.data.items.length === 0 && (
            <Center py="lg">
              <Text c="dimmed">{Object.keys(filter).length ? 'No server matches.' : 'No server has registered yet.'}</Text>
            </Center>
          )}
          <Group justify="space-between" mt="md" wrap="wrap">
            <Text size="sm" c="dimmed" aria-live="polite">
              {total === 0 ? 'No servers' : `${(page - 1) * perPage + 1}–${Math.min(page * perPage, total)} of ${total} servers`}
            </Text>
            <Group gap="sm">
              <Select
                aria-label="Servers per page"
                data={PAGE_SIZES}
                value={String(perPage)}
                onChange={(value) => update({ per_page: value === '25' ? null : value })}
                allowDeselect={false}
                w={80}
                size="xs"
              />
              <Pagination
                total={pages}
                value={Math.min(page, pages)}
                onChange={(value) => update({ page: value === 1 ? null : String(value) }, false)}
                size="sm"
                getControlProps={(control) => ({ 'aria-label': `${control} page` })}
                getItemProps={(item) => ({ 'aria-label': `Page ${item}` })}
              />
            </Group>
          </Group>
        </>
      ) : null}
    </>
  );
}
