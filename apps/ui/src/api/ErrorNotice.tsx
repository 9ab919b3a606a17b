import { Alert, Button, Group, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { errorMessage, errorTitle, isApiStatus } from './messages.ts';

/** Props of {@link ErrorNotice}. */
export interface ErrorNoticeProps {
  /** The error thrown by a call (nothing is shown when null or undefined). */
  error: unknown;
  /** A title instead of the default one ("Permission denied", "Not found", ...). */
  title?: string;
  /** Shows a Retry button calling this. */
  onRetry?: () => void;
  children?: ReactNode;
}

/** An alert (role "alert") showing a failed call's message, with an optional Retry button. */
export function ErrorNotice({ error, title, onRetry, children }: ErrorNoticeProps): ReactNode {
  if (error === null || error === undefined) return null;
  return (
    <Alert color={isApiStatus(error, 403) ? 'orange' : 'red'} title={title ?? errorTitle(error)} role="alert" variant="light">
      <Text size="sm">{errorMessage(error)}</Text>
      {children}
      {onRetry && (
        <Group mt="sm">
          <Button size="xs" variant="light" onClick={onRetry}>
            Retry
          </Button>
        </Group>
      )}
    </Alert>
  );
}
