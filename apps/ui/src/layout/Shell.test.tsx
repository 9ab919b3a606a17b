// @vitest-environment happy-dom
import '../test/setup.ts';
import { fireEvent, screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { makeRole, mockFetch, page, renderApp, selfHandler, storeSession } from '../test/harness.tsx';

async function navLinks(): Promise<string[]> {
  const nav = await screen.findByRole('navigation', { name: 'Main' });
  return within(nav)
    .getAllByRole('link')
    .map((a) => a.textContent ?? '');
}

describe('the navigation', () => {
  it('shows only what the role may view', async () => {
    storeSession();
    mockFetch(selfHandler(makeRole(['view_server'])), (url) => (url.pathname.startsWith('/v1/server') ? page([]) : undefined));
    renderApp('/');
    expect(await navLinks()).toEqual(['Dashboard', 'Servers']);
    expect(screen.queryByText('Administration')).toBeNull();
    expect(screen.getByText('alice')).toBeTruthy();
  });

  it('shows the administration links the role holds', async () => {
    storeSession();
    mockFetch(selfHandler(makeRole(['view_user', 'view_runner', 'view_cluster', 'view_execution'])), (url) =>
      url.pathname.startsWith('/v1/runner') ? new Response(JSON.stringify({ items: [] }), { headers: { 'content-type': 'application/json' } }) : url.pathname.startsWith('/v1/') && !url.pathname.includes('self') ? page([]) : undefined,
    );
    renderApp('/');
    expect(await navLinks()).toEqual(['Dashboard', 'Clusters', 'Executions', 'Users', 'Runners', 'Cloud config']);
    expect(screen.getByText('Administration')).toBeTruthy();
  });

  it('has a Help menu of the documentation pages, each opening in a new tab', async () => {
    storeSession();
    mockFetch(selfHandler(makeRole([])));
    renderApp('/');
    fireEvent.click(await screen.findByRole('button', { name: 'Help' }));
    const items = await screen.findAllByRole('menuitem');
    expect(items.map((a) => [a.textContent, a.getAttribute('href')])).toEqual([
      ['Operator guide', '/docs/guide/'],
      ['First cluster', '/docs/guide/first-cluster'],
      ['Playbook reference', '/docs/reference/playbooks'],
      ['Troubleshooting', '/docs/guide/troubleshooting'],
      ['CLI reference', '/docs/reference/cli'],
    ]);
    for (const a of items) {
      expect(a.tagName).toBe('A');
      expect(a.getAttribute('target')).toBe('_blank');
      expect(a.getAttribute('rel')).toBe('noopener');
    }
  });

  it('answers unknown paths with a page inside the shell', async () => {
    storeSession();
    mockFetch(selfHandler(makeRole([])));
    renderApp('/no/such/page');
    await screen.findByRole('heading', { name: 'Page not found' });
    expect(screen.getByRole('button', { name: 'Sign out' })).toBeTruthy();
  });

  it('shows a 403 as a permission message', async () => {
    storeSession();
    mockFetch(selfHandler(makeRole(['view_cluster'])), (url) =>
      url.pathname.startsWith('/v1/cluster') ? new Response(JSON.stringify({ code: 403, error: 'Forbidden', description: 'Forbidden', message: 'Forbidden' }), { status: 403 }) : undefined,
    );
    renderApp('/clusters');
    const alert = await screen.findByRole('alert');
    expect(alert.textContent).toContain('You do not have the permission');
  });
});
