import { Anchor, Chip, Group, SegmentedControl, Skeleton, Stack, Table, Text, Title } from '@mantine/core';
import { keepPreviousData } from '@tanstack/react-query';
import { useMemo } from 'react';
import { Link, useSearchParams } from 'react-router';
import { ErrorNotice } from '../../api/errors.ts';
import { useExecutions } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { formatDuration, formatTime } from '../../components/format.ts';
import { ListFooter, pageCount } from '../../components/paging.tsx';
import { EXECUTION_STATES, isFinal } from '../../components/runFormat.ts';
import { StateBadge } from '../../components/StateBadge.tsx';

const PER_PAGE = 25;

/** The executions, newest first, filtered by state (kept in the address: `?state=started,failed&page=2`). */
export function ExecutionListPage() {
  const { can } = useSession();
  const [params, setParams] = useSearchParams();
  const page = Math.max(1, Number(params.get('page')) || 1);
  const states = useMemo(() => (params.get('state') ?? '').split(',').filter((s) => (EXECUTION_STATES as readonly string[]).includes(s)), [params]);
  // Previews are listed apart from real runs (`?kind=previews`).
  const previews = params.get('kind') === 'previews';

  const list = useExecutions({ page, perPage: PER_PAGE, ...(states.length ? { filter: { state: { in: states } } } : {}) }, previews ? 'previews' : 'runs', {
    placeholderData: keepPreviousData,
    refetchInterval: (q) => (q.state.data?.items.some((e) => !isFinal(e.data.state)) ? 3000 : 15000),
  });

  const setStates = (next: string[]) => {
    const p = new URLSearchParams(params);
    if (next.length) p.set('state', next.join(','));
    else p.delete('state');
    p.delete('page');
    setParams(p, { replace: true });
  };
  const setKind = (kind: string) => {
    const p = new URLSearchParams(params);
    if (kind === 'previews') p.set('kind', 'previews');
    else p.delete('kind');
    p.delete('page');
    setParams(p, { replace: true });
  };
  const setPage = (n: number) => {
    const p = new URLSearchParams(params);
    p.set('page', String(n));
    setParams(p);
  };
  const pages = list.data ? pageCount(list.data.total, PER_PAGE) : 1;

  return (
    <Stack gap="md">
      <Group justify="space-between">
        <Title order={2}>Executions</Title>
        <SegmentedControl
          aria-label="Runs or previews"
          value={previews ? 'previews' : 'runs'}
          onChange={setKind}
          data={[
            { value: 'runs', label: 'Runs' },
            { value: 'previews', label: 'Previews' },
          ]}
        />
      </Group>
      <Group gap="xs" role="group" aria-label="Filter by state">
        <Text size="sm">State:</Text>
        <Chip.Group multiple value={states} onChange={setStates}>
          {EXECUTION_STATES.map((s) => (
            <Chip key={s} value={s} size="sm" variant="outline">
              {s}
            </Chip>
          ))}
        </Chip.Group>
      </Group>
      <ErrorNotice error={list.error} onRetry={() => void list.refetch()} />
      {list.isPending ? (
        <Skeleton height={240} />
      ) : list.data ? (
        <>
          <Table.ScrollContainer minWidth={760}>
            <Table striped highlightOnHover aria-label="Executions">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Execution</Table.Th>
                  <Table.Th>Playbook</Table.Th>
                  <Table.Th>Configuration</Table.Th>
                  <Table.Th>State</Table.Th>
                  <Table.Th>Created</Table.Th>
                  <Table.Th>Duration</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {list.data.items.map((e) => {
                  const pc = e.data.playbook_configuration;
                  const end = e.data.time_finished ?? (e.data.time_started ? Date.now() / 1000 : null);
                  return (
                    <Table.Tr key={e.id}>
                      <Table.Td>
                        <Anchor component={Link} to={`/executions/${e.id}`} ff="monospace" size="sm" aria-label={`Execution ${e.id}`}>
                          {e.id.slice(0, 8)}
                        </Anchor>
                      </Table.Td>
                      <Table.Td>{pc.playbook_name}</Table.Td>
                      <Table.Td>
                        {can('view_playbook_configuration') ? (
                          <Anchor component={Link} to={`/playbook-configurations/${pc.id}`} size="sm">
                            {pc.id.slice(0, 8)} v{pc.version}
                          </Anchor>
                        ) : (
                          `${pc.id.slice(0, 8)} v${pc.version}`
                        )}
                      </Table.Td>
                      <Table.Td>
                        <StateBadge kind="execution" state={e.data.state} />
                      </Table.Td>
                      <Table.Td>{formatTime(e.data.time_created)}</Table.Td>
                      <Table.Td>{e.data.time_started && end ? formatDuration(end - e.data.time_started) : '—'}</Table.Td>
                    </Table.Tr>
                  );
                })}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          {list.data.items.length === 0 ? <Text c="dimmed">No {previews ? 'preview' : 'execution'}{states.length ? ' in these states' : ' yet'}.</Text> : null}
          <ListFooter total={list.data.total} page={page} pages={pages} onChange={setPage} />
        </>
      ) : null}
    </Stack>
  );
}
