import type { Cluster } from '@carapace/models';
import { Alert, Anchor, Badge, Breadcrumbs, Button, Code, CopyButton, Group, Skeleton, Stack, Table, Tabs, Text, TextInput, Title, Card } from '@mantine/core';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ErrorNotice, errorMessage, isApiStatus } from '../../api/errors.ts';
import { useCinderIntegration, useCluster, useClusterVersions, useServers } from '../../api/queries.ts';
import { useSession } from '../../api/session.tsx';
import { formatTime } from '../../components/format.ts';
import { PageHeader } from '../../components/PageHeader.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { VersionTable } from '../../components/VersionTable.tsx';
import { ClusterNameModal, DeleteClusterModal, clusterServerIds } from './clusterDialogs.tsx';
import { ClusterStatusPanel } from './ClusterStatusPanel.tsx';

function ServersByRole({ cluster }: { cluster: Cluster }) {
  const roles = Object.entries(cluster.data.configuration)
    .filter(([, members]) => members.length > 0)
    .sort(([a], [b]) => a.localeCompare(b));
  if (roles.length === 0) {
    return (
      <Text c="dimmed">
        No server has a role in this cluster yet: deploy it with a <Anchor component={Link} to="/playbook-configurations">playbook configuration</Anchor> of cluster_deploy.
      </Text>
    );
  }
  return (
    <Stack gap="lg">
      {roles.map(([role, members]) => (
        <section key={role} aria-labelledby={`role-${role}`}>
          <Group gap="xs" mb="xs">
            <Title order={3} size="h5" id={`role-${role}`}>
              {role}
            </Title>
            <Badge variant="light" tt="none">
              {members.length}
            </Badge>
          </Group>
          <Table.ScrollContainer minWidth={560}>
            <Table striped aria-labelledby={`role-${role}`}>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Server</Table.Th>
                  <Table.Th>FQDN</Table.Th>
                  <Table.Th>IP address</Table.Th>
                  <Table.Th>Server version</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {members.map((m) => (
                  <Table.Tr key={m.server_id}>
                    <Table.Td>
                      <Anchor component={Link} to={`/servers/${m.server_id}`}>
                        {m.server_name}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{m.fqdn}</Table.Td>
                    <Table.Td>
                      <Text ff="monospace" size="sm">
                        {m.ip}
                      </Text>
                    </Table.Td>
                    <Table.Td>{m.version}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </section>
      ))}
    </Stack>
  );
}

function ClusterServers({ clusterId }: { clusterId: string }) {
  const servers = useServers({ filter: { cluster_id: clusterId }, all: true, sortBy: { name: 1 } });
  if (servers.error) return <ErrorNotice error={servers.error} />;
  if (!servers.data) return <Skeleton h={80} />;
  if (servers.data.items.length === 0) return <Text c="dimmed">No server belongs to this cluster.</Text>;
  return (
    <Table.ScrollContainer minWidth={560}>
      <Table striped aria-label="Servers of the cluster">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Server</Table.Th>
            <Table.Th>FQDN</Table.Th>
            <Table.Th>IP address</Table.Th>
            <Table.Th>State</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {servers.data.items.map((s) => (
            <Table.Tr key={s.id}>
              <Table.Td>
                <Anchor component={Link} to={`/servers/${s.id}`}>
                  {s.data.name}
                </Anchor>
              </Table.Td>
              <Table.Td>{s.data.fqdn}</Table.Td>
              <Table.Td>
                <Text ff="monospace" size="sm">
                  {s.data.ip}
                </Text>
              </Table.Td>
              <Table.Td>
                <StateBadge state={s.data.state} />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}

function CinderIntegration({ clusterId }: { clusterId: string }) {
  const [root, setRoot] = useState('/etc/ceph');
  const [asked, setAsked] = useState('/etc/ceph');
  const files = useCinderIntegration(clusterId, asked);
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        The files an OpenStack Cinder, Glance or Nova host needs to use this cluster.
      </Text>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          setAsked(root.trim() || '/etc/ceph');
        }}
      >
        <Group align="flex-end" gap="xs">
          <TextInput label="Configuration directory" value={root} onChange={(event) => setRoot(event.currentTarget.value)} w={260} />
          <Button type="submit" variant="default">
            Show files
          </Button>
        </Group>
      </form>
      {isApiStatus(files.error, 404) ? (
        <Alert color="gray" title="No integration files" role="status">
          {errorMessage(files.error)}
        </Alert>
      ) : (
        <ErrorNotice error={files.error} />
      )}
      {files.isPending && <Skeleton h={120} />}
      {files.data && Object.keys(files.data).length === 0 && <Text c="dimmed">No integration files: the cluster has not been deployed yet.</Text>}
      {files.data &&
        Object.entries(files.data).map(([path, content]) => (
          <Card key={path} withBorder padding="sm">
            <Group justify="space-between" mb="xs">
              <Text ff="monospace" fw={600} size="sm">
                {path}
              </Text>
              <CopyButton value={content}>
                {({ copied, copy }) => (
                  <Button size="compact-xs" variant="light" color={copied ? 'teal' : undefined} onClick={copy} aria-label={`Copy ${path}`}>
                    {copied ? 'Copied' : 'Copy'}
                  </Button>
                )}
              </CopyButton>
            </Group>
            <Code block>{content}</Code>
          </Card>
        ))}
    </Stack>
  );
}

function ClusterVersions({ clusterId }: { clusterId: string }) {
  const versions = useClusterVersions(clusterId, { perPage: 50 });
  if (versions.error) return <ErrorNotice error={versions.error} />;
  if (!versions.data) return <Skeleton h={80} />;
  return (
    <VersionTable
      items={versions.data.items}
      minWidth={520}
      columns={[
        { header: 'Time', cell: (v) => formatTime(v.time_updated) },
        { header: 'Name', cell: (v) => v.data.name },
        { header: 'Servers', cell: (v) => clusterServerIds(v).length },
      ]}
    />
  );
}

/** One cluster: its status as Ceph reports it, its servers by role, its servers, the Cinder integration files, its history; rename and delete. */
export default function ClusterPage() {
  const { id = '' } = useParams();
  const { can } = useSession();
  const navigate = useNavigate();
  const [renaming, setRenaming] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const cluster = useCluster(id);

  const crumbs = (
    <Breadcrumbs mb="xs" aria-label="Breadcrumb">
      <Anchor component={Link} to="/clusters" size="sm">
        Clusters
      </Anchor>
      <Text size="sm">{cluster.data?.data.name ?? id}</Text>
    </Breadcrumbs>
  );
  if (cluster.error)
    return (
      <>
        {crumbs}
        <ErrorNotice error={cluster.error} onRetry={() => void cluster.refetch()} />
      </>
    );
  if (!cluster.data)
    return (
      <>
        {crumbs}
        <Skeleton h={32} w={240} mb="md" />
        <Skeleton h={160} />
      </>
    );
  const c = cluster.data;
  const deleted = c.time_deleted !== 0;
  return (
    <>
      {crumbs}
      <PageHeader
        title={
          <>
            {c.data.name}
            {deleted && (
              <Badge ml="sm" color="red" tt="none" style={{ verticalAlign: 'middle' }}>
                deleted
              </Badge>
            )}
          </>
        }
        description={
          <>
            <Text span ff="monospace" size="sm">
              {c.id}
            </Text>{' '}
            · version {c.version} · updated {formatTime(c.time_updated)}
          </>
        }
        actions={
          !deleted && (
            <>
              {can('create_playbook_configuration') && (
                <Button component={Link} to={`/playbook-configurations/new?cluster=${c.id}`} variant="light">
                  New configuration
                </Button>
              )}
              {can('edit_cluster') && (
                <Button variant="default" onClick={() => setRenaming(true)}>
                  Rename
                </Button>
              )}
              {can('delete_cluster') && (
                <Button variant="light" color="red" onClick={() => setDeleting(true)}>
                  Delete
                </Button>
              )}
            </>
          )
        }
      />
      <Tabs defaultValue={deleted ? 'roles' : 'status'} keepMounted={false}>
        <Tabs.List>
          {!deleted && <Tabs.Tab value="status">Status</Tabs.Tab>}
          <Tabs.Tab value="roles">Servers by role</Tabs.Tab>
          {can('view_server') && <Tabs.Tab value="servers">Servers</Tabs.Tab>}
          {can('view_cinder') && <Tabs.Tab value="cinder">Cinder integration</Tabs.Tab>}
          {can('view_cluster_versions') && <Tabs.Tab value="versions">Version history</Tabs.Tab>}
        </Tabs.List>
        {!deleted && (
          <Tabs.Panel value="status" pt="md">
            <ClusterStatusPanel clusterId={c.id} name={c.data.name} />
          </Tabs.Panel>
        )}
        <Tabs.Panel value="roles" pt="md">
          <ServersByRole cluster={c} />
        </Tabs.Panel>
        {can('view_server') && (
          <Tabs.Panel value="servers" pt="md">
            <ClusterServers clusterId={c.id} />
          </Tabs.Panel>
        )}
        {can('view_cinder') && (
          <Tabs.Panel value="cinder" pt="md">
            <CinderIntegration clusterId={c.id} />
          </Tabs.Panel>
        )}
        {can('view_cluster_versions') && (
          <Tabs.Panel value="versions" pt="md">
            <ClusterVersions clusterId={c.id} />
          </Tabs.Panel>
        )}
      </Tabs>
      {renaming && <ClusterNameModal opened cluster={c} onClose={() => setRenaming(false)} />}
      <DeleteClusterModal cluster={deleting ? c : null} onClose={() => setDeleting(false)} onDone={() => void navigate('/clusters')} />
    </>
  );
}
