import { Center, Loader, MantineProvider, createTheme } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { ServiceApiError } from '@carapace/client';
import { lazy, Suspense, useState, type ReactNode } from 'react';
import { createBrowserRouter, Outlet, RouterProvider, type RouteObject } from 'react-router';
import { RequireAuth, SessionProvider } from './api/session.tsx';
import { Shell } from './layout/Shell.tsx';
import { NotFoundPage, RouteErrorPage } from './pages/NotFoundPage.tsx';

// Pages load on demand: the first load holds the shell, the session and the sign-in page.
const SignInPage = lazy(() => import('./pages/auth/SignInPage.tsx'));
const PasswordResetRequestPage = lazy(() => import('./pages/auth/PasswordResetRequestPage.tsx'));
const PasswordResetPage = lazy(() => import('./pages/auth/PasswordResetPage.tsx'));
const DashboardPage = lazy(() => import('./pages/dashboard/DashboardPage.tsx'));
const ServersPage = lazy(() => import('./pages/servers/ServersPage.tsx'));
const ServerPage = lazy(() => import('./pages/servers/ServerPage.tsx'));
const ClustersPage = lazy(() => import('./pages/clusters/ClustersPage.tsx'));
const ClusterPage = lazy(() => import('./pages/clusters/ClusterPage.tsx'));
const ConfigurationRoutes = lazy(() => import('./pages/configurations/ConfigurationRoutes.tsx'));
const ExecutionRoutes = lazy(() => import('./pages/executions/ExecutionRoutes.tsx'));
const AdminRoutes = lazy(() => import('./pages/admin/AdminRoutes.tsx'));

export const theme = createTheme({
  primaryColor: 'blue',
  defaultRadius: 'sm',
  fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif',
  fontFamilyMonospace: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace',
});

/** Makes the query client: no retry of refused calls (4xx), a short freshness. */
export function makeQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 10_000,
        retry: (count, err) => !(err instanceof ServiceApiError && err.status < 500) && count < 2,
      },
      mutations: { retry: false },
    },
  });
}

function Root() {
  return (
    <SessionProvider>
      <Suspense
        fallback={
          <Center h="100vh">
            <Loader aria-label="Loading" />
          </Center>
        }
      >
        <Outlet />
      </Suspense>
    </SessionProvider>
  );
}

/** The routes of the application (exported for tests, which mount them in a memory router). */
export const routes: RouteObject[] = [
  {
    element: <Root />,
    errorElement: <RouteErrorPage />,
    children: [
      { path: 'sign-in', element: <SignInPage /> },
      { path: 'password_reset', element: <PasswordResetRequestPage /> },
      { path: 'password_reset/:token', element: <PasswordResetPage /> },
      {
        element: (
          <RequireAuth>
            <Shell />
          </RequireAuth>
        ),
        children: [
          { index: true, element: <DashboardPage /> },
          { path: 'servers', element: <ServersPage /> },
          { path: 'servers/:id', element: <ServerPage /> },
          { path: 'clusters', element: <ClustersPage /> },
          { path: 'clusters/:id', element: <ClusterPage /> },
          { path: 'playbook-configurations/*', element: <ConfigurationRoutes /> },
          { path: 'executions/*', element: <ExecutionRoutes /> },
          { path: 'admin/*', element: <AdminRoutes /> },
          { path: '*', element: <NotFoundPage /> },
        ],
      },
    ],
  },
];

/** Mantine (colours follow the system), notifications and the query client around `children`. */
export function AppProviders({ queryClient, children }: { queryClient: QueryClient; children: ReactNode }) {
  return (
    <MantineProvider theme={theme} defaultColorScheme="auto">
      <Notifications position="top-right" />
      <QueryClientProvider client={queryClient}>{children}</QueryClientProvider>
    </MantineProvider>
  );
}

/** The application. */
export function App() {
  const [queryClient] = useState(makeQueryClient);
  const [router] = useState(() => createBrowserRouter(routes));
  return (
    <AppProviders queryClient={queryClient}>
      <RouterProvider router={router} />
    </AppProviders>
  );
}
