import type { Role, User } from '@carapace/models';
import { render } from '@testing-library/react';
import { createMemoryRouter, RouterProvider } from 'react-router';
import { AppProviders, makeQueryClient, routes } from '../App.tsx';
import { TOKEN_KEY } from '../api/session.tsx';

/** A user model for tests. */
export function makeUser(login = 'alice'): User {
  return { id: 'u-1', model: 'user', version: 1, time_updated: 1, time_deleted: 0, initiator_id: null, data: { login, email: `${login}@example.com`, full_name: '', role_id: 'r-1' } };
}

/** A role model holding these api (and playbook) permissions. */
export function makeRole(api: string[], playbook: string[] = []): Role {
  return {
    id: 'r-1',
    model: 'role',
    version: 1,
    time_updated: 1,
    time_deleted: 0,
    initiator_id: null,
    data: { name: 'test', permissions: [{ name: 'api', permissions: api }, { name: 'playbook', permissions: playbook }] },
  };
}

/** Stores a session as a sign-in would. */
export function storeSession(token = 'tok-1', login = 'alice', expiresAt = Math.floor(Date.now() / 1000) + 3600): void {
  window.localStorage.setItem(TOKEN_KEY, JSON.stringify({ token, expiresAt, login }));
}

type Handler = (url: URL, init: RequestInit) => Response | undefined;

/** A JSON answer as the API gives it. */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

/** The API's error answer. */
export function apiError(status: number, error: string, description: string): Response {
  return json({ code: status, error, description, message: description }, status);
}

/** An empty list page. */
export function page<T>(items: T[] = [], total = items.length): Response {
  return json({ items, page: 1, per_page: 25, total });
}

/** Replaces `fetch` with handlers tried in order (404 when none answers); returns the calls made. */
export function mockFetch(...handlers: Handler[]): { calls: { url: URL; init: RequestInit }[] } {
  const calls: { url: URL; init: RequestInit }[] = [];
  const fake = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    calls.push({ url, init });
    for (const handler of handlers) {
      const response = handler(url, init);
      if (response) return Promise.resolve(response);
    }
    return Promise.resolve(apiError(404, 'NotFound', `no mock for ${init.method ?? 'GET'} ${url.pathname}`));
  };
  globalThis.fetch = fake;
  return { calls };
}

/** Answers the session's own calls (`/v1/user/self/`, `/v1/role/self/`) for this role. */
export function selfHandler(role: Role, user = makeUser()): Handler {
  return (url) => {
    if (url.pathname.startsWith('/v1/user/self')) return json(user);
    if (url.pathname.startsWith('/v1/role/self')) return json(role);
    return undefined;
  };
}

/** Renders the whole application at `path` in a memory router. */
export function renderApp(path: string) {
  const router = createMemoryRouter(routes, { initialEntries: [path] });
  const queryClient = makeQueryClient();
  const view = render(
    <AppProviders queryClient={queryClient}>
      <RouterProvider router={router} />
    </AppProviders>,
  );
  return { ...view, router, queryClient };
}
