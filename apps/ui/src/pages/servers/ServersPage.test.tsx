// @vitest-environment happy-dom
import '../../test/setup.ts';
import { fireEvent, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { makeRole, mockFetch, page, renderApp, selfHandler, storeSession } from '../../test/harness.tsx';
import { serverFilter } from './ServersPage.tsx';

describe('the servers list', () => {
  it('asks the API for one page, filtered and sorted', async () => {
    storeSession();
    const { calls } = mockFetch(selfHandler(makeRole(['view_server'])), (url) => (url.pathname === '/v1/server/' ? page([], 4000) : undefined));
    renderApp('/servers?state=operational&q=node1&page=3&sort=ip&order=desc');
    await screen.findByRole('table', { name: 'Servers' });
    const list = calls.filter((c) => c.url.pathname === '/v1/server/').at(-1);
    expect(list?.url.searchParams.get('page')).toBe('3');
    expect(list?.url.searchParams.get('per_page')).toBe('25');
    expect(JSON.parse(list?.url.searchParams.get('filter') ?? '')).toEqual({ name: { regexp: '(?i)node1' }, state: 'operational' });
    expect(JSON.parse(list?.url.searchParams.get('sort_by') ?? '')).toEqual({ ip: -1, name: 1 });

    fireEvent.click(screen.getByRole('button', { name: 'Sort by Name' }));
    await waitFor(() => {
      const last = calls.filter((c) => c.url.pathname === '/v1/server/').at(-1);
      expect(JSON.parse(last?.url.searchParams.get('sort_by') ?? '')).toEqual({ name: 1 });
    });
  });

  it('escapes the search text', () => {
    expect(serverFilter({ search: ' a.b* ', field: 'fqdn', state: null, cluster: 'none' })).toEqual({ fqdn: { regexp: '(?i)a\\.b\\*' }, cluster_id: null });
  });
});
