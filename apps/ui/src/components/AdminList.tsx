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

/** A dialog that creates an item (`open(null)`) or edits one (`open(item)`). */
export function useEditDialog<T>() {
  const [item, setItem] = useState<T | null>(null);
  const [opened, setOpened] = useState(false);
  return {
    item,
    opened,
    open: (next: T | null) => {
      setItem(next);
      setOpened(true);
    },
    close: () => setOpened(false),
  };
}

/** Runs `onOpen` (e.g. fills a form) each time `opened` turns true, during the render. */
export function useOnOpen(opened: boolean, onOpen: () => void): void {
  const [lastOpened, setLastOpened] = useState(false);
  if (opened !== lastOpened) {
    setLastOpened(opened);
    if (opened) onOpen();
  }
}

/** A dialog holding a form (named `formLabel`): its fields, the error, then "Close" and the submit button. */
export function FormModal({
  opened,
  onClose,
  title,
  formLabel,
  size,
  onSubmit,
  error,
  pending,
  submitLabel,
  children,
}: {
  opened: boolean;
  onClose: () => void;
  title: string;
  formLabel: string;
  size?: ModalProps['size'];
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
    <Modal opened={opened} onClose={onClose} title={title} size={size}>
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
    </Modal>
  );
}
