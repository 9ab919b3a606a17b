import { Alert, Text } from '@mantine/core';
import type { ReactNode } from 'react';

/** Shown in place of a page the user's role does not allow (the API would answer 403). */
export function PermissionNotice({ what }: { what: string }): ReactNode {
  return (
    <Alert color="orange" title="Permission denied" role="alert" variant="light">
      <Text size="sm">You do not have the permission to {what}. Ask an administrator for a role that grants it.</Text>
    </Alert>
  );
}
