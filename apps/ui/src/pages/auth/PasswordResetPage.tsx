import { Alert, Anchor, Button, Center, Loader, PasswordInput, Stack } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ErrorNotice, isApiStatus } from '../../api/errors.ts';
import { usePasswordResetQuery } from '../../api/queries.ts';
import { useClient } from '../../api/session.tsx';
import { AuthLayout, TOGGLE } from './AuthLayout.tsx';

const MIN_LENGTH = 8;

/** The page of the reset e-mail's link: checks the token, sets a new password, then goes to sign in. */
export default function PasswordResetPage() {
  const { token = '' } = useParams();
  const client = useClient();
  const navigate = useNavigate();
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [touched, setTouched] = useState(false);
  const peek = usePasswordResetQuery(token);
  const reset = useMutation({
    mutationFn: () => client.resetPassword(token, password),
    onSuccess: () => {
      notifications.show({ color: 'green', title: 'Password changed', message: 'Sign in with your new password.' });
      void navigate('/sign-in', { replace: true });
    },
  });

  const tooShort = password.length > 0 && password.length < MIN_LENGTH;
  const mismatch = confirm.length > 0 && confirm !== password;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setTouched(true);
    if (password.length < MIN_LENGTH || password !== confirm) return;
    reset.mutate();
  };

  let body;
  if (peek.isPending) {
    body = (
      <Center py="md">
        <Loader aria-label="Checking the reset link" />
      </Center>
    );
  } else if (peek.error) {
    body = (
      <Stack gap="md">
        {isApiStatus(peek.error, 404) ? (
          <Alert color="red" role="alert" title="This link does not work">
            The reset link is unknown, used already or expired. Ask for a new one.
          </Alert>
        ) : (
          <ErrorNotice error={peek.error} />
        )}
        <Anchor component={Link} to="/password_reset" size="sm">
          Ask for a new reset link
        </Anchor>
      </Stack>
    );
  } else {
    body = (
      <form onSubmit={submit} aria-label="Set a new password" noValidate>
        <Stack gap="md">
          <ErrorNotice error={reset.error} />
          <PasswordInput
            visibilityToggleButtonProps={TOGGLE}
            label="New password"
            name="new-password"
            autoComplete="new-password"
            required
            autoFocus
            description={`At least ${MIN_LENGTH} characters.`}
            value={password}
            error={(touched || tooShort) && password.length < MIN_LENGTH ? `Use at least ${MIN_LENGTH} characters.` : undefined}
            onChange={(event) => setPassword(event.currentTarget.value)}
          />
          <PasswordInput
            visibilityToggleButtonProps={TOGGLE}
            label="Repeat the password"
            name="confirm-password"
            autoComplete="new-password"
            required
            value={confirm}
            error={(touched || mismatch) && confirm !== password ? 'The two passwords differ.' : undefined}
            onChange={(event) => setConfirm(event.currentTarget.value)}
          />
          <Button type="submit" loading={reset.isPending} fullWidth>
            Set the new password
          </Button>
          <Anchor component={Link} to="/sign-in" size="sm" ta="center">
            Back to sign in
          </Anchor>
        </Stack>
      </form>
    );
  }
  return <AuthLayout title="Set a new password">{body}</AuthLayout>;
}
