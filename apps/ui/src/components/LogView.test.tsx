// @vitest-environment happy-dom
import { MantineProvider } from '@mantine/core';
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { LogBuffer } from './logBuffer.ts';
import { LogView } from './LogView.tsx';

afterEach(cleanup);

describe('LogView', () => {
  it('renders 200,000 lines with only a window of them in the DOM, and searches', async () => {
    const buffer = new LogBuffer();
    let text = '';
    for (let i = 0; i < 200_000; i++) text += `line ${i}${i === 150_000 ? ' NEEDLE' : ''}\n`;
    buffer.append(text);
    const started = performance.now();
    render(
      <MantineProvider>
        <LogView buffer={buffer} version={1} following={false} />
      </MantineProvider>,
    );
    const region = screen.getByRole('log', { name: 'Execution log' });
    expect(region.querySelectorAll('[data-index]').length).toBeLessThan(200);
    expect(screen.getByTestId('log-line-count').textContent).toContain('200');
    expect(performance.now() - started).toBeLessThan(3000);

    fireEvent.change(screen.getByLabelText('Search log'), { target: { value: 'needle' } });
    await act(async () => {
      await new Promise((r) => setTimeout(r, 300));
    });
    expect(screen.getByTestId('log-match-count').textContent).toBe('0 of 1');
    fireEvent.click(screen.getByRole('button', { name: 'Next match' }));
    expect(screen.getByTestId('log-match-count').textContent).toBe('1 of 1');
  });

  it('finds the matches of lines that arrive while it searches, and forgets the match when the query changes', async () => {
    const buffer = new LogBuffer();
    buffer.append('TASK [a]\nok: [h1]\nTASK [b]\n');
    const view = (version: number) => (
      <MantineProvider>
        <LogView buffer={buffer} version={version} following />
      </MantineProvider>
    );
    const { rerender } = render(view(1));
    const settle = () => act(async () => new Promise((r) => setTimeout(r, 300)));
    fireEvent.change(screen.getByLabelText('Search log'), { target: { value: 'task' } });
    await settle();
    expect(screen.getByTestId('log-match-count').textContent).toBe('0 of 2');
    fireEvent.click(screen.getByRole('button', { name: 'Next match' }));
    fireEvent.click(screen.getByRole('button', { name: 'Next match' }));
    expect(screen.getByTestId('log-match-count').textContent).toBe('2 of 2');

    buffer.append('changed: [h1]\nTASK [c]\nTASK [d]\n');
    rerender(view(2));
    expect(screen.getByTestId('log-match-count').textContent).toBe('2 of 4');
    expect(screen.getByTestId('log-line-count').textContent).toBe('6 lines');

    fireEvent.change(screen.getByLabelText('Search log'), { target: { value: 'ok' } });
    await settle();
    expect(screen.getByTestId('log-match-count').textContent).toBe('0 of 1');
    fireEvent.change(screen.getByLabelText('Search log'), { target: { value: '' } });
    await settle();
    expect(screen.queryByTestId('log-match-count')).toBeNull();
  });
});
