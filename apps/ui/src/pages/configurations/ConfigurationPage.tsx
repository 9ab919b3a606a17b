import { ServiceApiError } from '@carapace/client';
import type { PlaybookConfigurationModel } from '@carapace/models';
import { Alert, Anchor, Badge, Button, Code, Group, Loader, SegmentedControl, Skeleton, Stack, Tabs, Text, TextInput, Title, Tooltip } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useMemo, useState } from 'react';
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

/** The user's change of the text, and the version it was made from. */
interface Edit {
  text: string;
  fromVersion: number;
}

/** One playbook configuration: loads it, then shows it (a configuration of its own each: a new id starts afresh). */
export function ConfigurationPage() {
  const { id = '' } = useParams();
  const query = useConfiguration(id);
  if (query.isPending) return <Skeleton height={320} />;
  if (query.error || !query.data) return <ErrorNotice error={query.error} onRetry={() => void query.refetch()} />;
  return <ConfigurationView key={query.data.id} model={query.data} refetch={() => void query.refetch()} />;
}

/**
 * A configuration and its editor. What the editor and the name field show is derived from
 * the model as the server has it, until the user changes them: a new version that arrives
 * (another user's save, a refetch) shows at once unless the text was edited, and a save
 * drops the edits so that the saved version shows.
 */
function ConfigurationView({ model, refetch }: { model: PlaybookConfigurationModel; refetch: () => void }) {
  const id = model.id;
  const client = useClient();
  const { can, canRun } = useSession();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const playbooks = usePlaybooks();
  const clusters = useAllClusters();

  const [mode, setMode] = useState<ConfigMode>('yaml');
  const [edit, setEdit] = useState<Edit | null>(null);
  const [nameEdit, setNameEdit] = useState<string | null>(null);
  const [problems, setProblems] = useState<EditorProblem[]>([]);
  const [saveError, setSaveError] = useState<{ error: unknown; path: string | null } | null>(null);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [tab, setTab] = useState<string | null>('configuration');

  const savedText = useMemo(() => configToText(model.data.configuration, mode), [model.data.configuration, mode]);
  const text = edit?.text ?? savedText;
  const name = nameEdit ?? model.data.name;
  const editable = can('edit_playbook_configuration') && model.time_deleted === 0;
  const runnable = model.time_deleted === 0 && can('create_execution') && canRun(model.data.playbook_id);
  const dirty = edit !== null || name !== model.data.name;
  const playbook = playbooks.data?.items.find((p) => p.id === model.data.playbook_id);
  const cluster = clusters.data?.items.find((c) => c.id === model.data.cluster_id);

  const switchMode = (next: ConfigMode) => {
    if (next === mode) return;
    const parsed = parseConfigText(text, mode);
    if ('problem' in parsed) {
      setProblems([{ ...parsed.problem }]);
      notifications.show({ color: 'red', title: 'Cannot switch format', message: 'Fix the error in the text first.' });
      return;
    }
    setProblems([]);
    setMode(next);
    if (edit) setEdit({ ...edit, text: configToText(parsed.value, next) });
  };

  /** The editor's text changed: an edit, unless it is what is shown already (the editor following its value). */
  const onText = (changed: string) => {
    if (changed !== text) setEdit({ text: changed, fromVersion: edit?.fromVersion ?? model.version });
  };

  const save = useMutation({
    mutationFn: (configuration: PlaybookConfigurationModel['data']['configuration']) =>
      client.updatePlaybookConfiguration({ ...model, data: { ...model.data, name: name.trim(), configuration } }),
    onSuccess: (saved) => {
      queryClient.setQueryData(queryKeys.configurations.detail(id), saved);
      void queryClient.invalidateQueries({ queryKey: queryKeys.configurations.all });
      // What was saved shows: the model is the saved version now.
      setEdit(null);
      setNameEdit(null);
      setProblems([]);
      setSaveError(null);
      notifications.show({ color: 'green', title: 'Saved', message: `Version ${saved.version} of ${saved.data.name}` });
    },
    onError: (error) => {
      let path: string | null = null;
      if (error instanceof ServiceApiError && error.status === 400) {
        const at = errorPath(error.description);
        if (at) {
          path = at.join('.') || '(the whole configuration)';
          const place = locatePath(text, at);
          if (place) setProblems([{ ...place, message: error.description }]);
        }
      }
      setSaveError({ error, path });
    },
  });

  const onSave = () => {
    const parsed = parseConfigText(text, mode);
    if ('problem' in parsed) {
      setProblems([parsed.problem]);
      setSaveError({ error: new Error(parsed.problem.message), path: null });
      return;
    }
    if (typeof parsed.value !== 'object' || parsed.value === null || Array.isArray(parsed.value)) {
      const message = 'The configuration must be an object with "global_vars" and "inventory".';
      setProblems([{ from: 0, to: Math.min(1, text.length), message }]);
      setSaveError({ error: new Error(message), path: null });
      return;
    }
    setSaveError(null);
    save.mutate(parsed.value as PlaybookConfigurationModel['data']['configuration']);
  };

  const run = useMutation({
    mutationFn: () => client.createExecution(model.id, model.version),
    onSuccess: (execution) => {
      void queryClient.invalidateQueries({ queryKey: queryKeys.executions.all });
      void navigate(`/executions/${execution.id}`);
    },
    onError: (error) => notifications.show({ color: 'red', title: 'Could not run', message: errorMessage(error) }),
  });

  const preview = useMutation({
    mutationFn: () => client.createPreview(model.id, model.version),
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
      notifications.show({ color: 'green', title: 'Deleted', message: model.data.name });
      void navigate('/playbook-configurations');
    },
  });

  const editorLabel = `Configuration (${mode === 'json' ? 'JSON' : 'YAML'})`;

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
              <TextInput label="Name" value={name} onChange={(e) => setNameEdit(e.currentTarget.value)} readOnly={!editable} w={360} />
              <Group gap="xs">
                <SegmentedControl
                  aria-label="Editor format"
                  data={[
                    { value: 'yaml', label: 'YAML' },
                    { value: 'json', label: 'JSON' },
                  ]}
                  value={mode}
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
                Unsaved changes (editing version {edit?.fromVersion ?? model.version}).
              </Text>
            ) : null}
            <Suspense fallback={<Group h="60vh" justify="center"><Loader aria-label="Loading the editor" /></Group>}>
              <CodeEditor value={text} mode={mode} label={editorLabel} readOnly={!editable} problems={problems} onChange={onText} />
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
                      setEdit(null);
                      setNameEdit(null);
                      setSaveError(null);
                      refetch();
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
            <ConfigurationHistory id={id} latest={model.version} mode={mode} />
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
