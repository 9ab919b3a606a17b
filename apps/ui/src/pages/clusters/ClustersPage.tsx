import type { Cluster } from '@carapace/models';
import { Anchor, Badge, Button, Center, Group, Pagination, Skeleton, Stack, Table, Text, TextInput } from '@mantine/core';
import { keepPreviousData } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { ErrorNotice } from '../../api/errors.ts';
import { useClusters } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { escapeRegexp, formatTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { pageCount, usePagedSearch } from '../../components/paging.tsx';
import { ClusterNameModal, DeleteClusterModal, clusterServerIds } from './clusterDialogs.tsx';

const PER_PAGE = 25;

/** The clusters: search, create, rename, delete (each as the role allows). */
export default function ClustersPage() {
  const { can } = useSession();
  const navigate = useNavigate();
  const { page, setPage, search, setSearch, debounced } = usePagedSearch();
  const [creating, setCreating] = useState(false);
  const [renaming, setRenaming] = useState<Cluster | null>(null);
  const [deleting, setDeleting] = useState<Cluster | null>(null);
  const filter = debounced ? { name: { regexp: `(?i)${escapeRegexp(debounced)}` } } : {};
  const clusters = useClusters({ filter, sortBy: { name: 1 }, page, perPage: PER_PAGE }, { placeholderData: keepPreviousData });
  const pages = pageCount(clusters.data?.total ?? 0, PER_PAGE);
  const editable = can('edit_cluster') || can('delete_cluster');

  return (
    <>
      <PageHeader
        title="Clusters"
        description="Ceph clusters: deploy them with the cluster_deploy playbook, grow them with add_osd."
        actions={can('create_cluster') && <Button onClick={() => setCreating(true)}>Create cluster</Button>}
      />
      <TextInput
        label="Search clusters"
        type="search"
        placeholder="Part of the name"
        value={search}
        onChange={(event) => setSearch(event.currentTarget.value)}
        w={280}
        mb="md"
      />
      <ErrorNotice error={clusters.error} onRetry={() => void clusters.refetch()} />
      {clusters.isPending ? (
        <Stack gap="xs" aria-busy="true" aria-label="Loading clusters">
          {Array.from({ length: 4 }, (_, i) => (
            <Skeleton key={i} h={28} />
          ))}
        </Stack>
      ) : clusters.data ? (
        <>
          <Table.ScrollContainer minWidth={600}>
            <Table striped highlightOnHover aria-label="Clusters">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>Servers</Table.Th>
                  <Table.Th>Roles</Table.Th>
                  <Table.Th>Updated</Table.Th>
                  {editable && <Table.Th>Actions</Table.Th>}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {clusters.data.items.map((cluster) => {
                  const roles = Object.entries(cluster.data.configuration).filter(([, members]) => members.length > 0);
                  return (
                    <Table.Tr key={cluster.id}>
                      <Table.Td>
                        <Anchor component={Link} to={`/clusters/${cluster.id}`} fw={500}>
                          {cluster.data.name}
                        </Anchor>
                      </Table.Td>
                      <Table.Td>{clusterServerIds(cluster).length}</Table.Td>
                      <Table.Td>
                        <Group gap={4}>
                          {roles.length === 0 && (
                            <Text c="dimmed" size="sm">
                              not deployed
                            </Text>
                          )}
                          {roles.map(([role, members]) => (
                            <Badge key={role} variant="light" tt="none">
                              {role}: {members.length}
                            </Badge>
                          ))}
                        </Group>
                      </Table.Td>
                      <Table.Td>{formatTime(cluster.time_updated)}</Table.Td>
                      {editable && (
                        <Table.Td>
                          <Group gap={6} wrap="nowrap">
                            {can('edit_cluster') && (
                              <Button size="compact-sm" variant="default" onClick={() => setRenaming(cluster)} aria-label={`Rename ${cluster.data.name}`}>
                                Rename
                              </Button>
                            )}
                            {can('delete_cluster') && (
                              <Button size="compact-sm" variant="light" color="red" onClick={() => setDeleting(cluster)} aria-label={`Delete ${cluster.data.name}`}>
                                Delete
                              </Button>
                            )}
                          </Group>
                        </Table.Td>
                      )}
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          {clusters.data.items.length === 0 && (
            <Center py="lg">
              <Text c="dimmed">{debounced ? 'No cluster matches.' : 'No cluster yet.'}</Text>
            </Center>
          )}
          {pages > 1 && <Pagination mt="md" total={pages} value={page} onChange={setPage} size="sm" />}
        </>
      ) : null}
      {creating && <ClusterNameModal opened onClose={() => setCreating(false)} onDone={(c) => void navigate(`/clusters/${c.id}`)} />}
      {renaming && <ClusterNameModal opened cluster={renaming} onClose={() => setRenaming(null)} />}
      <DeleteClusterModal cluster={deleting} onClose={() => setDeleting(null)} />
    </>
  );
}
