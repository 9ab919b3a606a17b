import { Alert, Button, Center, Stack, Text, Title } from '@mantine/core';
import { isRouteErrorResponse, Link, useLocation, useRouteError } from 'react-router';

/** "Not found", inside the shell, for unknown paths. */
export function NotFoundPage() {
  const { pathname } = useLocation();
  return (
    <Stack gap="md" maw={560}>
      <Title order={2}>Page not found</Title>
      <Text>
        There is no page at <code>{pathname}</code>.
      </Text>
      <Button component={Link} to="/" variant="light" w="fit-content">
        Go to the dashboard
      </Button>
    </Stack>
  );
}

/** The last resort of the router: a page failed to render or to load. */
export function RouteErrorPage() {
  const error = useRouteError();
  const message = isRouteErrorResponse(error) ? `${error.status} ${error.statusText}` : error instanceof Error ? error.message : String(error);
  return (
    <Center h="100vh" p="md">
      <Stack maw={560}>
        <Alert color="red" title="This page failed" role="alert">
          {message}
        </Alert>
        <Button component="a" href="/" variant="light" w="fit-content">
          Reload the application
        </Button>
      </Stack>
    </Center>
  );
}
