import type { Runner } from '@carapace/models';
import { Alert, Badge, Button, Code, CopyButton, Group, Modal, Skeleton, Stack, Table, Text, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ErrorNotice } from '../../api/errors.ts';
import { queryKeys, useRunners } from '../../api/queries.ts';
import { useClient, useSession } from '../../api/session.tsx';
import { FormModal, ListTitle, RowAction } from '../../components/AdminList.tsx';
import { ConfirmDialog, useConfirmedAction } from '../../components/ConfirmDialog.tsx';
import { formatAgo } from '../../components/format.ts';
import { StateBadge } from '../../components/StateBadge.tsx';
import { parseLabels, RUNNER_NAME } from './labels.ts';

function NewRunnerDialog({ opened, onClose, onCreated }: { opened: boolean; onClose: () => void; onCreated: (name: string, token: string) => void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [labels, setLabels] = useState('');
  const [touched, setTouched] = useState(false);
  const parsed = parseLabels(labels);
  const nameError = !RUNNER_NAME.test(name) ? 'Lower-case letters, digits, ".", "_" and "-" (up to 63).' : null;
  const create = useMutation({
    mutationFn: () => client.createRunner(name, 'labels' in parsed ? parsed.labels : {}),
    onSuccess: (created) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.runners() });
      setName('');
      setLabels('');
      setTouched(false);
      create.reset();
      onCreated(created.name, created.token);
    },
  });
  return (
    <FormModal
      opened={opened}
      onClose={onClose}
      title="New runner"
      formLabel="New runner"
      onSubmit={() => {
        setTouched(true);
        if (!nameError && 'labels' in parsed) create.mutate();
      }}
      error={create.error}
      pending={create.isPending}
      submitLabel="Create runner"
    >
      <TextInput label="Runner name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={touched && nameError} data-autofocus />
      <Textarea
        label="Labels"
        description="One key=value a line, e.g. site=lab"
        autosize
        minRows={2}
        value={labels}
        onChange={(e) => setLabels(e.currentTarget.value)}
        error={'error' in parsed ? parsed.error : null}
      />
    </FormModal>
  );
}

/** Shows a new runner's token, this once, with a copy button. */
function TokenDialog({ shown, onClose }: { shown: { name: string; token: string } | null; onClose: () => void }) {
  return (
    <Modal opened={shown !== null} onClose={onClose} title={`Token of runner ${shown?.name ?? ''}`} closeOnClickOutside={false} size="lg">
      <Stack>
        <Alert color="yellow" title="Shown only once">
          Copy the token now and give it to the runner (<Code>CARAPACE_RUNNER_TOKEN</Code> or its configuration). The control plane keeps only a digest: to get
          another one, revoke this runner and create it again.
        </Alert>
        <Code block aria-label="Runner token" style={{ wordBreak: 'break-all', whiteSpace: 'pre-wrap' }}>
          {shown?.token}
        </Code>
        <Group justify="end">
          <CopyButton value={shown?.token ?? ''}>
            {({ copied, copy }) => (
              <Button color={copied ? 'teal' : undefined} onClick={copy}>
                {copied ? 'Copied' : 'Copy token'}
              </Button>
            )}
          </CopyButton>
          <Button variant="default" onClick={onClose}>
            Done
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

export function RunnersPage() {
  const client = useClient();
  const { can } = useSession();
  const runners = useRunners({ refetchInterval: 5000 });
  const [creating, setCreating] = useState(false);
  const [token, setToken] = useState<{ name: string; token: string } | null>(null);
  const revoke = useConfirmedAction({
    action: (r: Runner) => client.deleteRunner(r.name),
    queryKey: queryKeys.runners(),
    doneTitle: 'Runner revoked',
    name: (r) => r.name,
  });

  return (
    <Stack gap="md">
      <ListTitle title="Runners" action={can('create_runner') ? <Button onClick={() => setCreating(true)}>New runner</Button> : null} />
      <ErrorNotice error={runners.error} onRetry={() => void runners.refetch()} />
      {runners.isPending ? (
        <Skeleton height={160} />
      ) : runners.data ? (
        runners.data.items.length === 0 ? (
          <Text c="dimmed">No runner yet.</Text>
        ) : (
          <Table.ScrollContainer minWidth={800}>
            <Table striped aria-label="Runners">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th>State</Table.Th>
                  <Table.Th>Labels</Table.Th>
                  <Table.Th>Slots (free)</Table.Th>
                  <Table.Th>Last heartbeat</Table.Th>
                  <Table.Th>Address</Table.Th>
                  <Table.Th>Version</Table.Th>
                  <Table.Th>Actions</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {runners.data.items.map((r) => (
                  <Table.Tr key={r.name}>
                    <Table.Td>{r.name}</Table.Td>
                    <Table.Td>
                      <StateBadge kind="runner" state={r.state} />
                    </Table.Td>
                    <Table.Td>
                      <Group gap={4}>
                        {Object.entries(r.labels).map(([k, v]) => (
                          <Badge key={k} variant="outline" tt="none" size="sm">
                            {k}={v}
                          </Badge>
                        ))}
                      </Group>
                    </Table.Td>
                    <Table.Td>
                      {r.slots} ({r.free_slots})
                    </Table.Td>
                    <Table.Td>{formatAgo(r.last_heartbeat)}</Table.Td>
                    <Table.Td>{r.peer ?? '—'}</Table.Td>
                    <Table.Td>{r.version ?? '—'}</Table.Td>
                    <Table.Td>
                      {can('delete_runner') ? (
                        <RowAction tooltip="Revoke its token" label={`Revoke runner ${r.name}`} icon="✕" danger onClick={() => revoke.ask(r)} />
                      ) : null}
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )
      ) : null}
      <NewRunnerDialog
        opened={creating}
        onClose={() => setCreating(false)}
        onCreated={(name, t) => {
          setCreating(false);
          setToken({ name, token: t });
        }}
      />
      <TokenDialog shown={token} onClose={() => setToken(null)} />
      <ConfirmDialog
        {...revoke.dialog}
        title="Revoke this runner?"
        message={`The token of ${revoke.target?.name ?? ''} stops working and its connection is closed; its running executions fail.`}
        confirmLabel="Revoke runner"
      />
    </Stack>
  );
}
