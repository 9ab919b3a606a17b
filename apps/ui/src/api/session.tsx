import { Client, type FetchFunction } from '@carapace/client';
import type { Role, User } from '@carapace/models';
import { Center, Loader, Stack } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useEffectEvent, useMemo, useState, useSyncExternalStore, type ReactNode } from 'react';
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

/** What the provider renders from: the stored session, and whether the user signed out by choice. */
interface SessionSnapshot {
  stored: StoredSession | null;
  signedOutByChoice: boolean;
}

/**
 * The session outside React, so that the client's `fetch` (which runs outside any render)
 * reads the token in use now: the stored session, changed by signing in and out, by a 401,
 * by its expiry and by other tabs, with listeners as `useSyncExternalStore` wants them. An
 * extended expiry (`x-token-expires`) is written to `localStorage` and read when the expiry
 * timer fires: it changes no snapshot, so it re-renders nothing.
 */
export class SessionStore {
  private snapshot: SessionSnapshot;
  private readonly listeners = new Set<() => void>();
  private readonly expiredListeners = new Set<(reason: string) => void>();
  /** The token being signed out: answers to it end no session. */
  private leaving: string | null = null;

  constructor(private readonly queryClient: QueryClient) {
    this.snapshot = { stored: readStoredSession(), signedOutByChoice: false };
  }

  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  readonly getSnapshot = (): SessionSnapshot => this.snapshot;

  private set(snapshot: SessionSnapshot): void {
    this.snapshot = snapshot;
    for (const listener of this.listeners) listener();
  }

  /** Calls `listener` with the reason whenever the session ends without the user asking. */
  onExpired(listener: (reason: string) => void): () => void {
    this.expiredListeners.add(listener);
    return () => this.expiredListeners.delete(listener);
  }

  /** The client's `fetch`: a 401 to the session's token ends the session; a later expiry the server gives is kept. */
  readonly fetch: FetchFunction = async (url, init) => {
    const response = await globalThis.fetch(url, init);
    const sent = new Headers(init?.headers).get('authorization');
    const current = this.snapshot.stored;
    if (!sent || sent !== current?.token || sent === this.leaving) return response;
    if (response.status === 401 && !isAuthPath(url, init)) {
      this.expire('Your session has expired or was revoked: sign in again.');
    } else if (response.ok) {
      const header = Number(response.headers.get('x-token-expires'));
      const latest = readStoredSession() ?? current;
      if (Number.isFinite(header) && header > latest.expiresAt) writeStoredSession({ ...current, expiresAt: header });
    }
    return response;
  };

  /** The session ended without the user asking (401, expiry, another tab signed out). */
  expire(reason: string): void {
    if (this.snapshot.stored === null) return;
    writeStoredSession(null);
    this.set({ stored: null, signedOutByChoice: false });
    this.queryClient.clear();
    for (const listener of this.expiredListeners) listener(reason);
  }

  /** Keeps a new session (after signing in). */
  signedIn(session: StoredSession): void {
    this.queryClient.clear();
    writeStoredSession(session);
    this.set({ stored: session, signedOutByChoice: false });
  }

  /** Revokes the token on the server (when it can) and forgets the session. */
  async signOut(client: Client): Promise<void> {
    this.leaving = this.snapshot.stored?.token ?? null;
    try {
      await client.logout();
    } catch {
      // The token is forgotten here whatever the server says.
    } finally {
      this.leaving = null;
    }
    writeStoredSession(null);
    this.set({ stored: null, signedOutByChoice: true });
    this.queryClient.clear();
  }

  /** Ends `session` when it expires, even when the page makes no call (later when the server extended it). Returns the stop. */
  watchExpiry(session: StoredSession): () => void {
    let timer = 0;
    const arm = (expiresAt: number) => {
      const delay = expiresAt * 1000 - Date.now();
      timer = window.setTimeout(check, Math.max(0, Math.min(delay, 2_000_000_000)));
    };
    const check = () => {
      const latest = readStoredSession();
      if (!latest || latest.token !== session.token) this.expire('Your session has expired: sign in again.');
      else arm(latest.expiresAt);
    };
    arm(session.expiresAt);
    return () => window.clearTimeout(timer);
  }

  /** Follows other tabs signing in or out. Returns the stop. */
  watchOtherTabs(): () => void {
    const onStorage = (event: StorageEvent) => {
      if (event.key !== TOKEN_KEY && event.key !== null) return;
      const latest = readStoredSession();
      if (latest?.token === this.snapshot.stored?.token) return;
      if (latest === null) this.expire('You signed out in another window.');
      else {
        this.queryClient.clear();
        this.set({ ...this.snapshot, stored: latest });
      }
    };
    window.addEventListener('storage', onStorage);
    return () => window.removeEventListener('storage', onStorage);
  }
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
  const queryClient = useQueryClient();
  const [store] = useState(() => new SessionStore(queryClient));
  const { stored, signedOutByChoice } = useSyncExternalStore(store.subscribe, store.getSnapshot);

  // An ended session: say so, and go to sign in from where the user is now.
  const onExpired = useEffectEvent((reason: string) => {
    const { pathname, search, hash } = location;
    notifications.show({ id: 'session-expired', color: 'yellow', title: 'Signed out', message: reason });
    if (!pathname.startsWith('/sign-in')) void navigate(signInPath(`${pathname}${search}${hash}`), { replace: true });
  });
  useEffect(() => store.onExpired((reason) => onExpired(reason)), [store]);
  useEffect(() => (stored ? store.watchExpiry(stored) : undefined), [store, stored]);
  useEffect(() => store.watchOtherTabs(), [store]);

  const client = useMemo(
    () => new Client({ url: window.location.origin, login: stored?.login ?? '', token: stored?.token ?? null, fetch: store.fetch }),
    [stored?.login, stored?.token, store],
  );

  const signIn = useCallback(
    async (login: string, password: string) => {
      const once = new Client({ url: window.location.origin, login, password });
      const token = await once.login();
      store.signedIn({ token: token.id, expiresAt: token.data.expires_at, login: token.data.user.data.login });
    },
    [store],
  );

  const signOut = useCallback(async () => {
    await store.signOut(client);
    await navigate('/sign-in', { replace: true });
  }, [store, client, navigate]);

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
