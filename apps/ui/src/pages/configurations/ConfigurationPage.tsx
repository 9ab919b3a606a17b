import { ServiceApiError } from '@carapace/client';
import type { PlaybookConfigurationModel } from '@carapace/models';
import { Alert, Anchor, Badge, Button, Code, Group, Loader, SegmentedControl, Skeleton, Stack, Tabs, Text, TextInput, Title, Tooltip } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useMemo, useRef, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ErrorNotice, errorMessage } from '../../api/errors.ts';
import { queryKeys, useAllClusters, useConfiguration, usePlaybooks } from '../../api/queries.ts';
import { useClient, useSession } from '../../api/session.tsx';
import type { EditorProblem } from '../../components/CodeEditor.tsx';
import { ConfirmDialog } from '../../components/ConfirmDialog.tsx';
import { formatTime } from '../../components/format.ts';
import { playbookDocsHref } from '../../layout/nav.ts';
import { configToText, errorPath, locatePath, parseConfigText, type ConfigMode } from './configText.ts';
import { ConfigurationHistory } from './ConfigurationHistory.tsx';

const CodeEditor = lazy(() => import('../../components/CodeEditor.tsx'));

/** The editor's state: the text, the version it was made from, and whether it was changed. */
interface Draft {
  text: string;
  mode: ConfigMode;
  fromVersion: number;
  dirty: boolean;
}

export function ConfigurationPage() {
  const { id = '' } = useParams();
  const client = useClient();
  const { can, canRun } = useSession();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const query = useConfiguration(id);
  const playbooks = usePlaybooks();
  const clusters = useAllClusters();
  const model = query.data;

  const [draft, setDraft] = useState<Draft | null>(null);
  const [name, setName] = useState('');
  const [problems, setProblems] = useState<EditorProblem[]>([]);
  const [saveError, setSaveError] = useState<{ error: unknown; path: string | null } | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [tab, setTab] = useState<string | null>('configuration');
  const loadedName = useRef<string | null>(null);

  // (Re)build the text from the model when it loads or a new version arrives, unless edited.
  useEffect(() => {
    if (!model) return;
    setDraft((d) => {
      if (d && (d.dirty || d.fromVersion === model.version)) return d;
      const mode = d?.mode ?? 'yaml';
      return { text: configToText(model.data.configuration, mode), mode, fromVersion: model.version, dirty: false };
    });
    // The name follows the model unless the user changed it. The updater runs at the next
    // render, after the ref below has moved on: it compares with the name loaded before.
    const previous = loadedName.current;
    setName((n) => (previous === null || n === previous ? model.data.name : n));
    loadedName.current = model.data.name;
  }, [model]);

  const editable = can('edit_playbook_configuration') && !!model && model.time_deleted === 0;
  const runnable = !!model && model.time_deleted === 0 && can('create_execution') && canRun(model.data.playbook_id);
  const dirty = !!draft?.dirty || (!!model && name !== model.data.name);
  const playbook = playbooks.data?.items.find((p) => p.id === model?.data.playbook_id);
  const cluster = clusters.data?.items.find((c) => c.id === model?.data.cluster_id);

  const switchMode = (mode: ConfigMode) => {
    if (!draft || mode === draft.mode) return;
    const parsed = parseConfigText(draft.text, draft.mode);
    if ('problem' in parsed) {
      setProblems([{ ...parsed.problem }]);
      notifications.show({ color: 'red', title: 'Cannot switch format', message: 'Fix the error in the text first.' });
      return;
    }
    setProblems([]);
    setDraft({ ...draft, mode, text: configToText(parsed.value, mode) });
  };

  const save = useMutation({
    mutationFn: (configuration: PlaybookConfigurationModel['data']['configuration']) => {
      if (!model) throw new Error('not loaded');
      return client.updatePlaybookConfiguration({ ...model, data: { ...model.data, name: name.trim(), configuration } });
    },
    onSuccess: (saved) => {
      queryClient.setQueryData(queryKeys.configurations.detail(id), saved);
      void queryClient.invalidateQueries({ queryKey: queryKeys.configurations.all });
      setDraft((d) => ({ text: configToText(saved.data.configuration, d?.mode ?? 'yaml'), mode: d?.mode ?? 'yaml', fromVersion: saved.version, dirty: false }));
      setName(saved.data.name);
      loadedName.current = saved.data.name;
      setProblems([]);
      setSaveError(null);
      notifications.show({ color: 'green', title: 'Saved', message: `Version ${saved.version} of ${saved.data.name}` });
    },
    onError: (error) => {
      let path: string | null = null;
      if (error instanceof ServiceApiError && error.status === 400 && draft) {
        const at = errorPath(error.description);
        if (at) {
          path = at.join('.') || '(the whole configuration)';
          const place = locatePath(draft.text, at);
          if (place) setProblems([{ ...place, message: error.description }]);
        }
      }
      setSaveError({ error, path });
    },
  });

  const onSave = () => {
    if (!draft) return;
    const parsed = parseConfigText(draft.text, draft.mode);
    if ('problem' in parsed) {
      setProblems([parsed.problem]);
      setSaveError({ error: new Error(parsed.problem.message), path: null });
      return;
    }
    if (typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
      const message = 'The configuration must be an object with "global_vars" and "inventory".';
      setProblems([{ from: 0, to: Math.min(1, draft.text.length), message }]);
      setSaveError({ error: new Error(message), path: null });
      return;
    }
    setSaveError(null);
    save.mutate(parsed.value as PlaybookConfigurationModel['data']['configuration']);
  };

  const run = useMutation({
    mutationFn: () => {
      if (!model) throw new Error('not loaded');
      return client.createExecution(model.id, model.version);
    },
    onSuccess: (execution) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.executions.all });
      void navigate(`/executions/${execution.id}`);
    },
    onError: (error) => notifications.show({ color: 'red', title: 'Could not run', message: errorMessage(error) }),
  });

  const preview = useMutation({
    mutationFn: () => {
      if (!model) throw new Error('not loaded');
      return client.createPreview(model.id, model.version);
    },
    onSuccess: (execution) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.executions.all });
      void navigate(`/executions/${execution.id}`);
    },
    onError: (error) => notifications.show({ color: 'red', title: 'Could not preview', message: errorMessage(error) }),
  });

  const remove = useMutation({
    mutationFn: () => client.deletePlaybookConfiguration(id),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.configurations.all });
      notifications.show({ color: 'green', title: 'Deleted', message: model?.data.name ?? id });
      void navigate('/playbook-configurations');
    },
  });

  const editorLabel = useMemo(() => `Configuration (${draft?.mode === 'json' ? 'JSON' : 'YAML'})`, [draft?.mode]);

  if (query.isPending) return <Skeleton height={320} />;
  if (query.error || !model) return <ErrorNotice error={query.error} onRetry={() => void query.refetch()} />;

  return (
    <Stack gap="md">
      <Group justify="space-between" align="start" wrap="wrap">
        <Stack gap={4}>
          <Anchor component={Link} to="/playbook-configurations" size="sm">
            ← Playbook configurations
          </Anchor>
          <Title order={2}>{model.data.name}</Title>
          <Group gap="xs">
            <Badge variant="light" aria-label="Configuration version">
              v{model.version}
            </Badge>
            {model.time_deleted ? <Badge color="red">deleted</Badge> : null}
            <Text size="sm" c="dimmed">
              {playbook?.name ?? model.data.playbook_id} on{' '}
              {can('view_cluster') ? (
                <Anchor component={Link} to={`/clusters/${model.data.cluster_id}`} size="sm">
                  {cluster?.data.name ?? model.data.cluster_id.slice(0, 8)}
                </Anchor>
              ) : (
                model.data.cluster_id.slice(0, 8)
              )}
              , {model.data.server_ids.length} server(s), updated {formatTime(model.time_updated)}
            </Text>
            {playbook ? (
              <Anchor href={playbookDocsHref(playbook)} target="_blank" rel="noopener" size="sm">
                Playbook reference
              </Anchor>
            ) : null}
          </Group>
          {model.data.hints.length ? (
            <Text size="xs" c="dimmed">
              Hints: {model.data.hints.map((h) => `${h.id}=${JSON.stringify(h.value)}`).join(', ')}
            </Text>
          ) : null}
        </Stack>
        <Group gap="xs">
          {runnable ? (
            <Tooltip label="Save your changes first" disabled={!dirty}>
              <Button color="green" onClick={() => run.mutate()} loading={run.isPending} disabled={dirty}>
                Run
              </Button>
            </Tooltip>
          ) : null}
          {runnable ? (
            <Tooltip label={dirty ? 'Save your changes first' : 'Run in check mode: see what would change, change nothing'}>
              <Button variant="light" onClick={() => preview.mutate()} loading={preview.isPending} disabled={dirty}>
                Preview
              </Button>
            </Tooltip>
          ) : null}
          {can('delete_playbook_configuration') && !model.time_deleted ? (
            <Button color="red" variant="light" onClick={() => setConfirmDelete(true)}>
              Delete configuration
            </Button>
          ) : null}
        </Group>
      </Group>

      <Tabs value={tab} onChange={setTab} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="configuration">Configuration</Tabs.Tab>
          {can('view_playbook_configuration_version') ? <Tabs.Tab value="history">History</Tabs.Tab> : null}
        </Tabs.List>
        <Tabs.Panel value="configuration" pt="md">
          <Stack gap="sm">
            <Group justify="space-between" align="end" wrap="wrap">
              <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} readOnly={!editable} w={360} />
              <Group gap="xs">
                <SegmentedControl
                  aria-label="Editor format"
                  data={[
                    { value: 'yaml', label: 'YAML' },
                    { value: 'json', label: 'JSON' },
                  ]}
                  value={draft?.mode ?? 'yaml'}
                  onChange={switchMode}
                />
                {editable ? (
                  <Button onClick={onSave} loading={save.isPending} disabled={!dirty}>
                    Save as new version
                  </Button>
                ) : null}
              </Group>
            </Group>
            {dirty ? (
              <Text size="xs" c="orange">
                Unsaved changes (editing version {draft?.fromVersion}).
              </Text>
            ) : null}
            <Suspense fallback={<Group h="60vh" justify="center"><Loader aria-label="Loading the editor" /></Group>}>
              {draft ? (
                <CodeEditor
                  value={draft.text}
                  mode={draft.mode}
                  label={editorLabel}
                  readOnly={!editable}
                  problems={problems}
                  onChange={(text) =>
                    setDraft((d) => (d && d.text !== text ? { ...d, text, dirty: true } : d))
                  }
                />
              ) : null}
            </Suspense>
            {saveError ? (
              <Alert color="red" title={saveError.path ? 'The API refused the configuration' : 'Not saved'} role="alert" withCloseButton onClose={() => setSaveError(null)}>
                <Text size="sm">{errorMessage(saveError.error)}</Text>
                {saveError.path ? (
                  <Text size="sm" mt={4}>
                    Field: <Code>{saveError.path}</Code> (marked in the editor)
                  </Text>
                ) : null}
                {saveError.error instanceof ServiceApiError && saveError.error.status === 409 ? (
                  <Button
                    size="xs"
                    variant="light"
                    mt="xs"
                    onClick={() => {
                      setDraft(null);
                      setSaveError(null);
                      void query.refetch();
                    }}
                  >
                    Reload the latest version (drops your changes)
                  </Button>
                ) : null}
              </Alert>
            ) : null}
          </Stack>
        </Tabs.Panel>
        {can('view_playbook_configuration_version') ? (
          <Tabs.Panel value="history" pt="md">
            <ConfigurationHistory id={id} latest={model.version} mode={draft?.mode ?? 'yaml'} />
          </Tabs.Panel>
        ) : null}
      </Tabs>

      <ConfirmDialog
        opened={confirmDelete}
        title="Delete this configuration?"
        message={`${model.data.name} is deleted (its versions stay in the history). Its executions remain.`}
        confirmLabel="Delete"
        onConfirm={() => remove.mutate()}
        onClose={() => setConfirmDelete(false)}
        pending={remove.isPending}
        error={remove.error}
      />
    </Stack>
  );
}
