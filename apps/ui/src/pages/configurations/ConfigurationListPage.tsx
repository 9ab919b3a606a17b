import type { PlaybookConfigurationModel } from '@carapace/models';
import { Anchor, Badge, Button, Stack, TextInput } from '@mantine/core';
import { keepPreviousData } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link } from 'react-router';
import { useAllClusters, useConfigurations, usePlaybooks } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { ListTitle } from '../../components/AdminList.tsx';
import { DataTable, type Column } from '../../components/DataTable.tsx';
import { escapeRegexp, formatTime } from '../../components/format.ts';
import { PAGE_SIZES, useListParams, useSearchText, type ListSpec } from '../../components/listParams.ts';

/** The page's state in the address: `?q=&page=&per_page=`. */
const LIST: ListSpec<'q'> = { filters: ['q'], pageSizes: PAGE_SIZES };

export function ConfigurationListPage() {
  const { can } = useSession();
  const list = useListParams(LIST);
  const q = list.filters.q ?? '';
  const search = useSearchText(q, (text) => list.setFilter('q', text || null));
  const configurations = useConfigurations(
    { page: list.page, perPage: list.perPage, ...(q ? { filter: { name: { regexp: escapeRegexp(q) } } } : {}) },
    { placeholderData: keepPreviousData },
  );
  const playbooks = usePlaybooks();
  const clusters = useAllClusters();
  const playbookName = useMemo(() => new Map((playbooks.data?.items ?? []).map((p) => [p.id, p.name])), [playbooks.data]);
  const clusterName = useMemo(() => new Map((clusters.data?.items ?? []).map((c) => [c.id, c.data.name])), [clusters.data]);

  const columns: Column<PlaybookConfigurationModel>[] = [
    {
      header: 'Name',
      cell: (pc) => (
        <Anchor component={Link} to={pc.id}>
          {pc.data.name}
        </Anchor>
      ),
    },
    { header: 'Playbook', cell: (pc) => playbookName.get(pc.data.playbook_id) ?? pc.data.playbook_id },
    {
      header: 'Cluster',
      cell: (pc) =>
        can('view_cluster') ? (
          <Anchor component={Link} to={`/clusters/${pc.data.cluster_id}`}>
            {clusterName.get(pc.data.cluster_id) ?? pc.data.cluster_id.slice(0, 8)}
          </Anchor>
        ) : (
          pc.data.cluster_id.slice(0, 8)
        ),
    },
    { header: 'Servers', cell: (pc) => pc.data.server_ids?.length ?? 0 },
    { header: 'Version', cell: (pc) => <Badge variant="light">v{pc.version}</Badge> },
    { header: 'Updated', cell: (pc) => formatTime(pc.time_updated) },
  ];

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
      <TextInput label="Search configurations" placeholder="Name" value={search.text} onChange={(e) => search.setText(e.currentTarget.value)} maw={360} />
      <div>
        <DataTable
          label="Playbook configurations"
          columns={columns}
          query={configurations}
          rowKey={(pc) => pc.id}
          minWidth={720}
          empty={`No playbook configuration${q ? ' matches' : ' yet'}.`}
          paging={list.paging('playbook configurations')}
        />
      </div>
    </Stack>
  );
}
