import type { Execution } from '@carapace/models';
import { Anchor, Group, SimpleGrid, Skeleton, Stack, Table, Text, UnstyledButton } from '@mantine/core';
import { Link } from 'react-router';
import { ErrorNotice } from '../../api/errors.ts';
import { useAllClusters, useClusterStatuses, useExecutions, useRunners, useServerCounts } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { formatAgo, formatTime } from '../../components/format.ts';
import { HealthBadge, healthWord } from '../../components/HealthBadge.tsx';
import { PageHeader } from '../../components/PageHeader.tsx';
import { SectionCard } from '../../components/SectionCard.tsx';
import { StateBadge, stateLabel } from '../../components/StateBadge.tsx';

const REFRESH_MS = 10_000;

/** The clusters with the health of each (GET /v1/cluster_status/), the unhealthy first. */
function ClustersPanel() {
  const clusters = useAllClusters({ refetchInterval: REFRESH_MS });
  const statuses = useClusterStatuses({ refetchInterval: REFRESH_MS });
  const byId = new Map((statuses.data?.items ?? []).map((s) => [s.cluster_id, s]));
  const rank = { HEALTH_ERR: 0, UNREACHABLE: 1, HEALTH_WARN: 2, PENDING: 3, HEALTH_OK: 4, NOT_DEPLOYED: 5 } as const;
  const items = [...(clusters.data?.items ?? [])].sort((a, b) => rank[healthWord(byId.get(a.id))] - rank[healthWord(byId.get(b.id))] || a.data.name.localeCompare(b.data.name));
  const counts = new Map<string, number>();
  for (const c of items) counts.set(healthWord(byId.get(c.id)), (counts.get(healthWord(byId.get(c.id))) ?? 0) + 1);
  const shown = items.slice(0, 12);
  return (
    <SectionCard titleSize="h4"
      title="Clusters"
      id="dash-clusters"
      action={
        <Anchor component={Link} to="/clusters" size="sm">
          {clusters.data ? `All ${clusters.data.total}` : 'All'}
        </Anchor>
      }
    >
      <ErrorNotice error={clusters.error ?? statuses.error} />
      {clusters.isPending && <Skeleton h={80} />}
      {clusters.data && (
        <Stack gap={6}>
          <Text size="xl" fw={700} aria-label={`${clusters.data.total} clusters`}>
            {clusters.data.total}
            {clusters.data.total > 0 && statuses.data && (
              <Text span size="sm" c="dimmed" fw={400}>
                {' '}
                {counts.get('HEALTH_OK') ?? 0} healthy
              </Text>
            )}
          </Text>
          {clusters.data.items.length === 0 && <Text c="dimmed">No cluster yet.</Text>}
          {shown.map((c) => (
            <Group key={c.id} justify="space-between" wrap="nowrap" data-cluster={c.id}>
              <Anchor component={Link} to={`/clusters/${c.id}`} truncate="end">
                {c.data.name}
              </Anchor>
              {statuses.isPending ? <Skeleton h={18} w={90} /> : <HealthBadge status={byId.get(c.id)} name={c.data.name} size="sm" />}
            </Group>
          ))}
          {items.length > shown.length && (
            <Anchor component={Link} to="/clusters" size="sm">
              {items.length - shown.length} more
            </Anchor>
          )}
        </Stack>
      )}
    </SectionCard>
  );
}

function ServersPanel() {
  const counts = useServerCounts({ refetchInterval: REFRESH_MS });
  return (
    <SectionCard titleSize="h4"
      title="Servers"
      id="dash-servers"
      action={
        <Anchor component={Link} to="/servers" size="sm">
          All servers
        </Anchor>
      }
    >
      <ErrorNotice error={counts.error} />
      {counts.isPending && <Skeleton h={80} />}
      {counts.data && (
        <Stack gap={6}>
          <Text size="xl" fw={700} aria-label={`${counts.data.total} servers`}>
            {counts.data.total}
          </Text>
          {counts.data.states
            .filter((s) => s.count > 0 || s.state === 'operational')
            .map((s) => (
              <UnstyledButton
                key={s.state}
                component={Link}
                to={`/servers?state=${s.state}`}
                aria-label={`${s.count} ${stateLabel(s.state)} servers`}
              >
                <Group justify="space-between">
                  <StateBadge state={s.state} />
                  <Text fw={600}>{s.count}</Text>
                </Group>
              </UnstyledButton>
            ))}
        </Stack>
      )}
    </SectionCard>
  );
}

function ExecutionRows({ executions, empty }: { executions: Execution[]; empty: string }) {
  if (executions.length === 0) return <Text c="dimmed">{empty}</Text>;
  return (
    <Table.ScrollContainer minWidth={420}>
      <Table>
        <Table.Tbody>
          {executions.map((e) => (
            <Table.Tr key={e.id}>
              <Table.Td>
                <Anchor component={Link} to={`/executions/${e.id}`}>
                  {e.data.playbook_configuration.playbook_name}
                </Anchor>
                <Text size="xs" c="dimmed" ff="monospace">
                  {e.id.slice(0, 8)}
                </Text>
              </Table.Td>
              <Table.Td>
                <StateBadge state={e.data.state} kind="execution" />
              </Table.Td>
              <Table.Td title={formatTime(e.data.time_finished ?? e.data.time_started ?? e.data.time_created)}>
                <Text size="sm">{formatAgo(e.data.time_finished ?? e.data.time_started ?? e.data.time_created)}</Text>
                {e.data.reason && (
                  <Text size="xs" c="red" lineClamp={2} title={e.data.reason}>
                    {e.data.reason}
                  </Text>
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

function ExecutionsPanel() {
  const running = useExecutions({ filter: { state: { in: ['created', 'started', 'canceling'] } }, perPage: 10 }, 'runs', { refetchInterval: 5_000 });
  const failed = useExecutions({ filter: { state: 'failed' }, perPage: 5 }, 'runs', { refetchInterval: REFRESH_MS });
  return (
    <>
      <SectionCard titleSize="h4"
        title={`Running executions${running.data ? ` (${running.data.total})` : ''}`}
        id="dash-running"
        action={
          <Anchor component={Link} to="/executions" size="sm">
            All executions
          </Anchor>
        }
      >
        <ErrorNotice error={running.error} />
        {running.isPending && <Skeleton h={60} />}
        {running.data && <ExecutionRows executions={running.data.items} empty="Nothing runs now." />}
      </SectionCard>
      <SectionCard titleSize="h4" title="Recent failures" id="dash-failed">
        <ErrorNotice error={failed.error} />
        {failed.isPending && <Skeleton h={60} />}
        {failed.data && <ExecutionRows executions={failed.data.items} empty="No failed execution." />}
      </SectionCard>
    </>
  );
}

function RunnersPanel() {
  const { can } = useSession();
  const runners = useRunners({ refetchInterval: REFRESH_MS });
  const connected = runners.data?.items.filter((r) => r.state !== 'disconnected') ?? [];
  return (
    <SectionCard titleSize="h4"
      title="Runners"
      id="dash-runners"
      action={
        can('view_runner') && (
          <Anchor component={Link} to="/admin/runners" size="sm">
            Manage
          </Anchor>
        )
      }
    >
      <ErrorNotice error={runners.error} />
      {runners.isPending && <Skeleton h={60} />}
      {runners.data && (
        <Stack gap={6}>
          <Text size="xl" fw={700} aria-label={`${connected.length} of ${runners.data.items.length} runners connected`}>
            {connected.length}
            <Text span size="sm" c="dimmed" fw={400}>
              {' '}
              of {runners.data.items.length} connected
            </Text>
          </Text>
          {runners.data.items.length === 0 && <Text c="dimmed">No runner registered.</Text>}
          {runners.data.items.map((r) => (
            <Group key={r.name} justify="space-between" wrap="nowrap">
              <Text size="sm" truncate="end">
                {r.name}
              </Text>
              <Group gap={6} wrap="nowrap">
                {r.state !== 'disconnected' && (
                  <Text size="xs" c="dimmed">
                    {r.slots - r.free_slots}/{r.slots} busy
                  </Text>
                )}
                <StateBadge state={r.state} kind="runner" />
              </Group>
            </Group>
          ))}
        </Stack>
      )}
    </SectionCard>
  );
}

/** The overview: clusters with their health, servers by state, executions running and failed, runners — each as the role allows. */
export default function DashboardPage() {
  const { user, can } = useSession();
  const any = can('view_cluster') || can('view_server') || can('view_execution') || can('view_runner');
  return (
    <>
      <PageHeader title="Dashboard" description={`Welcome, ${user.data.full_name || user.data.login}.`} />
      {!any && <Text c="dimmed">Your role grants no view of clusters, servers, executions or runners. Ask an administrator for one that does.</Text>}
      <SimpleGrid cols={{ base: 1, md: 2, xl: 3 }} spacing="md">
        {can('view_cluster') && <ClustersPanel />}
        {can('view_server') && <ServersPanel />}
        {can('view_runner') && <RunnersPanel />}
        {can('view_execution') && <ExecutionsPanel />}
      </SimpleGrid>
    </>
  );
}
