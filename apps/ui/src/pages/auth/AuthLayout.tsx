import { Center, Paper, Stack, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';

/** The frame of the pages used before signing in: a centred card under the product name. */
export function AuthLayout({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Center mih="100vh" p="md" component="main">
      <Stack w="100%" maw={400} gap="lg">
        <Stack gap={2} align="center">
          <Text fw={800} size="xl" c="blue">
            Carapace
          </Text>
          <Text size="sm" c="dimmed">
            Ceph deployment control plane
          </Text>
        </Stack>
        <Paper withBorder shadow="sm" p="lg" radius="md">
          <Title order={1} size="h3" mb="md">
            {title}
          </Title>
          {children}
        </Paper>
      </Stack>
    </Center>
  );
}


/**
 * Props of the password fields' show/hide button: its name does not contain "password", so
 * that a field is found by its label alone (`getByLabel('Password')`).
 */
export const TOGGLE = { 'aria-label': 'Show or hide the typed characters' };
