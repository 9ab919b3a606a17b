import { Alert, Anchor, Button, Group, Stack, Text, TextInput } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { ErrorNotice } from '../../api/errors.ts';
import { useClient } from '../../api/session.tsx';
import { AuthLayout } from './AuthLayout.tsx';

/** Asks for a password reset by login: the user gets an e-mail with a link to `/password_reset/{token}/`. */
export default function PasswordResetRequestPage() {
  const client = useClient();
  const [login, setLogin] = useState('');
  const mutation = useMutation({ mutationFn: (value: string) => client.requestPasswordReset(value) });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (login.trim()) mutation.mutate(login.trim());
  };

  return (
    <AuthLayout title="Reset your password">
      {mutation.isSuccess ? (
        <Stack gap="md">
          <Alert color="green" role="status" title="Check your e-mail">
            If an account with this login exists, an e-mail with a link to set a new password is on its way.
          </Alert>
          <Anchor component={Link} to="/sign-in" size="sm">
            Back to sign in
          </Anchor>
        </Stack>
      ) : (
        <form onSubmit={submit} aria-label="Request a password reset" noValidate>
          <Stack gap="md">
            <Text size="sm" c="dimmed">
              Give your login: we e-mail you a link to set a new password.
            </Text>
            <ErrorNotice error={mutation.error} />
            <TextInput
              label="Login"
              name="username"
              autoComplete="username"
              required
              autoFocus
              value={login}
              onChange={(event) => setLogin(event.currentTarget.value)}
            />
            <Button type="submit" loading={mutation.isPending} disabled={!login.trim()} fullWidth>
              Send reset link
            </Button>
            <Group justify="center">
              <Anchor component={Link} to="/sign-in" size="sm">
                Back to sign in
              </Anchor>
            </Group>
          </Stack>
        </form>
      )}
    </AuthLayout>
  );
}
