import { Anchor, Badge, Button, Card, Group, Modal, SimpleGrid, Skeleton, Stack, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useCallback, useState, type ReactNode } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ErrorNotice, errorMessage } from '../../api/errors.ts';
import { queryKeys, useExecution, useExecutionSteps, useServers } from '../../api/queries.ts';
import { useClient, useSession } from '../../api/session.tsx';
import { formatDuration, formatTime } from '../../components/format.ts';
import { isCancelable, isFinal } from '../../components/runFormat.ts';
import { useNow } from '../../components/useNow.ts';
import { ExecutionLog } from './ExecutionLog.tsx';
import { PreviewResult } from './PreviewResult.tsx';
import { StepsTable } from './StepsTable.tsx';

const STATE_COLORS: Record<string, string> = {
  created: 'gray',
  started: 'blue',
  completed: 'green',
  failed: 'red',
  canceling: 'orange',
  canceled: 'yellow',
};

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Stack gap={0}>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
      <Text size="sm" component="div">
        {children}
      </Text>
    </Stack>
  );
}

export function ExecutionPage() {
  const { id = '' } = useParams();
  const client = useClient();
  const { can } = useSession();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [confirmCancel, setConfirmCancel] = useState(false);

  const execution = useExecution(id, { refetchInterval: (q) => (q.state.data && isFinal(q.state.data.data.state) ? false : 2000) });
  const state = execution.data?.data.state;
  const running = !!execution.data && !isFinal(state);
  const canSteps = can('view_execution_steps');

  const steps = useExecutionSteps(id, { enabled: canSteps && !!execution.data, refetchInterval: running ? 2000 : false });

  const serverIds = execution.data?.data.server_ids ?? [];
  const servers = useServers({ all: true, filter: { id: { in: [...serverIds].sort() } } }, { enabled: can('view_server') && serverIds.length > 0, staleTime: 60_000 });
  const hostName = useCallback(
    (serverId: string | null) => {
      if (!serverId) return '—';
      const s = servers.data?.items.find((x) => x.id === serverId);
      return s ? s.data.name || s.data.fqdn || s.data.ip : serverId.slice(0, 8);
    },
    [servers.data],
  );

  const cancel = useMutation({
    mutationFn: () => client.cancelExecution(id),
    onSuccess: (updated) => {
      queryClient.setQueryData(queryKeys.executions.detail(id), updated);
      void queryClient.invalidateQueries({ queryKey: queryKeys.executions.all });
      setConfirmCancel(false);
      notifications.show({ color: 'yellow', title: 'Cancel requested', message: `The execution is ${updated.data.state}.` });
    },
    onError: (err) => notifications.show({ color: 'red', title: 'Could not cancel', message: errorMessage(err) }),
  });

  const relaunch = useMutation({
    mutationFn: (hosts: 'failed' | 'all') => client.relaunchExecution(id, hosts),
    onSuccess: (created) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.executions.all });
      const note = created.data.relaunch?.note;
      notifications.show({ color: note ? 'yellow' : 'green', title: 'Relaunched', message: note ?? 'A new execution is queued.' });
      void navigate(`/executions/${created.id}`);
    },
    onError: (err) => notifications.show({ color: 'red', title: 'Could not relaunch', message: errorMessage(err) }),
  });

  const onLogEnded = useCallback(() => {
    // The execution, its steps and its preview.
    void queryClient.invalidateQueries({ queryKey: queryKeys.executions.detail(id) });
  }, [queryClient, id]);

  // A running execution's duration grows each second.
  const now = useNow(running ? 1000 : null);
  const started = execution.data?.data.time_started;
  const duration = started ? (execution.data?.data.time_finished ?? now) - started : null;

  if (execution.isPending) return <Skeleton height={320} />;
  if (execution.error || !execution.data) return <ErrorNotice error={execution.error} onRetry={() => void execution.refetch()} />;
  const e = execution.data;
  const pc = e.data.playbook_configuration;

  return (
    <Stack gap="md">
      <Group justify="space-between" align="start" wrap="wrap">
        <Stack gap={4}>
          <Anchor component={Link} to="/executions" size="sm">
            ← Executions
          </Anchor>
          <Group gap="sm">
            <Title order={2}>
              {e.data.preview ? 'Preview' : 'Execution'} of {pc.playbook_name}
            </Title>
            {e.data.preview ? (
              <Badge variant="outline" color="grape" tt="none">
                preview: changes nothing
              </Badge>
            ) : null}
            <Badge role="status" aria-label="Execution state" aria-live="polite" size="lg" variant="light" color={STATE_COLORS[e.data.state] ?? 'gray'} tt="none">
              {e.data.state}
            </Badge>
          </Group>
          <Text size="xs" c="dimmed" ff="monospace">
            {e.id}
          </Text>
        </Stack>
        <Group gap="xs">
          {can('create_execution') && (e.data.state === 'failed' || e.data.state === 'canceled') ? (
            <Button color="orange" onClick={() => relaunch.mutate('failed')} loading={relaunch.isPending && relaunch.variables === 'failed'}>
              Relaunch failed hosts
            </Button>
          ) : null}
          {can('create_execution') && isFinal(e.data.state) ? (
            <Button variant="light" onClick={() => relaunch.mutate('all')} loading={relaunch.isPending && relaunch.variables === 'all'}>
              Relaunch all
            </Button>
          ) : null}
          {can('delete_execution') && isCancelable(e.data.state) ? (
            <Button color="red" variant="light" onClick={() => setConfirmCancel(true)}>
              Cancel execution
            </Button>
          ) : null}
        </Group>
      </Group>

      <Card withBorder>
        <SimpleGrid cols={{ base: 2, sm: 3, lg: 6 }} spacing="md">
          <Field label="Configuration">
            {can('view_playbook_configuration') ? (
              <Anchor component={Link} to={`/playbook-configurations/${pc.id}`} size="sm">
                {pc.id.slice(0, 8)} (version {pc.version})
              </Anchor>
            ) : (
              `${pc.id.slice(0, 8)} (version ${pc.version})`
            )}
          </Field>
          <Field label="Created">{formatTime(e.data.time_created)}</Field>
          <Field label="Started">{formatTime(e.data.time_started)}</Field>
          <Field label="Finished">{formatTime(e.data.time_finished)}</Field>
          <Field label="Duration">{formatDuration(duration)}</Field>
          <Field label="Runner">{e.data.runner_id ?? '—'}</Field>
        </SimpleGrid>
        {e.data.relaunch_of ? (
          <Text size="sm" mt="sm">
            Relaunch of{' '}
            <Anchor component={Link} to={`/executions/${e.data.relaunch_of}`} ff="monospace" size="sm">
              {e.data.relaunch_of.slice(0, 8)}
            </Anchor>
            {e.data.relaunch ? ` (${e.data.relaunch.whole ? 'every host' : `${e.data.limit_server_ids?.map(hostName).join(', ') ?? ''} only`})` : ''}
            {e.data.relaunch?.note ? `: ${e.data.relaunch.note}` : ''}
          </Text>
        ) : null}
        {e.data.relaunched_by?.length ? (
          <Text size="sm" mt="sm" aria-label="Relaunched by">
            Relaunched by{' '}
            {e.data.relaunched_by.map((r, i) => (
              <span key={r}>
                {i > 0 ? ', ' : ''}
                <Anchor component={Link} to={`/executions/${r}`} ff="monospace" size="sm">
                  {r.slice(0, 8)}
                </Anchor>
              </span>
            ))}
          </Text>
        ) : null}
        {e.data.reason ? (
          <Text size="sm" mt="sm" c={e.data.state === 'failed' ? 'red' : undefined}>
            Reason: {e.data.reason}
          </Text>
        ) : null}
      </Card>

      {canSteps ? (
        <>
          {e.data.preview ? (
            <Stack gap="xs">
              <Title order={3}>What it would change</Title>
              <PreviewResult executionId={id} running={running} hostName={hostName} />
            </Stack>
          ) : null}
          <Stack gap="xs">
            <Group justify="space-between">
              <Title order={3}>Steps</Title>
              {steps.data ? (
                <Text size="sm" c="dimmed">
                  {steps.data.total} step(s)
                  {steps.data.items.some((s) => s.data.result === 'error' || s.data.result === 'unreachable')
                    ? `, ${steps.data.items.filter((s) => s.data.result === 'error' || s.data.result === 'unreachable').length} failed`
                    : ''}
                </Text>
              ) : null}
            </Group>
            <ErrorNotice error={steps.error} />
            {steps.isPending ? <Skeleton height={80} /> : steps.data ? <StepsTable steps={steps.data.items} hostName={hostName} /> : null}
          </Stack>
          <Stack gap="xs">
            <Title order={3}>Log</Title>
            <ExecutionLog executionId={id} onEnded={onLogEnded} />
          </Stack>
        </>
      ) : (
        <Text size="sm" c="dimmed">
          Your role cannot see the steps and the log of executions (view_execution_steps).
        </Text>
      )}

      <Modal opened={confirmCancel} onClose={() => setConfirmCancel(false)} title="Cancel this execution?">
        <Stack>
          <Text size="sm">
            {e.data.state === 'created'
              ? 'It has not started: it is canceled at once.'
              : 'Its runner stops the playbook: the execution is canceling, then canceled. Hosts may be left half-configured.'}
          </Text>
          <Group justify="end">
            <Button variant="default" onClick={() => setConfirmCancel(false)}>
              Keep running
            </Button>
            <Button color="red" loading={cancel.isPending} onClick={() => cancel.mutate()}>
              Confirm cancel
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
