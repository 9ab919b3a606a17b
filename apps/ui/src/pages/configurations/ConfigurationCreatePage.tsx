import { Alert, Anchor, Button, Group, Paper, Select, Stack, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { ErrorNotice } from '../../api/errors.ts';
import { queryKeys, useAllClusters, useAllServers, usePlaybooks } from '../../api/queries.ts';
import { useClient, useSession } from '../../api/session.tsx';
import { playbookDocsHref } from '../../layout/nav.ts';
import { HintFields } from './HintFields.tsx';
import { hintFields, hintValues, initialHintValues, type HintFormValue } from './hintForm.ts';
import { ServerPicker } from './ServerPicker.tsx';

export function ConfigurationCreatePage() {
  const client = useClient();
  const { can, canRun } = useSession();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const playbooks = usePlaybooks();
  const clusters = useAllClusters();
  const servers = useAllServers();

  const [name, setName] = useState('');
  // `?cluster=ID&playbook=ID` fill the form in (the cluster page's "New configuration", a health check's playbook).
  const [search] = useSearchParams();
  const [playbookId, setPlaybookId] = useState<string | null>(search.get('playbook'));
  const [clusterId, setClusterId] = useState<string | null>(search.get('cluster'));
  const [selected, setSelected] = useState<Set<string>>(new Set());
  // The hints the user set, for the playbook they were set for; until then the playbook's defaults.
  const [hintEdits, setHintEdits] = useState<{ playbookId: string | null; values: Record<string, HintFormValue> } | null>(null);
  const [touched, setTouched] = useState(false);

  const allowed = useMemo(() => (playbooks.data?.items ?? []).filter((p) => canRun(p.id)), [playbooks.data, canRun]);
  const playbook = allowed.find((p) => p.id === playbookId);
  const fields = useMemo(() => hintFields(playbook?.hints ?? []), [playbook]);
  const clusterName = useMemo(() => {
    const names = new Map((clusters.data?.items ?? []).map((c) => [c.id, c.data.name]));
    return (id: string | null) => (id ? (names.get(id) ?? id.slice(0, 8)) : '—');
  }, [clusters.data]);

  // A playbook's hints start from its defaults (also one given in the address, once the playbooks are loaded).
  const defaults = useMemo(() => initialHintValues(fields), [fields]);
  const hints = hintEdits !== null && hintEdits.playbookId === playbookId ? hintEdits.values : defaults;
  const setHint = (hintId: string, value: HintFormValue) =>
    setHintEdits((edits) => ({ playbookId, values: { ...(edits !== null && edits.playbookId === playbookId ? edits.values : defaults), [hintId]: value } }));

  const choosePlaybook = (id: string | null) => {
    setPlaybookId(id);
    setHintEdits(null);
  };

  const create = useMutation({
    mutationFn: () =>
      client.createPlaybookConfiguration(name.trim(), clusterId ?? '', playbookId ?? '', [...selected], hintValues(fields, hints)),
    onSuccess: (pc) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.configurations.all });
      notifications.show({ color: 'green', title: 'Configuration created', message: pc.data.name });
      void navigate(`/playbook-configurations/${pc.id}`);
    },
  });

  const problems = {
    name: !name.trim() ? 'Give the configuration a name.' : null,
    playbook: !playbookId ? 'Choose a playbook.' : null,
    cluster: !clusterId ? 'Choose a cluster.' : null,
    servers: playbook?.required_server_list && selected.size === 0 ? 'This playbook needs at least one server.' : null,
  };
  const valid = !Object.values(problems).some(Boolean);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setTouched(true);
    if (valid) create.mutate();
  };

  return (
    <Stack gap="md" maw={960}>
      <Group justify="space-between">
        <Title order={2}>New playbook configuration</Title>
        <Button component={Link} to="/playbook-configurations" variant="subtle">
          Back to the list
        </Button>
      </Group>
      <ErrorNotice error={playbooks.error ?? clusters.error ?? servers.error} />
      {!can('view_cluster') ? <Alert color="orange" title="Clusters hidden">You cannot see the clusters: a configuration needs one.</Alert> : null}
      <form onSubmit={submit} noValidate aria-label="New playbook configuration">
        <Stack gap="md">
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} error={touched && problems.name} maw={480} />
          <Select
            label="Playbook"
            required
            placeholder={playbooks.isPending ? 'Loading…' : allowed.length ? 'Choose a playbook' : 'No playbook you may run'}
            data={allowed.map((p) => ({ value: p.id, label: p.name }))}
            value={playbookId}
            onChange={choosePlaybook}
            error={touched && problems.playbook}
            searchable
            maw={480}
          />
          {playbook ? (
            <Text size="sm" c="dimmed">
              {playbook.description}{' '}
              <Anchor href={playbookDocsHref(playbook)} target="_blank" rel="noopener" size="sm">
                Its reference: hints, Ceph&apos;s checks, what it refuses
              </Anchor>
            </Text>
          ) : null}
          <Select
            label="Cluster"
            required
            placeholder={clusters.isLoading ? 'Loading…' : 'Choose a cluster'}
            data={(clusters.data?.items ?? []).map((c) => ({ value: c.id, label: c.data.name }))}
            value={clusterId}
            onChange={setClusterId}
            error={touched && problems.cluster}
            searchable
            maw={480}
          />
          <ServerPicker
            servers={servers.data?.items ?? []}
            selected={selected}
            onChange={setSelected}
            clusterName={clusterName}
            required={playbook?.required_server_list ?? false}
          />
          {touched && problems.servers ? (
            <Text c="red" size="sm" role="alert">
              {problems.servers}
            </Text>
          ) : null}
          {playbook ? (
            <Paper withBorder p="md">
              <Title order={4} mb="sm">
                Hints
              </Title>
              <HintFields fields={fields} values={hints} onChange={setHint} />
            </Paper>
          ) : null}
          <ErrorNotice error={create.error} />
          <Group>
            <Button type="submit" loading={create.isPending}>
              Create configuration
            </Button>
          </Group>
        </Stack>
      </form>
    </Stack>
  );
}
