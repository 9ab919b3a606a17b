import type { Disk, NetworkInterface, Server } from '@carapace/models';
import { Anchor, Badge, Breadcrumbs, Card, Code, Group, SimpleGrid, Skeleton, Stack, Table, Tabs, Text, Alert, Pagination } from '@mantine/core';
import { keepPreviousData } from '@tanstack/react-query';
import { Link, useParams, useSearchParams } from 'react-router';
import { ErrorNotice } from '../../api/errors.ts';
import { serverFacts } from '../../api/servers.ts';
import { useCluster, useServer, useServerVersions } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { formatAgo, formatBytes, formatTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { pageCount, useListParams, type ListSpec } from '../../components/listParams.ts';
import { StateBadge } from '../../components/StateBadge.tsx';
import { VersionTable } from '../../components/VersionTable.tsx';

function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" tt="uppercase" fw={700}>
        {label}
      </Text>
      <Text size="sm" component="div">
        {children}
      </Text>
    </div>
  );
}

function DisksTable({ disks }: { disks: Disk[] }) {
  if (disks.length === 0) return <Text c="dimmed">No disks reported.</Text>;
  return (
    <Table.ScrollContainer minWidth={720}>
      <Table striped aria-label="Disks">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Device</Table.Th>
            <Table.Th>Size</Table.Th>
            <Table.Th>Model</Table.Th>
            <Table.Th>Serial</Table.Th>
            <Table.Th>Kind</Table.Th>
            <Table.Th>Used by</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {disks.map((disk) => {
            const used = [
              disk.fstype,
              disk.mountpoint,
              ...disk.holders,
              ...disk.partitions.map((p) => `${p.name}${p.mountpoint ? ` on ${p.mountpoint}` : p.fstype ? ` (${p.fstype})` : ''}`),
            ].filter(Boolean);
            return (
              <Table.Tr key={disk.path}>
                <Table.Td>
                  <Text ff="monospace" size="sm">
                    {disk.path}
                  </Text>
                  {disk.kernel_name && (
                    <Text size="xs" c="dimmed">
                      kernel: {disk.kernel_name}
                    </Text>
                  )}
                </Table.Td>
                <Table.Td>{formatBytes(disk.size_bytes)}</Table.Td>
                <Table.Td>{disk.model ?? <Text c="dimmed" span size="sm">unknown</Text>}</Table.Td>
                <Table.Td>
                  <Text ff="monospace" size="xs">
                    {disk.serial ?? '—'}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Group gap={4}>
                    <Badge variant="outline" size="sm" tt="none">
                      {disk.type}
                    </Badge>
                    <Badge variant="light" size="sm" color={disk.rotational ? 'gray' : 'teal'} tt="none">
                      {disk.rotational ? 'HDD' : 'SSD'}
                    </Badge>
                    {disk.read_only && (
                      <Badge size="sm" color="orange" tt="none">
                        read-only
                      </Badge>
                    )}
                    {disk.removable && (
                      <Badge size="sm" color="gray" tt="none">
                        removable
                      </Badge>
                    )}
                  </Group>
                </Table.Td>
                <Table.Td>{used.length ? used.join(', ') : <Text c="green" span size="sm">free</Text>}</Table.Td>
              </Table.Tr>
            );
          })}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

function InterfacesTable({ interfaces }: { interfaces: NetworkInterface[] }) {
  if (interfaces.length === 0) return <Text c="dimmed">No interfaces reported.</Text>;
  return (
    <Table.ScrollContainer minWidth={640}>
      <Table striped aria-label="Network interfaces">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Interface</Table.Th>
            <Table.Th>Addresses</Table.Th>
            <Table.Th>MAC</Table.Th>
            <Table.Th>MTU</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {interfaces.map((iface) => (
            <Table.Tr key={iface.name}>
              <Table.Td>
                <Group gap={6}>
                  <Text ff="monospace" size="sm">
                    {iface.name}
                  </Text>
                  {iface.default_route && (
                    <Badge size="xs" variant="light" tt="none">
                      default route
                    </Badge>
                  )}
                </Group>
              </Table.Td>
              <Table.Td>
                <Stack gap={0}>
                  {iface.addresses.length === 0 && <Text c="dimmed" size="sm">none</Text>}
                  {iface.addresses.map((a) => (
                    <Text key={`${a.address}/${a.prefix}`} ff="monospace" size="sm">
                      {a.address}/{a.prefix}
                    </Text>
                  ))}
                </Stack>
              </Table.Td>
              <Table.Td>
                <Text ff="monospace" size="sm">
                  {iface.mac ?? '—'}
                </Text>
              </Table.Td>
              <Table.Td>{iface.mtu ?? '—'}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

/** The version history's page in the address: `?tab=versions&versions_page=2`. */
const VERSIONS: ListSpec = { prefix: 'versions_', pageSizes: [20] };

/** The tabs of the page; the one shown is in the address (`?tab=`), the first when absent. */
const TABS = ['disks', 'interfaces', 'versions', 'raw'] as const;

function VersionHistory({ server }: { server: Server }) {
  const { page, perPage, setPage } = useListParams(VERSIONS);
  const versions = useServerVersions(server.id, { page, perPage }, { placeholderData: keepPreviousData });
  if (versions.error) return <ErrorNotice error={versions.error} />;
  if (!versions.data) return <Skeleton h={120} />;
  const pages = pageCount(versions.data.total, perPage);
  return (
    <>
      <VersionTable
        items={versions.data.items}
        minWidth={640}
        columns={[
          { header: 'Time', cell: (v) => formatTime(v.time_updated) },
          { header: 'Name', cell: (v) => v.data.name },
          { header: 'State', cell: (v) => <StateBadge state={v.data.state} /> },
          {
            header: 'Cluster',
            cell: (v) => (v.data.cluster_id ? <Anchor component={Link} to={`/clusters/${v.data.cluster_id}`}>{v.data.cluster_id.slice(0, 8)}</Anchor> : '—'),
          },
          {
            header: 'Address',
            cell: (v) => (
              <Text ff="monospace" size="sm">
                {v.data.ip}
              </Text>
            ),
          },
        ]}
      />
      {pages > 1 && <Pagination mt="sm" total={pages} value={Math.min(page, pages)} onChange={setPage} size="sm" />}
    </>
  );
}

/** One server: its place, its facts (disks, interfaces) and its version history. */
export default function ServerPage() {
  const { id = '' } = useParams();
  const { can } = useSession();
  const [params, setParams] = useSearchParams();
  const tabParam = params.get('tab');
  const tab = TABS.find((t) => t === tabParam && (t !== 'versions' || can('view_server_versions'))) ?? 'disks';
  const chooseTab = (value: string | null) =>
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (!value || value === 'disks') next.delete('tab');
        else next.set('tab', value);
        next.delete('versions_page');
        return next;
      },
      { replace: true },
    );
  const server = useServer(id);
  const clusterId = server.data?.data.cluster_id ?? null;
  const cluster = useCluster(clusterId ?? '', { enabled: clusterId !== null && can('view_cluster') });

  const crumbs = (
    <Breadcrumbs mb="xs" aria-label="Breadcrumb">
      <Anchor component={Link} to="/servers" size="sm">
        Servers
      </Anchor>
      <Text size="sm">{server.data?.data.name ?? id}</Text>
    </Breadcrumbs>
  );
  if (server.error)
    return (
      <>
        {crumbs}
        <ErrorNotice error={server.error} onRetry={() => void server.refetch()} />
      </>
    );
  if (!server.data)
    return (
      <>
        {crumbs}
        <Skeleton h={32} w={280} mb="md" />
        <Skeleton h={200} />
      </>
    );
  const s = server.data;
  const facts = serverFacts(s);
  const roles = cluster.data ? Object.entries(cluster.data.data.configuration).filter(([, members]) => members.some((m) => m.server_id === s.id)).map(([role]) => role) : [];

  return (
    <>
      {crumbs}
      <PageHeader
        title={s.data.name || s.id}
        description={
          <>
            <Text span ff="monospace" size="sm">
              {s.id}
            </Text>
            {s.time_deleted ? ' · deleted' : ''}
          </>
        }
        actions={<StateBadge state={s.data.state} />}
      />
      <Card withBorder mb="md">
        <SimpleGrid cols={{ base: 1, xs: 2, md: 4 }} spacing="md">
          <Field label="FQDN">{s.data.fqdn}</Field>
          <Field label="IP address">
            <Code>{s.data.ip}</Code>
          </Field>
          <Field label="SSH user">{s.data.username}</Field>
          <Field label="Cluster">
            {clusterId ? (
              <Anchor component={Link} to={`/clusters/${clusterId}`}>
                {cluster.data?.data.name ?? clusterId.slice(0, 8)}
              </Anchor>
            ) : (
              'none'
            )}
            {roles.length > 0 && ` (${roles.join(', ')})`}
          </Field>
          <Field label="Operating system">{facts ? `${facts.os.pretty_name}, kernel ${facts.os.kernel}` : '—'}</Field>
          <Field label="CPU">{facts ? `${facts.cpu.count} × ${facts.cpu.model}` : '—'}</Field>
          <Field label="Memory">{facts ? formatBytes(facts.memory.total_bytes) : '—'}</Field>
          <Field label="Facts gathered">
            <span title={formatTime(facts?.gathered_at)}>{facts ? formatAgo(facts.gathered_at) : 'not yet'}</span>
          </Field>
        </SimpleGrid>
      </Card>
      {s.data.facts_error && (
        <Alert color="red" title="Fact gathering failed" mb="md">
          {s.data.facts_error}
        </Alert>
      )}
      <Tabs value={tab} onChange={chooseTab} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="disks">Disks{facts ? ` (${facts.disks.length})` : ''}</Tabs.Tab>
          <Tabs.Tab value="interfaces">Network{facts ? ` (${facts.interfaces.length})` : ''}</Tabs.Tab>
          {can('view_server_versions') && <Tabs.Tab value="versions">Version history</Tabs.Tab>}
          <Tabs.Tab value="raw">Raw facts</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="disks" pt="md">
          {facts ? <DisksTable disks={facts.disks} /> : <Text c="dimmed">The facts have not been gathered yet.</Text>}
        </Tabs.Panel>
        <Tabs.Panel value="interfaces" pt="md">
          {facts ? <InterfacesTable interfaces={facts.interfaces} /> : <Text c="dimmed">The facts have not been gathered yet.</Text>}
        </Tabs.Panel>
        {can('view_server_versions') && (
          <Tabs.Panel value="versions" pt="md">
            <VersionHistory server={s} />
          </Tabs.Panel>
        )}
        <Tabs.Panel value="raw" pt="md">
          <Code block>{JSON.stringify(s.data.facts, null, 2)}</Code>
        </Tabs.Panel>
      </Tabs>
    </>
  );
}
