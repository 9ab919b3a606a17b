import { ActionIcon, Button, Group, Modal, Stack, Title, Tooltip, type ModalProps } from '@mantine/core';
import { useState, type FormEvent, type ReactNode } from 'react';
import { ErrorNotice } from '../api/errors.ts';

/** A list page's title (an `h2`) with its action (e.g. a "New …" button) on the right. */
export function ListTitle({ title, action }: { title: string; action?: ReactNode }) {
  return (
    <Group justify="space-between">
      <Title order={2}>{title}</Title>
      {action}
    </Group>
  );
}

/** An icon button of a table row, with a tooltip. */
export function RowAction({
  tooltip,
  label,
  icon,
  danger = false,
  disabled,
  onClick,
}: {
  tooltip: string;
  label: string;
  icon: ReactNode;
  danger?: boolean;
  disabled?: boolean;
  onClick: () => void;
}) {
  return (
    <Tooltip label={tooltip}>
      <ActionIcon variant="subtle" color={danger ? 'red' : undefined} aria-label={label} disabled={disabled} onClick={onClick}>
        {icon}
      </ActionIcon>
    </Tooltip>
  );
}

/**
 * A dialog that creates an item (`open(null)`) or edits one (`open(item)`). Give its form
 * `key={dialog.key}`: each opening mounts the form afresh, so that it starts from the item as
 * it is then (in useState's initializer), not from what the last opening left.
 */
export function useEditDialog<T>() {
  const [state, setState] = useState<{ item: T | null; opened: boolean; key: number }>({ item: null, opened: false, key: 0 });
  return {
    item: state.item,
    opened: state.opened,
    key: state.key,
    open: (item: T | null) => setState((s) => ({ item, opened: true, key: s.key + 1 })),
    close: () => setState((s) => ({ ...s, opened: false })),
  };
}

/** A dialog holding a {@link ModalForm}. */
export function FormModal({ opened, onClose, title, size, children }: { opened: boolean; onClose: () => void; title: string; size?: ModalProps['size']; children: ReactNode }) {
  return (
    <Modal opened={opened} onClose={onClose} title={title} size={size}>
      {children}
    </Modal>
  );
}

/**
 * The form of a {@link FormModal} (named `formLabel`): its fields, the error, then "Close" and
 * the submit button. Keep its state in the component that renders it, keyed by
 * `useEditDialog`'s `key`: each opening starts from the item as it is then.
 */
export function ModalForm({
  onClose,
  formLabel,
  onSubmit,
  error,
  pending,
  submitLabel,
  children,
}: {
  onClose: () => void;
  formLabel: string;
  onSubmit: () => void;
  error: unknown;
  pending: boolean;
  submitLabel: string;
  children: ReactNode;
}) {
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSubmit();
  };
  return (
    <form onSubmit={submit} aria-label={formLabel}>
      <Stack>
        {children}
        <ErrorNotice error={error} />
        <Group justify="end">
          <Button variant="default" onClick={onClose}>
            Close
          </Button>
          <Button type="submit" loading={pending}>
            {submitLabel}
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
