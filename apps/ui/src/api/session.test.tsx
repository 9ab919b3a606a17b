// @vitest-environment happy-dom
import '../test/setup.ts';
import { fireEvent, screen, waitFor } from '@testing-library/react';
import type { Client } from '@carapace/client';
import { QueryClient } from '@tanstack/react-query';
import { describe, expect, it, vi } from 'vitest';
import { apiError, json, makeRole, makeUser, mockFetch, page, renderApp, selfHandler, storeSession } from '../test/harness.tsx';
import { readStoredSession, safeNext, SessionStore, signInPath, TOKEN_KEY, type StoredSession } from './session.tsx';

const where = (router: ReturnType<typeof renderApp>['router']) => `${router.state.location.pathname}${router.state.location.search}`;

describe('session', () => {
  it('sends a visitor without a session to sign in, remembering where they were going', async () => {
    mockFetch();
    const { router } = renderApp('/servers?state=off');
    await screen.findByRole('button', { name: 'Sign in' });
    expect(where(router)).toBe('/sign-in?next=%2Fservers%3Fstate%3Doff');
  });

  it('on a 401 forgets the session, goes to sign in, and comes back after signing in', async () => {
    storeSession('old-token');
    let serverCalls = 0;
    const { calls } = mockFetch(
      selfHandler(makeRole(['view_server'])),
      (url, init) => {
        if (!url.pathname.startsWith('/v1/server')) return undefined;
        serverCalls++;
        const auth = new Headers(init.headers).get('authorization');
        return auth === 'new-token' ? page([]) : apiError(401, 'Unauthorized', 'Token expired.');
      },
      (url, init) =>
        url.pathname === '/v1/auth/' && init.method === 'POST'
          ? json({ id: 'new-token', model: 'token', version: 1, time_updated: 1, time_deleted: 0, initiator_id: 'u-1', data: { user: makeUser(), expires_at: Math.floor(Date.now() / 1000) + 1800 } })
          : undefined,
    );
    const { router } = renderApp('/servers?state=off');
    await screen.findByRole('button', { name: 'Sign in' });
    expect(where(router)).toBe('/sign-in?next=%2Fservers%3Fstate%3Doff');
    expect(window.localStorage.getItem(TOKEN_KEY)).toBeNull();
    expect(serverCalls).toBeGreaterThan(0);

    fireEvent.change(screen.getByLabelText(/^Login/), { target: { value: 'alice' } });
    fireEvent.change(screen.getByLabelText(/^Password/), { target: { value: 'secret' } });
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }));
    await screen.findByRole('table', { name: 'Servers' });
    expect(where(router)).toBe('/servers?state=off');
    expect(readStoredSession()?.token).toBe('new-token');
    // The password went to the login call only, and is not stored.
    expect(window.localStorage.getItem(TOKEN_KEY)).not.toContain('secret');
    const login = calls.find((c) => c.url.pathname === '/v1/auth/');
    expect(JSON.parse(login?.init.body as string)).toEqual({ username: 'alice', password: 'secret' });
  });

  it('says so when the login or password is wrong, and stays on the page', async () => {
    mockFetch((url, init) => (url.pathname === '/v1/auth/' && init.method === 'POST' ? apiError(401, 'Unauthorized', 'Wrong login or password.') : undefined));
    const { router } = renderApp('/sign-in');
    fireEvent.change(await screen.findByLabelText(/^Login/), { target: { value: 'alice' } });
    fireEvent.change(screen.getByLabelText(/^Password/), { target: { value: 'bad' } });
    fireEvent.click(screen.getByRole('button', { name: 'Sign in' }));
    expect(await screen.findByRole('alert')).toHaveProperty('textContent', 'Wrong login or password.');
    expect(where(router)).toBe('/sign-in');
  });

  it('signs out: revokes the token and forgets it', async () => {
    storeSession('tok-1');
    const { calls } = mockFetch(selfHandler(makeRole([])), (url, init) => (url.pathname === '/v1/auth/' && init.method === 'DELETE' ? json({}) : undefined));
    const { router } = renderApp('/');
    fireEvent.click(await screen.findByRole('button', { name: 'Sign out' }));
    await screen.findByRole('button', { name: 'Sign in' });
    expect(where(router)).toBe('/sign-in');
    expect(window.localStorage.getItem(TOKEN_KEY)).toBeNull();
    expect(calls.some((c) => c.url.pathname === '/v1/auth/' && c.init.method === 'DELETE')).toBe(true);
  });

  it('ignores a stored session that has expired', () => {
    storeSession('tok', 'alice', Math.floor(Date.now() / 1000) - 5);
    expect(readStoredSession()).toBeNull();
    expect(window.localStorage.getItem(TOKEN_KEY)).toBeNull();
  });

  it('only comes back to paths of this application', () => {
    expect(safeNext('/servers?x=1')).toBe('/servers?x=1');
    expect(safeNext('//evil.example.com/')).toBe('/');
    expect(safeNext('https://evil.example.com/')).toBe('/');
    expect(safeNext(null)).toBe('/');
    expect(signInPath('/')).toBe('/sign-in');
    expect(signInPath('/clusters/1')).toBe('/sign-in?next=%2Fclusters%2F1');
  });
});

describe('password reset', () => {
  it('checks the token, sets the new password and goes to sign in', async () => {
    const { calls } = mockFetch((url, init) => {
      if (url.pathname === '/v1/password_reset/abc/' && (init.method ?? 'GET') === 'GET') return json({ message: 'Password reset was requested.' });
      if (url.pathname === '/v1/password_reset/abc/' && init.method === 'POST') return json({ message: 'Password has been reset.' });
      return undefined;
    });
    const { router } = renderApp('/password_reset/abc/');
    fireEvent.change(await screen.findByLabelText(/^New password/), { target: { value: 'a-new-secret' } });
    fireEvent.change(screen.getByLabelText(/^Repeat the password/), { target: { value: 'a-new-secret' } });
    fireEvent.click(screen.getByRole('button', { name: 'Set the new password' }));
    await waitFor(() => expect(router.state.location.pathname).toBe('/sign-in'));
    const post = calls.find((c) => c.init.method === 'POST');
    expect(JSON.parse(post?.init.body as string)).toEqual({ password: 'a-new-secret' });
  });

  it('tells when the link is unknown or expired', async () => {
    mockFetch(() => apiError(404, 'NotFound', 'Unknown reset token.'));
    renderApp('/password_reset/nope/');
    await screen.findByText('This link does not work');
  });

  it('asks for a reset by login', async () => {
    const { calls } = mockFetch((url) => (url.pathname === '/v1/password_reset/' ? json({ message: 'Password reset was requested.' }) : undefined));
    renderApp('/password_reset');
    fireEvent.change(await screen.findByLabelText(/^Login/), { target: { value: 'bob' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send reset link' }));
    await screen.findByText('Check your e-mail');
    expect(JSON.parse(calls[0]?.init.body as string)).toEqual({ login: 'bob' });
  });
});

describe('the session store', () => {
  const respond = (status: number, headers: Record<string, string> = {}) => {
    globalThis.fetch = () => Promise.resolve(new Response('{}', { status, headers }));
  };
  const call = (store: SessionStore, token: string, path = '/v1/server/', method = 'GET') =>
    store.fetch(`http://localhost${path}`, { method, headers: { authorization: token } });

  it('ends the session on a 401 to its own token only, once', async () => {
    storeSession('tok-1');
    const store = new SessionStore(new QueryClient());
    const reasons: string[] = [];
    store.onExpired((reason) => reasons.push(reason));
    const before = store.getSnapshot();
    respond(401);
    await call(store, 'tok-other');
    await call(store, 'tok-1', '/v1/auth/', 'POST');
    expect(store.getSnapshot()).toBe(before);
    await call(store, 'tok-1');
    await call(store, 'tok-1');
    expect(store.getSnapshot()).toEqual({ stored: null, signedOutByChoice: false });
    expect(reasons).toEqual(['Your session has expired or was revoked: sign in again.']);
    expect(window.localStorage.getItem(TOKEN_KEY)).toBeNull();
  });

  it('signs out: a 401 meanwhile ends no session of its own', async () => {
    storeSession('tok-1');
    const store = new SessionStore(new QueryClient());
    const reasons: string[] = [];
    store.onExpired((reason) => reasons.push(reason));
    respond(401);
    const client = { logout: () => call(store, 'tok-1').then(() => ({})) } as unknown as Client;
    await store.signOut(client);
    expect(reasons).toEqual([]);
    expect(store.getSnapshot()).toEqual({ stored: null, signedOutByChoice: true });
    expect(window.localStorage.getItem(TOKEN_KEY)).toBeNull();
  });

  it('keeps a later expiry the server gives without a new snapshot', async () => {
    const now = Math.floor(Date.now() / 1000);
    storeSession('tok-1', 'alice', now + 60);
    const store = new SessionStore(new QueryClient());
    const before = store.getSnapshot();
    respond(200, { 'x-token-expires': String(now + 600) });
    await call(store, 'tok-1');
    expect(store.getSnapshot()).toBe(before);
    expect(readStoredSession()?.expiresAt).toBe(now + 600);
    respond(200, { 'x-token-expires': String(now + 300) });
    await call(store, 'tok-1');
    expect(readStoredSession()?.expiresAt).toBe(now + 600);
  });

  it('ends the session at its expiry, later when it was extended', () => {
    vi.useFakeTimers();
    try {
      const now = Math.floor(Date.now() / 1000);
      storeSession('tok-1', 'alice', now + 10);
      const store = new SessionStore(new QueryClient());
      const reasons: string[] = [];
      store.onExpired((reason) => reasons.push(reason));
      const stop = store.watchExpiry(store.getSnapshot().stored as StoredSession);
      storeSession('tok-1', 'alice', now + 20);
      vi.advanceTimersByTime(10_000);
      expect(reasons).toEqual([]);
      vi.setSystemTime(Date.now() + 10_000);
      vi.advanceTimersByTime(10_000);
      expect(reasons).toEqual(['Your session has expired: sign in again.']);
      stop();
    } finally {
      vi.useRealTimers();
    }
  });
});
