import { Badge, Card, Code, Group, Skeleton, Stack, Text, Title } from '@mantine/core';
import type { ExecutionPreview, PreviewTask } from '@carapace/models';
import { ErrorNotice } from '../../api/errors.ts';
import { useExecutionPreview } from '../../api/queries.ts';

const STATUS: Record<PreviewTask['status'], { label: string; color: string }> = {
  would_change: { label: 'would change', color: 'orange' },
  unchanged: { label: 'unchanged', color: 'gray' },
  would_fail: { label: 'would fail', color: 'red' },
  unknown: { label: 'unknown', color: 'violet' },
};

/** What a preview found (`GET /v1/execution/{id}/preview/`): per host, its counts and each task that is not unchanged, with its diff or reason. */
export function PreviewResult({ executionId, running, hostName }: { executionId: string; running: boolean; hostName: (serverId: string | null) => string }) {
  const result = useExecutionPreview(executionId, { refetchInterval: running ? 2000 : false });
  if (result.isPending) return <Skeleton height={120} />;
  if (result.error || !result.data) return <ErrorNotice error={result.error} onRetry={() => void result.refetch()} />;
  return <PreviewHosts preview={result.data} hostName={hostName} />;
}

function PreviewHosts({ preview, hostName }: { preview: ExecutionPreview; hostName: (serverId: string | null) => string }) {
  return (
    <Stack gap="sm" aria-label="Preview result">
      {preview.hosts.map((host) => {
        const shown = host.tasks.filter((t) => t.status !== 'unchanged');
        const name = hostName(host.server_id);
        return (
          <Card withBorder key={host.server_id ?? 'none'} aria-label={`Preview of ${name}`}>
            <Group justify="space-between" mb="xs">
              <Title order={4}>{name}</Title>
              <Group gap={6}>
                {(Object.keys(STATUS) as PreviewTask['status'][]).map((s) => (
                  <Badge key={s} variant="light" color={STATUS[s].color} tt="none">
                    {host.counts[s]} {STATUS[s].label}
                  </Badge>
                ))}
              </Group>
            </Group>
            {shown.length === 0 ? (
              <Text size="sm" c="dimmed">
                {host.tasks.length === 0 ? 'No task reported yet.' : 'Nothing would change on this host.'}
              </Text>
            ) : (
              <Stack gap="xs">
                {shown.map((task, i) => (
                  <Stack gap={2} key={`${i}-${task.name}`}>
                    <Group gap="xs">
                      <Badge size="sm" variant="filled" color={STATUS[task.status].color} tt="none">
                        {STATUS[task.status].label}
                      </Badge>
                      <Text size="sm" fw={500}>
                        {task.role ? `${task.role}: ` : ''}
                        {task.name}
                      </Text>
                    </Group>
                    {task.why ? (
                      <Text size="sm" c="dimmed">
                        {task.why}
                      </Text>
                    ) : null}
                    {task.diff ? (
                      <Code block aria-label={`Diff of ${task.name}`}>
                        {task.diff}
                      </Code>
                    ) : null}
                  </Stack>
                ))}
              </Stack>
            )}
          </Card>
        );
      })}
    </Stack>
  );
}
