// The contexts of the session and their hooks, apart from the provider (session.tsx) so that
// the query hooks (queries.ts) can read the client and the permissions, and the provider
// can use the query hooks, without an import cycle.
import type { Client } from '@carapace/client';
import type { ApiPermission, Role, User } from '@carapace/models';
import { createContext, useContext } from 'react';

/** What the browser keeps of a session: the token, its expiry and the login it belongs to. Never a password. */
export interface StoredSession {
  token: string;
  /** Unix seconds. */
  expiresAt: number;
  login: string;
}

/** The session as the provider holds it, signed in or not. */
export interface SessionState {
  /** The stored session, or null when signed out. */
  stored: StoredSession | null;
  /** The client: with the session's token when signed in; without one for the calls that need none. */
  client: Client;
  /** Signs in with a login and password; the password is used for this one call and not kept. */
  signIn: (login: string, password: string) => Promise<void>;
  /** Revokes the token on the server (when it can), forgets the session and goes to the sign-in page. */
  signOut: () => Promise<void>;
  /** True once the user signed out by choice: no `next` to come back to. */
  signedOutByChoice: boolean;
}

export const SessionStateContext = createContext<SessionState | null>(null);

/** The authenticated user's view of the session (inside `<RequireAuth>`). */
export interface Session {
  user: User;
  role: Role;
  /** Whether the user's role holds this api permission. */
  can: (permission: ApiPermission) => boolean;
  /** Whether the user's role holds the playbook permission of this playbook id. */
  canRun: (playbookId: string) => boolean;
  /** Revokes the token, forgets the session and goes to the sign-in page. */
  signOut: () => Promise<void>;
}

export const SessionContext = createContext<Session | null>(null);

/** The session as the provider holds it (inside `<SessionProvider>`). */
export function useSessionState(): SessionState {
  const state = useContext(SessionStateContext);
  if (!state) throw new Error('useClient/useSession must be used inside <SessionProvider>');
  return state;
}

/** The application's one API client, with the session's token (none before signing in). */
export function useClient(): Client {
  return useSessionState().client;
}

/** The signed-in user, their role and permissions. Only inside `<RequireAuth>`. */
export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession must be used inside <RequireAuth>');
  return session;
}
