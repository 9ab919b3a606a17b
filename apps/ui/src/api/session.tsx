import { Client, type FetchFunction } from '@carapace/client';
import type { Role, User } from '@carapace/models';
import { Center, Loader, Stack } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { Navigate, useLocation, useNavigate } from 'react-router';
import { ErrorNotice } from './errors.ts';
import { useSessionSelfQuery } from './queries.ts';
import { SessionContext, SessionStateContext, useSessionState, type Session, type SessionState, type StoredSession } from './sessionContext.ts';

export { useClient, useSession, type Session, type StoredSession } from './sessionContext.ts';

/** The `localStorage` key of the stored session. */
export const TOKEN_KEY = 'carapace.token';

/** Reads the stored session, or null when there is none, it is malformed, or it has expired. */
export function readStoredSession(now = Date.now()): StoredSession | null {
  let raw: string | null = null;
  try {
    raw = window.localStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
  if (!raw) return null;
  try {
    const value = JSON.parse(raw) as Partial<StoredSession>;
    if (typeof value.token !== 'string' || typeof value.expiresAt !== 'number' || typeof value.login !== 'string') return null;
    if (value.expiresAt * 1000 <= now) {
      window.localStorage.removeItem(TOKEN_KEY);
      return null;
    }
    return { token: value.token, expiresAt: value.expiresAt, login: value.login };
  } catch {
    return null;
  }
}

function writeStoredSession(session: StoredSession | null): void {
  try {
    if (session) window.localStorage.setItem(TOKEN_KEY, JSON.stringify(session));
    else window.localStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage refused (private mode): the session lasts as long as the page.
  }
}

/**
 * Where to go after signing in: `next` when it is a path of this application, else `/`.
 * Refuses other origins (`//host`, `https://...`) so that the parameter cannot send the user away.
 */
export function safeNext(next: string | null | undefined): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/';
  if (next.startsWith('/sign-in')) return '/';
  return next;
}

/** The sign-in address that comes back to `path` afterwards. */
export function signInPath(path: string): string {
  const next = safeNext(path);
  return next === '/' ? '/sign-in' : `/sign-in?next=${encodeURIComponent(next)}`;
}

/** A role with no permission, for users who have none (`GET /v1/role/self/` answers 404). */
function noRole(user: User): Role {
  return { id: '', model: 'role', version: 1, time_updated: user.time_updated, time_deleted: 0, initiator_id: null, data: { name: '(no role)', permissions: [] } };
}

function isAuthPath(url: string, init: RequestInit | undefined): boolean {
  // A refused login (wrong password) or a refused logout is no expired session.
  return /\/v1\/auth\/?(\?|$)/.test(url) && (init?.method === 'POST' || init?.method === 'DELETE');
}

/**
 * Keeps the session: the token in `localStorage` (key `carapace.token`) with its expiry, the
 * one `Client` of the application, sign in and out. When any call answers 401 (the token
 * expired or was revoked), the session is forgotten and the user goes to
 * `/sign-in?next=<where they were>`. Must be inside the router and a `QueryClientProvider`.
 */
export function SessionProvider({ children }: { children: ReactNode }) {
  const navigate = useNavigate();
  const location = useLocation();
  const locationRef = useRef(location);
  locationRef.current = location;
  const queryClient = useQueryClient();
  const [stored, setStored] = useState<StoredSession | null>(() => readStoredSession());
  const [signedOutByChoice, setSignedOutByChoice] = useState(false);
  const storedRef = useRef(stored);
  storedRef.current = stored;

  const forget = useCallback(() => {
    writeStoredSession(null);
    setStored(null);
    queryClient.clear();
  }, [queryClient]);

  /** The session ended without the user asking (401, expiry, another tab signed out). */
  const expire = useCallback(
    (reason: string) => {
      if (storedRef.current === null) return;
      storedRef.current = null;
      forget();
      const { pathname, search, hash } = locationRef.current;
      notifications.show({ id: 'session-expired', color: 'yellow', title: 'Signed out', message: reason });
      if (!pathname.startsWith('/sign-in')) void navigate(signInPath(`${pathname}${search}${hash}`), { replace: true });
    },
    [forget, navigate],
  );
  const expireRef = useRef(expire);
  expireRef.current = expire;

  const fetchFn = useCallback<FetchFunction>(async (url, init) => {
    const response = await globalThis.fetch(url, init);
    const sent = new Headers(init?.headers).get('authorization');
    if (response.status === 401 && sent && !isAuthPath(url, init) && sent === storedRef.current?.token) {
      expireRef.current('Your session has expired or was revoked: sign in again.');
    } else if (response.ok && sent && sent === storedRef.current?.token) {
      const header = Number(response.headers.get('x-token-expires'));
      const current = storedRef.current;
      if (current && Number.isFinite(header) && header > current.expiresAt) {
        const next = { ...current, expiresAt: header };
        storedRef.current = next;
        writeStoredSession(next);
      }
    }
    return response;
  }, []);

  const client = useMemo(
    () => new Client({ url: window.location.origin, login: stored?.login ?? '', token: stored?.token ?? null, fetch: fetchFn }),
    [stored?.login, stored?.token, fetchFn],
  );

  // Expire on time, even when the page makes no call.
  useEffect(() => {
    if (!stored) return;
    const delay = stored.expiresAt * 1000 - Date.now();
    const timer = window.setTimeout(
      () => {
        const latest = readStoredSession();
        if (!latest || latest.token !== stored.token) expireRef.current('Your session has expired: sign in again.');
        else if (latest.expiresAt !== stored.expiresAt) setStored(latest);
      },
      Math.max(0, Math.min(delay, 2_000_000_000)),
    );
    return () => window.clearTimeout(timer);
  }, [stored]);

  // Another tab signed in or out.
  useEffect(() => {
    const onStorage = (event: StorageEvent) => {
      if (event.key !== TOKEN_KEY && event.key !== null) return;
      const latest = readStoredSession();
      if (latest?.token === storedRef.current?.token) return;
      if (latest === null) expireRef.current('You signed out in another window.');
      else {
        queryClient.clear();
        setStored(latest);
      }
    };
    window.addEventListener('storage', onStorage);
    return () => window.removeEventListener('storage', onStorage);
  }, [queryClient]);

  const signIn = useCallback(
    async (login: string, password: string) => {
      const once = new Client({ url: window.location.origin, login, password });
      const token = await once.login();
      const session: StoredSession = { token: token.id, expiresAt: token.data.expires_at, login: token.data.user.data.login };
      queryClient.clear();
      writeStoredSession(session);
      storedRef.current = session;
      setSignedOutByChoice(false);
      setStored(session);
    },
    [queryClient],
  );

  const signOut = useCallback(async () => {
    storedRef.current = null;
    try {
      await client.logout();
    } catch {
      // The token is forgotten here whatever the server says.
    }
    setSignedOutByChoice(true);
    forget();
    await navigate('/sign-in', { replace: true });
  }, [client, forget, navigate]);

  const value = useMemo<SessionState>(
    () => ({ stored, client, signIn, signOut, signedOutByChoice }),
    [stored, client, signIn, signOut, signedOutByChoice],
  );
  return <SessionStateContext.Provider value={value}>{children}</SessionStateContext.Provider>;
}

/** Sign-in helpers for the sign-in page: whether a session exists, and `signIn`. */
export function useSignIn(): { signedIn: boolean; signIn: (login: string, password: string) => Promise<void> } {
  const { stored, signIn } = useSessionState();
  return { signedIn: stored !== null, signIn };
}

/** Builds the permission checks of a role. */
export function permissionChecks(role: Role): Pick<Session, 'can' | 'canRun'> {
  const api = new Set(role.data.permissions.find((group) => group.name === 'api')?.permissions ?? []);
  const playbook = new Set(role.data.permissions.find((group) => group.name === 'playbook')?.permissions ?? []);
  return { can: (permission) => api.has(permission), canRun: (playbookId) => playbook.has(playbookId) };
}

/**
 * Renders its children only for a signed-in user, with {@link useSession} available; sends
 * anyone else to `/sign-in?next=<here>`.
 */
export function RequireAuth({ children }: { children: ReactNode }) {
  const { stored, signOut, signedOutByChoice } = useSessionState();
  const location = useLocation();
  const token = stored?.token ?? null;
  const self = useSessionSelfQuery(token);
  const session = useMemo<Session | null>(() => {
    if (!self.data) return null;
    const role = self.data.role ?? noRole(self.data.user);
    return { user: self.data.user, role, ...permissionChecks(role), signOut };
  }, [self.data, signOut]);

  if (token === null) {
    return <Navigate to={signedOutByChoice ? '/sign-in' : signInPath(`${location.pathname}${location.search}${location.hash}`)} replace />;
  }
  if (self.error) {
    return (
      <Center h="100vh" p="md">
        <Stack maw={480}>
          <ErrorNotice error={self.error} title="Cannot load your account" onRetry={() => void self.refetch()} />
        </Stack>
      </Center>
    );
  }
  if (!session) {
    return (
      <Center h="100vh">
        <Loader aria-label="Loading your account" />
      </Center>
    );
  }
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

/** Provides a fixed session, for tests and previews of components that call {@link useSession}. */
export function StaticSessionProvider({ session, children }: { session: Session; children: ReactNode }) {
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}
