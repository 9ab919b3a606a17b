import type { Cluster } from '@carapace/models';
import { Anchor, Badge, Button, Group, Text, TextInput } from '@mantine/core';
import { keepPreviousData } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useClusters } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { DataTable, type Column } from '../../components/DataTable.tsx';
import { escapeRegexp, formatTime } from '../../components/format.ts';
import { PAGE_SIZES, useListParams, useSearchText, type ListSpec } from '../../components/listParams.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { ClusterNameModal, DeleteClusterModal, clusterServerIds } from './clusterDialogs.tsx';

/** The page's state in the address: `?q=&page=&per_page=`. */
const LIST: ListSpec<'q'> = { filters: ['q'], pageSizes: PAGE_SIZES };

/** The clusters: search, create, rename, delete (each as the role allows). */
export default function ClustersPage() {
  const { can } = useSession();
  const navigate = useNavigate();
  const list = useListParams(LIST);
  const q = list.filters.q ?? '';
  const search = useSearchText(q, (text) => list.setFilter('q', text || null));
  const [creating, setCreating] = useState(false);
  const [renaming, setRenaming] = useState<Cluster | null>(null);
  const [deleting, setDeleting] = useState<Cluster | null>(null);
  const filter = q ? { name: { regexp: `(?i)${escapeRegexp(q)}` } } : {};
  const clusters = useClusters({ filter, sortBy: { name: 1 }, page: list.page, perPage: list.perPage }, { placeholderData: keepPreviousData });
  const editable = can('edit_cluster') || can('delete_cluster');

  const columns: Column<Cluster>[] = [
    {
      header: 'Name',
      cell: (cluster) => (
        <Anchor component={Link} to={`/clusters/${cluster.id}`} fw={500}>
          {cluster.data.name}
        </Anchor>
      ),
    },
    { header: 'Servers', cell: (cluster) => clusterServerIds(cluster).length },
    {
      header: 'Roles',
      cell: (cluster) => {
        const roles = Object.entries(cluster.data.configuration).filter(([, members]) => members.length > 0);
        return (
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
        );
      },
    },
    { header: 'Updated', cell: (cluster) => formatTime(cluster.time_updated) },
  ];
  if (editable) {
    columns.push({
      header: 'Actions',
      cell: (cluster) => (
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
      ),
    });
  }

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
        value={search.text}
        onChange={(event) => search.setText(event.currentTarget.value)}
        w={280}
        mb="md"
      />
      <DataTable
        label="Clusters"
        columns={columns}
        query={clusters}
        rowKey={(cluster) => cluster.id}
        empty={q ? 'No cluster matches.' : 'No cluster yet.'}
        paging={list.paging('clusters')}
      />
      {creating && <ClusterNameModal opened onClose={() => setCreating(false)} onDone={(c) => void navigate(`/clusters/${c.id}`)} />}
      {renaming && <ClusterNameModal opened cluster={renaming} onClose={() => setRenaming(null)} />}
      <DeleteClusterModal cluster={deleting} onClose={() => setDeleting(null)} />
    </>
  );
}
