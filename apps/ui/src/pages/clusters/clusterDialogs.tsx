import type { Cluster } from '@carapace/models';
import { Button, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { ErrorNotice } from '../../api/errors.ts';
import { queryKeys } from '../../api/queries.ts';
import { useClient } from '../../api/session.tsx';

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** Why a cluster name is refused, or null (the API's pattern: a letter or digit, then letters, digits, `_`, `.`, `-`). */
export function clusterNameProblem(name: string): string | null {
  if (!name) return 'Give a name.';
  if (name.length > 128) return 'At most 128 characters.';
  if (!NAME_PATTERN.test(name)) return 'Letters, digits, "_", "." and "-", starting with a letter or digit.';
  return null;
}

/** Creates a cluster (`opened`), or renames `cluster` when given. */
export function ClusterNameModal({ opened, onClose, cluster, onDone }: { opened: boolean; onClose: () => void; cluster?: Cluster; onDone?: (cluster: Cluster) => void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [name, setName] = useState(cluster?.data.name ?? '');
  const [touched, setTouched] = useState(false);
  const mutation = useMutation({
    mutationFn: (value: string) => (cluster ? client.updateCluster({ ...cluster, data: { ...cluster.data, name: value } }) : client.createCluster(value)),
    onSuccess: async (result) => {
      notifications.show({ color: 'green', message: cluster ? `Cluster renamed to ${result.data.name}.` : `Cluster ${result.data.name} created.` });
      await queryClient.invalidateQueries({ queryKey: queryKeys.clusters.all });
      onDone?.(result);
      close();
    },
  });
  const close = () => {
    setName(cluster?.data.name ?? '');
    setTouched(false);
    mutation.reset();
    onClose();
  };
  const problem = clusterNameProblem(name.trim());
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setTouched(true);
    if (!problem) mutation.mutate(name.trim());
  };
  const title = cluster ? `Rename cluster ${cluster.data.name}` : 'Create a cluster';
  return (
    <Modal opened={opened} onClose={close} title={title}>
      <form onSubmit={submit} aria-label={title} noValidate>
        <Stack>
          <ErrorNotice error={mutation.error} />
          <TextInput
            label="Cluster name"
            required
            data-autofocus
            value={name}
            onChange={(event) => setName(event.currentTarget.value)}
            error={touched && problem ? problem : undefined}
          />
          <Group justify="flex-end">
            <Button variant="default" onClick={close}>
              Cancel
            </Button>
            <Button type="submit" loading={mutation.isPending}>
              {cluster ? 'Rename' : 'Create'}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** Asks before deleting a cluster (the API refuses one that still has servers). */
export function DeleteClusterModal({ cluster, onClose, onDone }: { cluster: Cluster | null; onClose: () => void; onDone?: () => void }) {
  const client = useClient();
  const queryClient = useQueryClient();
  const mutation = useMutation({
    mutationFn: (id: string) => client.deleteCluster(id),
    onSuccess: async (result) => {
      notifications.show({ color: 'green', message: `Cluster ${result.data.name} deleted.` });
      await queryClient.invalidateQueries({ queryKey: queryKeys.clusters.all });
      onDone?.();
      close();
    },
  });
  const close = () => {
    mutation.reset();
    onClose();
  };
  return (
    <Modal opened={cluster !== null} onClose={close} title={`Delete cluster ${cluster?.data.name ?? ''}`}>
      <Stack>
        <Text size="sm">
          Delete the cluster <b>{cluster?.data.name}</b>? A cluster that still has servers cannot be deleted: purge it or remove its servers first.
        </Text>
        <ErrorNotice error={mutation.error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button color="red" loading={mutation.isPending} onClick={() => cluster && mutation.mutate(cluster.id)}>
            Delete
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** The servers of a cluster's configuration, each once, whatever its roles. */
export function clusterServerIds(cluster: Cluster): string[] {
  return [...new Set(Object.values(cluster.data.configuration).flatMap((members) => members.map((m) => m.server_id)))];
}
