import type { CephReport, ClusterStatus, ClusterStatusPoint, HealthCheck } from '@carapace/models';
import { Alert, Anchor, Badge, Group, Progress, SimpleGrid, Skeleton, Stack, Table, Text } from '@mantine/core';
import { Link } from 'react-router';
import { ErrorNotice } from '../../api/errors.ts';
import { useClusterStatus, useClusterStatusHistory } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { formatAgo, formatBytes, formatTime } from '../../components/format.ts';
import { HealthBadge, healthColor } from '../../components/HealthBadge.tsx';
import { SectionCard } from '../../components/SectionCard.tsx';
import { useNow } from '../../components/useNow.ts';
import { CHART, chartGeometry } from './capacityChart.ts';

/** How often the page asks for the status again (the runners collect every 30 s by default). */
const REFRESH_MS = 15_000;

const MANTINE_COLORS: Record<string, string> = {
  green: 'var(--mantine-color-green-6)',
  yellow: 'var(--mantine-color-yellow-5)',
  red: 'var(--mantine-color-red-6)',
  gray: 'var(--mantine-color-gray-5)',
};

const percent = (part: number, total: number) => (total > 0 ? (part / total) * 100 : 0);

/** The link to a new playbook configuration of `playbook` for the cluster, when the user may create one. */
function PlaybookLink({ check, clusterId }: { check: HealthCheck; clusterId: string }) {
  const { can, canRun } = useSession();
  if (check.playbook === null) return <Text c="dimmed">—</Text>;
  if (!can('create_playbook_configuration') || !canRun(check.playbook)) {
    return (
      <Text ff="monospace" size="sm" title="Your role may not create this configuration">
        {check.playbook}
      </Text>
    );
  }
  const to = `/playbook-configurations/new?${new URLSearchParams({ cluster: clusterId, playbook: check.playbook }).toString()}`;
  return (
    <Anchor component={Link} to={to} aria-label={`Address ${check.code} with ${check.playbook}`} ff="monospace" size="sm">
      {check.playbook}
    </Anchor>
  );
}

function HealthChecks({ ceph, clusterId }: { ceph: CephReport; clusterId: string }) {
  if (ceph.health.checks.length === 0) return <Text c="dimmed">No health check is raised: Ceph reports {ceph.health.status}.</Text>;
  return (
    <Table.ScrollContainer minWidth={560}>
      <Table striped aria-label="Health checks">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Check</Table.Th>
            <Table.Th>Severity</Table.Th>
            <Table.Th>Summary</Table.Th>
            <Table.Th>Playbook</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {ceph.health.checks.map((check) => (
            <Table.Tr key={check.code}>
              <Table.Td>
                <Text ff="monospace" size="sm" style={{ wordBreak: 'break-all' }}>
                  {check.code}
                </Text>
              </Table.Td>
              <Table.Td style={{ whiteSpace: 'nowrap' }}>
                <Group gap={4} wrap="nowrap">
                  <Badge color={healthColor(check.severity)} variant="light" tt="none" size="sm" styles={{ root: { overflow: 'visible' }, label: { overflow: 'visible' } }}>
                    {check.severity}
                  </Badge>
                  {check.muted && (
                    <Badge color="gray" variant="outline" tt="none" size="sm" styles={{ root: { overflow: 'visible' }, label: { overflow: 'visible' } }}>
                      muted
                    </Badge>
                  )}
                </Group>
              </Table.Td>
              <Table.Td>{check.summary}</Table.Td>
              <Table.Td>
                <PlaybookLink check={check} clusterId={clusterId} />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

function Daemons({ ceph }: { ceph: CephReport }) {
  const { monitors, managers, osds } = ceph;
  return (
    <Stack gap="sm">
      <SimpleGrid cols={{ base: 1, sm: 3 }} spacing="sm">
        <div aria-label="Monitors">
          <Text size="xs" c="dimmed">
            Monitors
          </Text>
          <Text fw={600}>
            {monitors.in_quorum.length}/{monitors.total} in quorum
          </Text>
          <Text size="sm">{monitors.in_quorum.join(', ') || '—'}</Text>
          {monitors.out_of_quorum.length > 0 && (
            <Text size="sm" c="red">
              out of quorum: {monitors.out_of_quorum.join(', ')}
            </Text>
          )}
        </div>
        <div aria-label="Managers">
          <Text size="xs" c="dimmed">
            Managers
          </Text>
          <Text fw={600}>{managers.active ?? 'none active'}</Text>
          <Text size="sm">{managers.standbys.length ? `standby: ${managers.standbys.join(', ')}` : 'no standby'}</Text>
        </div>
        <div aria-label="OSDs">
          <Text size="xs" c="dimmed">
            OSDs
          </Text>
          <Text fw={600}>
            {osds.up} up, {osds.in} in, of {osds.total}
          </Text>
        </div>
      </SimpleGrid>
      <Table.ScrollContainer minWidth={520}>
        <Table striped aria-label="OSDs by host">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Host</Table.Th>
              <Table.Th>Monitor</Table.Th>
              <Table.Th>Manager</Table.Th>
              <Table.Th>OSDs up</Table.Th>
              <Table.Th>OSDs in</Table.Th>
              <Table.Th>Down</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {daemonHosts(ceph).map((h) => (
              <Table.Tr key={h.host}>
                <Table.Td>
                  {h.serverId ? (
                    <Anchor component={Link} to={`/servers/${h.serverId}`}>
                      {h.host}
                    </Anchor>
                  ) : (
                    h.host
                  )}
                </Table.Td>
                <Table.Td>{h.monitor}</Table.Td>
                <Table.Td>{h.manager}</Table.Td>
                <Table.Td>{h.total === 0 ? '—' : `${h.up}/${h.total}`}</Table.Td>
                <Table.Td>{h.total === 0 ? '—' : `${h.in}/${h.total}`}</Table.Td>
                <Table.Td>
                  <Text size="sm" c={h.down.length ? 'red' : 'dimmed'} ff="monospace">
                    {h.down.join(', ') || '—'}
                  </Text>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Table.ScrollContainer>
    </Stack>
  );
}

/** The hosts of the cluster's daemons: those of the CRUSH tree, and the monitors and managers by name (Ceph names them after their host). */
export function daemonHosts(ceph: CephReport): { host: string; serverId: string | null; monitor: string; manager: string; up: number; in: number; total: number; down: string[] }[] {
  const short = (name: string) => name.split('.')[0] ?? name;
  const hosts = new Map(ceph.osds.by_host.map((h) => [short(h.host), { host: h.host, serverId: h.server_id, up: h.up, in: h.in, total: h.total, down: h.osds.filter((o) => !o.up).map((o) => `osd.${o.id}`) }]));
  for (const name of [...ceph.monitors.in_quorum, ...ceph.monitors.out_of_quorum, ...(ceph.managers.active ? [ceph.managers.active] : []), ...ceph.managers.standbys]) {
    if (!hosts.has(short(name))) hosts.set(short(name), { host: name, serverId: null, up: 0, in: 0, total: 0, down: [] });
  }
  const monitor = (key: string) =>
    ceph.monitors.in_quorum.some((m) => short(m) === key) ? 'in quorum' : ceph.monitors.out_of_quorum.some((m) => short(m) === key) ? 'out of quorum' : '—';
  const manager = (key: string) =>
    ceph.managers.active !== null && short(ceph.managers.active) === key ? 'active' : ceph.managers.standbys.some((m) => short(m) === key) ? 'standby' : '—';
  return [...hosts.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, h]) => ({ ...h, monitor: monitor(key), manager: manager(key) }));
}

function Capacity({ ceph }: { ceph: CephReport }) {
  const c = ceph.capacity;
  const rawPct = percent(c.raw_used_bytes, c.raw_total_bytes);
  const usableUsed = Math.max(0, c.usable_total_bytes - c.usable_available_bytes);
  const usablePct = percent(usableUsed, c.usable_total_bytes);
  const color = (p: number) => (p >= 85 ? 'red' : p >= 70 ? 'yellow' : 'blue');
  return (
    <Stack gap="sm">
      <SimpleGrid cols={{ base: 1, sm: 2 }} spacing="md">
        <div>
          <Text size="sm" aria-label="Raw capacity">
            Raw: {formatBytes(c.raw_used_bytes)} used of {formatBytes(c.raw_total_bytes)} ({rawPct.toFixed(1)} %), {formatBytes(c.raw_available_bytes)} available
          </Text>
          <Progress value={rawPct} color={color(rawPct)} aria-label="Raw space used" mt={4} />
        </div>
        <div>
          <Text size="sm" aria-label="Usable capacity">
            Usable: {formatBytes(c.usable_available_bytes)} available of {formatBytes(c.usable_total_bytes)}
          </Text>
          <Progress value={usablePct} color={color(usablePct)} aria-label="Usable space used" mt={4} />
        </div>
      </SimpleGrid>
      {c.pools.length === 0 ? (
        <Text c="dimmed">No pool.</Text>
      ) : (
        <Table.ScrollContainer minWidth={620}>
          <Table striped aria-label="Pools">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Pool</Table.Th>
                <Table.Th>Replicas</Table.Th>
                <Table.Th>Stored</Table.Th>
                <Table.Th>Raw used</Table.Th>
                <Table.Th>Max available</Table.Th>
                <Table.Th>Used</Table.Th>
                <Table.Th>Objects</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {c.pools.map((p) => (
                <Table.Tr key={p.id}>
                  <Table.Td>{p.name}</Table.Td>
                  <Table.Td>{p.size}</Table.Td>
                  <Table.Td>{formatBytes(p.stored_bytes)}</Table.Td>
                  <Table.Td>{formatBytes(p.used_bytes)}</Table.Td>
                  <Table.Td>{formatBytes(p.max_available_bytes)}</Table.Td>
                  <Table.Td>{p.percent_used.toFixed(1)} %</Table.Td>
                  <Table.Td>{p.objects.toLocaleString()}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}

/** The raw capacity of the last 24 hours (used as an area, total as a dashed line) over a strip of the health at each point. */
export function CapacityChart({ points, now }: { points: readonly ClusterStatusPoint[]; now: number }) {
  const g = chartGeometry(points, now);
  const bottom = CHART.height - CHART.bottom;
  const hour = (at: number) => new Date(at * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  const last = points.at(-1);
  const description = last
    ? `${points.length} points from ${formatTime(points[0]?.at)} to ${formatTime(last.at)}; now ${formatBytes(last.raw_used_bytes)} used of ${formatBytes(last.raw_total_bytes)}`
    : 'No point in the last 24 hours';
  return (
    <svg
      viewBox={`0 0 ${CHART.width} ${CHART.height}`}
      width="100%"
      role="img"
      aria-label={`Raw capacity over the last 24 hours: ${description}`}
      data-testid="capacity-chart"
      data-points={points.length}
      style={{ maxWidth: CHART.width, display: 'block' }}
    >
      <title>Raw capacity over the last 24 hours</title>
      {g.yTicks.map((t) => (
        <g key={t.y}>
          <line x1={CHART.left} x2={CHART.width - CHART.right} y1={t.y} y2={t.y} stroke="var(--mantine-color-default-border)" strokeWidth={1} />
          <text x={CHART.left - 6} y={t.y + 4} textAnchor="end" fontSize={11} fill="var(--mantine-color-dimmed)">
            {formatBytes(t.value)}
          </text>
        </g>
      ))}
      {g.xTicks.map((t) => (
        <text key={t.at} x={t.x} y={bottom + CHART.strip + 16} textAnchor="middle" fontSize={11} fill="var(--mantine-color-dimmed)">
          {hour(t.at)}
        </text>
      ))}
      {g.usedArea && <path d={g.usedArea} fill="var(--mantine-color-blue-filled)" fillOpacity={0.35} stroke="var(--mantine-color-blue-filled)" strokeWidth={1.5} data-series="raw-used" />}
      {g.totalLine && <path d={g.totalLine} fill="none" stroke="var(--mantine-color-text)" strokeDasharray="4 3" strokeWidth={1.2} data-series="raw-total" />}
      <g data-series="health">
        {g.health.map((s) => (
          <rect key={s.at} x={s.x} y={bottom + 4} width={s.width} height={CHART.strip} fill={MANTINE_COLORS[healthColor(s.health)]} data-health={s.health}>
            <title>
              {formatTime(s.at)}: {s.health}
            </title>
          </rect>
        ))}
      </g>
      {points.length === 0 && (
        <text x={CHART.width / 2} y={CHART.height / 2} textAnchor="middle" fontSize={13} fill="var(--mantine-color-dimmed)">
          No status collected in the last 24 hours
        </text>
      )}
    </svg>
  );
}

function Summary({ status, name }: { status: ClusterStatus; name: string }) {
  return (
    <Stack gap={6}>
      <Group gap="md">
        <HealthBadge status={status} name={name} size="lg" />
        <Text size="sm" c="dimmed">
          {status.collected_at ? `collected ${formatAgo(status.collected_at)} (${formatTime(status.collected_at)})` : 'never collected'}
          {status.collection && ` by ${status.collection.runner} from ${status.collection.monitor} in ${status.collection.duration_ms} ms`}
        </Text>
      </Group>
      {status.state === 'unreachable' && status.unreachable && (
        <Alert color="red" title="The monitors do not answer" role="alert">
          <Text size="sm">
            Since {formatTime(status.unreachable.since)} ({formatAgo(status.unreachable.since)}): {status.unreachable.reason}
          </Text>
          {status.ceph && (
            <Text size="sm" mt={4}>
              What follows is the last report, of {formatTime(status.collected_at)}.
            </Text>
          )}
        </Alert>
      )}
      {status.state === 'pending' && (
        <Alert color="gray" title="No status yet" role="status">
          No runner has collected this cluster's status yet; it does so every 30 seconds by default, and after every execution on it.
        </Alert>
      )}
      {status.state === 'not_deployed' && (
        <Alert color="gray" title="Not deployed" role="status">
          The cluster has no monitor yet: deploy it with a playbook configuration of cluster_deploy.
        </Alert>
      )}
    </Stack>
  );
}

/** The status tab of a cluster page: health and its checks, daemons by host, capacity with its 24-hour chart, pools, IO. */
export function ClusterStatusPanel({ clusterId, name }: { clusterId: string; name: string }) {
  const status = useClusterStatus(clusterId, { refetchInterval: REFRESH_MS });
  const history = useClusterStatusHistory(clusterId, 24, { refetchInterval: 60_000 });
  // The chart's time axis ends now: it moves on with the history's refetch.
  const now = useNow(60_000);
  if (status.error) return <ErrorNotice error={status.error} onRetry={() => void status.refetch()} />;
  if (!status.data) return <Skeleton h={160} />;
  const s = status.data;
  const ceph = s.ceph;
  return (
    <Stack gap="md">
      <Summary status={s} name={name} />
      {ceph && (
        <>
          <SectionCard titleSize="h5" title="Health checks" id="status-checks">
            <HealthChecks ceph={ceph} clusterId={clusterId} />
          </SectionCard>
          <SectionCard titleSize="h5" title="Daemons by host" id="status-daemons">
            <Daemons ceph={ceph} />
          </SectionCard>
        </>
      )}
      <SectionCard titleSize="h5" title="Capacity" id="status-capacity">
        <Stack gap="md">
          <ErrorNotice error={history.error} />
          {history.isPending ? <Skeleton h={180} /> : <CapacityChart points={history.data?.points ?? []} now={now} />}
          {ceph && <Capacity ceph={ceph} />}
        </Stack>
      </SectionCard>
      {ceph && (
        <SectionCard titleSize="h5" title="Placement groups and client IO" id="status-pgs">
          <Group gap="xs" mb="xs">
            {ceph.pgs.states.map((p) => (
              <Badge key={p.state} variant="light" color={p.state === 'active+clean' ? 'green' : 'yellow'} tt="none">
                {p.count} {p.state}
              </Badge>
            ))}
            <Text size="sm" c="dimmed">
              {ceph.pgs.total} placement groups
            </Text>
          </Group>
          <Text size="sm">
            Read {formatBytes(ceph.io.read_bytes_per_second)}/s ({Math.round(ceph.io.read_operations_per_second)} op/s), write {formatBytes(ceph.io.write_bytes_per_second)}/s (
            {Math.round(ceph.io.write_operations_per_second)} op/s)
          </Text>
        </SectionCard>
      )}
    </Stack>
  );
}
