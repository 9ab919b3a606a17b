import type { Execution } from '@carapace/models';
import { Anchor, Chip, Group, SegmentedControl, Stack, Text, Title } from '@mantine/core';
import { keepPreviousData } from '@tanstack/react-query';
import { Link } from 'react-router';
import { useExecutions } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { DataTable, type Column } from '../../components/DataTable.tsx';
import { formatDuration, formatTime } from '../../components/format.ts';
import { PAGE_SIZES, useListParams, type ListSpec } from '../../components/listParams.ts';
import { EXECUTION_STATES, isFinal } from '../../components/runFormat.ts';
import { StateBadge } from '../../components/StateBadge.tsx';
import { useNow } from '../../components/useNow.ts';

/** The page's state in the address: `?kind=previews&state=started,failed&page=2&per_page=`. */
const LIST: ListSpec<'kind' | 'state'> = { filters: ['kind', 'state'], pageSizes: PAGE_SIZES };

/** The executions, newest first, filtered by state (kept in the address: `?state=started,failed&page=2`). */
export function ExecutionListPage() {
  const { can } = useSession();
  const list = useListParams(LIST);
  const states = (list.filters.state ?? '').split(',').filter((s) => (EXECUTION_STATES as readonly string[]).includes(s));
  // Previews are listed apart from real runs (`?kind=previews`).
  const previews = list.filters.kind === 'previews';

  const executions = useExecutions(
    { page: list.page, perPage: list.perPage, ...(states.length ? { filter: { state: { in: states } } } : {}) },
    previews ? 'previews' : 'runs',
    {
      placeholderData: keepPreviousData,
      refetchInterval: (q) => (q.state.data?.items.some((e) => !isFinal(e.data.state)) ? 3000 : 15000),
    },
  );

  // The durations of running executions grow each second.
  const now = useNow(executions.data?.items.some((e) => !isFinal(e.data.state)) ? 1000 : null);

  const columns: Column<Execution>[] = [
    {
      header: 'Execution',
      cell: (e) => (
        <Anchor component={Link} to={`/executions/${e.id}`} ff="monospace" size="sm" aria-label={`Execution ${e.id}`}>
          {e.id.slice(0, 8)}
        </Anchor>
      ),
    },
    { header: 'Playbook', cell: (e) => e.data.playbook_configuration.playbook_name },
    {
      header: 'Configuration',
      cell: (e) => {
        const pc = e.data.playbook_configuration;
        return can('view_playbook_configuration') ? (
          <Anchor component={Link} to={`/playbook-configurations/${pc.id}`} size="sm">
            {pc.id.slice(0, 8)} v{pc.version}
          </Anchor>
        ) : (
          `${pc.id.slice(0, 8)} v${pc.version}`
        );
      },
    },
    { header: 'State', cell: (e) => <StateBadge kind="execution" state={e.data.state} /> },
    { header: 'Created', cell: (e) => formatTime(e.data.time_created) },
    {
      header: 'Duration',
      cell: (e) => {
        const end = e.data.time_finished ?? (e.data.time_started ? now : null);
        return e.data.time_started && end ? formatDuration(end - e.data.time_started) : '—';
      },
    },
  ];

  return (
    <Stack gap="md">
      <Group justify="space-between">
        <Title order={2}>Executions</Title>
        <SegmentedControl
          aria-label="Runs or previews"
          value={previews ? 'previews' : 'runs'}
          onChange={(kind) => list.setFilter('kind', kind === 'previews' ? 'previews' : null)}
          data={[
            { value: 'runs', label: 'Runs' },
            { value: 'previews', label: 'Previews' },
          ]}
        />
      </Group>
      <Group gap="xs" role="group" aria-label="Filter by state">
        <Text size="sm">State:</Text>
        <Chip.Group multiple value={states} onChange={(next) => list.setFilter('state', next.join(',') || null)}>
          {EXECUTION_STATES.map((s) => (
            <Chip key={s} value={s} size="sm" variant="outline">
              {s}
            </Chip>
          ))}
        </Chip.Group>
      </Group>
      <div>
        <DataTable
          label="Executions"
          columns={columns}
          query={executions}
          rowKey={(e) => e.id}
          minWidth={760}
          skeletonRows={6}
          empty={`No ${previews ? 'preview' : 'execution'}${states.length ? ' in these states' : ' yet'}.`}
          paging={list.paging(previews ? 'previews' : 'executions')}
        />
      </div>
    </Stack>
  );
}
