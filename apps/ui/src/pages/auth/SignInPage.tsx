import { Alert, Anchor, Button, Group, PasswordInput, Stack, TextInput } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, Navigate, useNavigate, useSearchParams } from 'react-router';
import { isApiStatus, errorMessage } from '../../api/errors.ts';
import { safeNext, useSignIn } from '../../api/session.tsx';
import { AuthLayout, TOGGLE } from './AuthLayout.tsx';

/** Sign in with a login and password; then back to `?next=` (where the session expired) or the dashboard. */
export default function SignInPage() {
  const [params] = useSearchParams();
  const next = safeNext(params.get('next'));
  const navigate = useNavigate();
  const { signedIn, signIn } = useSignIn();
  const [login, setLogin] = useState('');
  const [password, setPassword] = useState('');
  const [touched, setTouched] = useState(false);
  const mutation = useMutation({
    mutationFn: () => signIn(login.trim(), password),
    onSuccess: () => void navigate(next, { replace: true }),
  });

  if (signedIn && !mutation.isPending && !mutation.isSuccess) return <Navigate to={next} replace />;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setTouched(true);
    if (!login.trim() || !password) return;
    mutation.mutate();
  };
  const failure = mutation.error
    ? isApiStatus(mutation.error, 401)
      ? 'Wrong login or password.'
      : errorMessage(mutation.error)
    : null;

  return (
    <AuthLayout title="Sign in">
      <form onSubmit={submit} aria-label="Sign in" noValidate>
        <Stack gap="md">
          {failure && (
            <Alert color="red" role="alert" variant="light">
              {failure}
            </Alert>
          )}
          <TextInput
            label="Login"
            name="username"
            autoComplete="username"
            required
            autoFocus
            value={login}
            error={touched && !login.trim() ? 'Give your login.' : undefined}
            onChange={(event) => setLogin(event.currentTarget.value)}
          />
          <PasswordInput
            visibilityToggleButtonProps={TOGGLE}
            label="Password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            error={touched && !password ? 'Give your password.' : undefined}
            onChange={(event) => setPassword(event.currentTarget.value)}
          />
          <Button type="submit" loading={mutation.isPending} fullWidth>
            Sign in
          </Button>
          <Group justify="center">
            <Anchor component={Link} to="/password_reset" size="sm">
              Forgot your password?
            </Anchor>
          </Group>
        </Stack>
      </form>
    </AuthLayout>
  );
}
