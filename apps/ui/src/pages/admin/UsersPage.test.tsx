// @vitest-environment happy-dom
import '../../test/setup.ts';
import type { User } from '@carapace/models';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { json, makeRole, makeUser, mockFetch, page, renderApp, selfHandler, storeSession } from '../../test/harness.tsx';

function user(id: string, login: string): User {
  return { ...makeUser(login), id };
}

describe('the users page', () => {
  it('opens each edit form on the user as the server has it, not on what the last opening left', async () => {
    storeSession();
    const users = [user('u-2', 'bob'), user('u-3', 'carol')];
    mockFetch(selfHandler(makeRole(['view_user', 'edit_user', 'view_role'])), (url) => {
      if (url.pathname === '/v1/user/') return page(users);
      if (url.pathname === '/v1/role/') return page([]);
      return undefined;
    });
    renderApp('/admin/users');
    const table = await screen.findByRole('table', { name: 'Users' });
    await within(table).findByText('bob');

    const email = () => screen.findByRole<HTMLInputElement>('textbox', { name: /^Email/ });
    fireEvent.click(screen.getByRole('button', { name: 'Edit user bob' }));
    expect((await email()).value).toBe('bob@example.com');
    fireEvent.change(await email(), { target: { value: 'typed-but-not-saved@example.com' } });
    fireEvent.click(screen.getByRole('button', { name: 'Close' }));
    await waitFor(() => expect(screen.queryByRole('form', { name: 'Edit user' })).toBeNull());

    fireEvent.click(screen.getByRole('button', { name: 'Edit user carol' }));
    expect((await email()).value).toBe('carol@example.com');
    fireEvent.click(screen.getByRole('button', { name: 'Close' }));
    await waitFor(() => expect(screen.queryByRole('form', { name: 'Edit user' })).toBeNull());

    fireEvent.click(screen.getByRole('button', { name: 'Edit user bob' }));
    expect((await email()).value).toBe('bob@example.com');
  });

  it('pages through the users with the API, the page in the address', async () => {
    storeSession();
    const { calls } = mockFetch(selfHandler(makeRole(['view_user'])), (url) =>
      url.pathname === '/v1/user/' ? json({ items: [user('u-9', 'zed')], page: 2, per_page: 25, total: 30 }) : undefined,
    );
    const { router } = renderApp('/admin/users?page=2');
    await screen.findByText('zed');
    const list = calls.filter((c) => c.url.pathname === '/v1/user/').at(-1);
    expect(list?.url.searchParams.get('page')).toBe('2');
    expect(JSON.parse(list?.url.searchParams.get('sort_by') ?? '')).toEqual({ login: 1 });
    expect(screen.getByText('26–30 of 30 users')).toBeTruthy();
    fireEvent.click(screen.getByRole('button', { name: 'Page 1' }));
    await waitFor(() => expect(router.state.location.search).toBe(''));
  });
});
