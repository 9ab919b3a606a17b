// @vitest-environment happy-dom
import '../../test/setup.ts';
import type { PlaybookConfigurationModel } from '@carapace/models';
import { act, fireEvent, screen, waitFor } from '@testing-library/react';
import { EditorView } from '@codemirror/view';
import { describe, expect, it } from 'vitest';
import { queryKeys } from '../../api/queries.ts';
import { json, makeRole, mockFetch, page, renderApp, selfHandler, storeSession } from '../../test/harness.tsx';

function configuration(version: number, name: string, port: number): PlaybookConfigurationModel {
  return {
    id: 'pc-1',
    model: 'playbook_configuration',
    version,
    time_updated: 1_795_000_000 + version,
    time_deleted: 0,
    initiator_id: null,
    data: { name, playbook_id: 'hello_world', cluster_id: 'c-1', server_ids: [], hints: [], configuration: { global_vars: { port_number: port }, inventory: {} } },
  };
}

describe('the configuration page', () => {
  it('shows the server version until the user edits, then keeps the edit over a newer version', async () => {
    storeSession();
    mockFetch(selfHandler(makeRole(['view_playbook_configuration', 'edit_playbook_configuration'])), (url) => {
      if (url.pathname === '/v1/playbook_configuration/pc-1/') return json(configuration(1, 'first', 8085));
      if (url.pathname === '/v1/playbook/') return json({ items: [] });
      if (url.pathname.startsWith('/v1/')) return page([]);
      return undefined;
    });
    const { queryClient } = renderApp('/playbook-configurations/pc-1');
    const name = await screen.findByRole<HTMLInputElement>('textbox', { name: 'Name' });
    expect(name.value).toBe('first');
    const save = screen.getByRole('button', { name: 'Save as new version' });
    expect(save.hasAttribute('disabled')).toBe(true);

    // A newer version arrives, nothing edited: it shows.
    act(() => {
      queryClient.setQueryData(queryKeys.configurations.detail('pc-1'), configuration(2, 'second', 8086));
    });
    await waitFor(() => expect(name.value).toBe('second'));
    expect(screen.getByLabelText('Configuration version').textContent).toBe('v2');
    const editor = await screen.findByTestId('code-editor');
    await waitFor(() => expect(editor.textContent).toContain('port_number: 8086'));
    expect(save.hasAttribute('disabled')).toBe(true);

    // Edited, then a newer version arrives: the edit stays, and says what it was made from.
    fireEvent.change(name, { target: { value: 'mine' } });
    expect(await screen.findByText('Unsaved changes (editing version 2).')).toBeTruthy();
    act(() => {
      queryClient.setQueryData(queryKeys.configurations.detail('pc-1'), configuration(3, 'third', 8087));
    });
    await waitFor(() => expect(screen.getByLabelText('Configuration version').textContent).toBe('v3'));
    expect(name.value).toBe('mine');
    expect(save.hasAttribute('disabled')).toBe(false);
    // The text was not edited: it follows the server.
    await waitFor(() => expect(editor.textContent).toContain('port_number: 8087'));

    // The text edited, then a newer version: the edited text stays.
    const view = EditorView.findFromDOM(editor.querySelector('.cm-editor') as HTMLElement);
    act(() => {
      view?.dispatch({ changes: { from: 0, insert: '# mine\n' } });
    });
    act(() => {
      queryClient.setQueryData(queryKeys.configurations.detail('pc-1'), configuration(4, 'fourth', 8088));
    });
    await waitFor(() => expect(screen.getByLabelText('Configuration version').textContent).toBe('v4'));
    expect(editor.textContent).toContain('# mine');
    expect(editor.textContent).toContain('port_number: 8087');
    expect(screen.getByText('Unsaved changes (editing version 3).')).toBeTruthy();
  });
});
