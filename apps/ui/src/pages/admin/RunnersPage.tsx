import type { Runner } from '@carapace/models';
import { Alert, Badge, Button, Code, CopyButton, Group, Modal, Stack, Textarea, TextInput } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { queryKeys, useRunners } from '../../api/queries.ts';
import { useClient, useSession } from '../../api/session.tsx';
import { FormModal, ListTitle, ModalForm, RowAction } from '../../components/AdminList.tsx';
import { ConfirmDialog, useConfirmedAction } from '../../components/ConfirmDialog.tsx';
import { DataTable, type Column } from '../../components/DataTable.tsx';
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
    <FormModal opened={opened} onClose={onClose} title="New runner">
      <ModalForm
        onClose={onClose}
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
      </ModalForm>
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

  const columns: Column<Runner>[] = [
    { header: 'Name', cell: (r) => r.name },
    { header: 'State', cell: (r) => <StateBadge kind="runner" state={r.state} /> },
    {
      header: 'Labels',
      cell: (r) => (
        <Group gap={4}>
          {Object.entries(r.labels).map(([k, v]) => (
            <Badge key={k} variant="outline" tt="none" size="sm">
              {k}={v}
            </Badge>
          ))}
        </Group>
      ),
    },
    { header: 'Slots (free)', cell: (r) => `${r.slots} (${r.free_slots})` },
    { header: 'Last heartbeat', cell: (r) => formatAgo(r.last_heartbeat) },
    { header: 'Address', cell: (r) => r.peer ?? '—' },
    { header: 'Version', cell: (r) => r.version ?? '—' },
    {
      header: 'Actions',
      cell: (r) => (can('delete_runner') ? <RowAction tooltip="Revoke its token" label={`Revoke runner ${r.name}`} icon="✕" danger onClick={() => revoke.ask(r)} /> : null),
    },
  ];

  return (
    <Stack gap="md">
      <ListTitle title="Runners" action={can('create_runner') ? <Button onClick={() => setCreating(true)}>New runner</Button> : null} />
      <div>
        <DataTable label="Runners" columns={columns} query={runners} rowKey={(r) => r.name} minWidth={800} empty="No runner yet." />
      </div>
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
