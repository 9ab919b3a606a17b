// @vitest-environment happy-dom
import '../../test/setup.ts';
import type { Cluster } from '@carapace/models';
import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { json, makeRole, mockFetch, renderApp, selfHandler, storeSession } from '../../test/harness.tsx';

function cluster(i: number): Cluster {
  return { id: `c-${i}`, model: 'cluster', version: 1, time_updated: 1_795_000_000, time_deleted: 0, initiator_id: null, data: { name: `ceph-${i}`, configuration: {} } };
}

describe('the clusters list', () => {
  it('keeps its page and search in the address: a reload shows the same page, Back the page before', async () => {
    storeSession();
    const { calls } = mockFetch(selfHandler(makeRole(['view_cluster'])), (url) => {
      if (url.pathname !== '/v1/cluster/') return undefined;
      const page = Number(url.searchParams.get('page'));
      return json({ items: [cluster(page)], page, per_page: 25, total: 80 });
    });
    const lists = () => calls.filter((c) => c.url.pathname === '/v1/cluster/').map((c) => c.url.searchParams);
    const where = (router: ReturnType<typeof renderApp>['router']) => `${router.state.location.pathname}${router.state.location.search}`;

    const { router, unmount } = renderApp('/clusters?q=ceph&page=2');
    const table = await screen.findByRole('table', { name: 'Clusters' });
    await within(table).findByText('ceph-2');
    expect(lists().at(-1)?.get('page')).toBe('2');
    expect(JSON.parse(lists().at(-1)?.get('filter') ?? '')).toEqual({ name: { regexp: '(?i)ceph' } });
    expect(screen.getByLabelText<HTMLInputElement>('Search clusters').value).toBe('ceph');
    expect(screen.getByText('26–50 of 80 clusters')).toBeTruthy();

    fireEvent.click(screen.getByRole('button', { name: 'Page 4' }));
    await screen.findByText('ceph-4');
    expect(where(router)).toBe('/clusters?q=ceph&page=4');

    // Back: the page before, from the address.
    await router.navigate(-1);
    await screen.findByText('ceph-2');
    expect(where(router)).toBe('/clusters?q=ceph&page=2');

    // A new search goes back to page 1, once typing pauses; the address keeps it.
    fireEvent.change(screen.getByLabelText('Search clusters'), { target: { value: 'rbd ' } });
    await waitFor(() => expect(where(router)).toBe('/clusters?q=rbd'), { timeout: 2000 });
    await screen.findByText('ceph-1');
    expect(JSON.parse(lists().at(-1)?.get('filter') ?? '')).toEqual({ name: { regexp: '(?i)rbd' } });
    expect(screen.getByLabelText<HTMLInputElement>('Search clusters').value).toBe('rbd ');

    // A link to the bare list (the navigation's): the box follows the address.
    await router.navigate('/clusters');
    await waitFor(() => expect(screen.getByLabelText<HTMLInputElement>('Search clusters').value).toBe(''));

    // A reload of an address shows what it says.
    await router.navigate('/clusters?q=rbd');
    unmount();
    renderApp(where(router));
    expect((await screen.findByLabelText<HTMLInputElement>('Search clusters')).value).toBe('rbd');
  });
});
