import { Button, Group, Modal, Stack, Text } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient, type QueryKey } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { ErrorNotice } from '../api/errors.ts';

/** A confirmation dialog for a destructive action. */
export function ConfirmDialog({
  opened,
  title,
  message,
  confirmLabel,
  onConfirm,
  onClose,
  pending,
  error,
}: {
  opened: boolean;
  title: string;
  message: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  onClose: () => void;
  pending: boolean;
  error: unknown;
}): ReactNode {
  return (
    <Modal opened={opened} onClose={onClose} title={title}>
      <Stack>
        <Text size="sm">{message}</Text>
        <ErrorNotice error={error} />
        <Group justify="end">
          <Button variant="default" onClick={onClose}>
            Keep it
          </Button>
          <Button color="red" loading={pending} onClick={onConfirm}>
            {confirmLabel}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/**
 * A destructive action on one item of a list, asked for with `ask(item)` and confirmed in a
 * {@link ConfirmDialog} (spread `dialog` into it): once done, the list (`queryKey`) is refetched,
 * a notification titled `doneTitle` names the item and the dialog closes; closing it forgets
 * the error.
 */
export function useConfirmedAction<T>({
  action,
  queryKey,
  doneTitle,
  name,
}: {
  action: (item: T) => Promise<unknown>;
  queryKey: QueryKey;
  doneTitle: string;
  name: (item: T) => string;
}) {
  const queryClient = useQueryClient();
  const [target, setTarget] = useState<T | null>(null);
  const mutation = useMutation({
    mutationFn: action,
    onSuccess: (_, item) => {
      void queryClient.invalidateQueries({ queryKey });
      notifications.show({ color: 'green', title: doneTitle, message: name(item) });
      setTarget(null);
    },
  });
  return {
    target,
    ask: setTarget,
    dialog: {
      opened: target !== null,
      onConfirm: () => {
        if (target !== null) mutation.mutate(target);
      },
      onClose: () => {
        setTarget(null);
        mutation.reset();
      },
      pending: mutation.isPending,
      error: mutation.error,
    },
  };
}
