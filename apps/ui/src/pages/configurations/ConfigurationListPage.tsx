import { Anchor, Badge, Button, Skeleton, Stack, Table, Text, TextInput } from '@mantine/core';
import { keepPreviousData } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link } from 'react-router';
import { ErrorNotice } from '../../api/errors.ts';
import { useAllClusters, useConfigurations, usePlaybooks } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { ListTitle } from '../../components/AdminList.tsx';
import { formatTime } from '../../components/format.ts';
import { ListFooter, pageCount, usePagedSearch } from '../../components/paging.tsx';
import { escapeRegexp } from '../../components/format.ts';

const PER_PAGE = 25;

export function ConfigurationListPage() {
  const { can } = useSession();
  const { page, setPage, search, setSearch, debounced } = usePagedSearch();
  const list = useConfigurations(
    { page, perPage: PER_PAGE, ...(debounced ? { filter: { name: { regexp: escapeRegexp(debounced) } } } : {}) },
    { placeholderData: keepPreviousData },
  );
  const playbooks = usePlaybooks();
  const clusters = useAllClusters();
  const playbookName = useMemo(() => new Map((playbooks.data?.items ?? []).map((p) => [p.id, p.name])), [playbooks.data]);
  const clusterName = useMemo(() => new Map((clusters.data?.items ?? []).map((c) => [c.id, c.data.name])), [clusters.data]);
  const pages = list.data ? pageCount(list.data.total, PER_PAGE) : 1;

  return (
    <Stack gap="md">
      <ListTitle
        title="Playbook configurations"
        action={
          can('create_playbook_configuration') ? (
            <Button component={Link} to="new">
              New configuration
            </Button>
          ) : null
        }
      />
      <TextInput
        label="Search configurations"
        placeholder="Name"
        value={search}
        onChange={(e) => setSearch(e.currentTarget.value)}
        maw={360}
      />
      <ErrorNotice error={list.error} onRetry={() => void list.refetch()} />
      {list.isPending ? (
        <Skeleton height={200} />
      ) : list.data ? (
        <>
          <Table.ScrollContainer minWidth={720}>
            <Table striped highlightOnHover aria-label="Playbook configurations">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Playbook</Table.Th>
                  <Table.Th>Cluster</Table.Th>
                  <Table.Th>Servers</Table.Th>
                  <Table.Th>Version</Table.Th>
                  <Table.Th>Updated</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {list.data.items.map((pc) => (
                  <Table.Tr key={pc.id}>
                    <Table.Td>
                      <Anchor component={Link} to={pc.id}>
                        {pc.data.name}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{playbookName.get(pc.data.playbook_id) ?? pc.data.playbook_id}</Table.Td>
                    <Table.Td>
                      {can('view_cluster') ? (
                        <Anchor component={Link} to={`/clusters/${pc.data.cluster_id}`}>
                          {clusterName.get(pc.data.cluster_id) ?? pc.data.cluster_id.slice(0, 8)}
                        </Anchor>
                      ) : (
                        pc.data.cluster_id.slice(0, 8)
                      )}
                    </Table.Td>
                    <Table.Td>{pc.data.server_ids?.length ?? 0}</Table.Td>
                    <Table.Td>
                      <Badge variant="light">v{pc.version}</Badge>
                    </Table.Td>
                    <Table.Td>{formatTime(pc.time_updated)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          {list.data.items.length === 0 ? <Text c="dimmed">No playbook configuration{debounced ? ' matches' : ' yet'}.</Text> : null}
          <ListFooter total={list.data.total} page={page} pages={pages} onChange={setPage} />
        </>
      ) : null}
    </Stack>
  );
}
