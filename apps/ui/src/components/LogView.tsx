/**
 * A virtualised view of a (growing) log: only the visible lines are in the DOM, so hundreds
 * of thousands of lines stay responsive. It follows the end while `following` unless the
 * user scrolled up, and searches the log (highlight, previous/next match).
 */
import { ActionIcon, Badge, Box, Button, Group, Text, TextInput, Tooltip } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import { LogSearch, splitMatches, type LogBuffer } from './logBuffer.ts';

export const LOG_LINE_HEIGHT = 18;

export interface LogViewProps {
  buffer: LogBuffer;
  /** Changes whenever the buffer grew (a counter): re-renders the view. */
  version: number;
  /** Whether the log still grows: the view sticks to the end unless the user scrolled up. */
  following: boolean;
  /** Accessible name of the log region. */
  label?: string;
  /** Extra controls for the toolbar (download, ...). */
  actions?: ReactNode;
  /** CSS height of the scrolling area. */
  height?: string;
}

export function LogView({ buffer, version, following, label = 'Execution log', actions, height = '60vh' }: LogViewProps): ReactNode {
  const scroller = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const [atEnd, setAtEnd] = useState(true);
  const count = buffer.lineCount;

  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => LOG_LINE_HEIGHT,
    overscan: 20,
  });

  // Search: incremental over the growing buffer.
  const [query, setQuery] = useState('');
  const [debounced] = useDebouncedValue(query, 200);
  const search = useRef(new LogSearch());
  const matches = useMemo(() => {
    const found = search.current.update(buffer, debounced);
    return { list: found, count: found.length };
    // `version` is the signal that the buffer grew.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [buffer, debounced, version]);
  const [current, setCurrent] = useState(-1);
  useEffect(() => setCurrent(-1), [debounced]);
  const activeLine = current >= 0 ? matches.list[current] : undefined;

  const jump = useCallback(
    (step: 1 | -1) => {
      if (!matches.count) return;
      const next = current < 0 ? (step === 1 ? 0 : matches.count - 1) : (current + step + matches.count) % matches.count;
      setCurrent(next);
      const line = matches.list[next];
      if (line !== undefined) {
        stick.current = false;
        setAtEnd(false);
        virtualizer.scrollToIndex(line, { align: 'center' });
      }
    },
    [current, matches, virtualizer],
  );

  // Follow the end as lines arrive, unless the user scrolled away from it.
  useLayoutEffect(() => {
    if (stick.current && count > 0) {
      const el = scroller.current;
      if (el) el.scrollTop = el.scrollHeight;
    }
  }, [count, version]);

  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    const bottom = el.scrollHeight - el.scrollTop - el.clientHeight < LOG_LINE_HEIGHT * 2;
    stick.current = bottom;
    if (bottom !== atEnd) setAtEnd(bottom);
  };

  const toEnd = () => {
    stick.current = true;
    setAtEnd(true);
    const el = scroller.current;
    if (el) el.scrollTop = el.scrollHeight;
  };

  const onSearchKey = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      jump(event.shiftKey ? -1 : 1);
    }
  };

  const digits = String(count).length;
  const items = virtualizer.getVirtualItems();

  return (
    <Box>
      <Group justify="space-between" mb="xs" wrap="wrap" gap="xs">
        <Group gap="xs" wrap="nowrap">
          <TextInput
            aria-label="Search log"
            placeholder="Search the log"
            size="xs"
            value={query}
            onChange={(e) => setQuery(e.currentTarget.value)}
            onKeyDown={onSearchKey}
            w={220}
          />
          <Tooltip label="Previous match (Shift+Enter)">
            <ActionIcon variant="default" aria-label="Previous match" disabled={!matches.count} onClick={() => jump(-1)}>
              ↑
            </ActionIcon>
          </Tooltip>
          <Tooltip label="Next match (Enter)">
            <ActionIcon variant="default" aria-label="Next match" disabled={!matches.count} onClick={() => jump(1)}>
              ↓
            </ActionIcon>
          </Tooltip>
          {debounced ? (
            <Text size="xs" c="dimmed" aria-live="polite" data-testid="log-match-count">
              {matches.count ? `${current >= 0 ? current + 1 : 0} of ${matches.count}` : 'No match'}
            </Text>
          ) : null}
        </Group>
        <Group gap="xs">
          <Text size="xs" c="dimmed" data-testid="log-line-count">
            {count.toLocaleString()} lines
          </Text>
          {following ? (
            <Badge variant="dot" color="green" size="sm">
              Following
            </Badge>
          ) : null}
          {!atEnd ? (
            <Button size="xs" variant="light" onClick={toEnd}>
              Jump to end
            </Button>
          ) : null}
          {actions}
        </Group>
      </Group>
      <div
        ref={scroller}
        role="log"
        aria-label={label}
        aria-live="off"
        tabIndex={0}
        onScroll={onScroll}
        style={{
          height,
          overflow: 'auto',
          contain: 'strict',
          fontFamily: 'var(--mantine-font-family-monospace)',
          fontSize: 12,
          lineHeight: `${LOG_LINE_HEIGHT}px`,
          background: 'var(--mantine-color-default)',
          border: '1px solid var(--mantine-color-default-border)',
          borderRadius: 'var(--mantine-radius-sm)',
        }}
      >
        <div style={{ height: virtualizer.getTotalSize(), position: 'relative', minWidth: '100%' }}>
          {items.map((item) => {
            const text = buffer.line(item.index);
            const active = item.index === activeLine;
            return (
              <div
                key={item.key}
                data-index={item.index}
                data-line={item.index + 1}
                style={{
                  position: 'absolute',
                  top: 0,
                  left: 0,
                  minWidth: '100%',
                  height: LOG_LINE_HEIGHT,
                  transform: `translateY(${item.start}px)`,
                  whiteSpace: 'pre',
                  paddingRight: 8,
                  background: active ? 'var(--mantine-color-yellow-light)' : undefined,
                }}
              >
                <span aria-hidden style={{ display: 'inline-block', width: `${digits + 1}ch`, textAlign: 'right', marginRight: '1ch', color: 'var(--mantine-color-dimmed)', userSelect: 'none' }}>
                  {item.index + 1}
                </span>
                {debounced
                  ? splitMatches(text, debounced).map((part, i) =>
                      part.match ? (
                        <mark key={i} style={{ background: active ? 'var(--mantine-color-orange-filled)' : 'var(--mantine-color-yellow-filled)', color: 'black' }}>
                          {part.text}
                        </mark>
                      ) : (
                        <span key={i}>{part.text}</span>
                      ),
                    )
                  : text}
              </div>
            );
          })}
        </div>
      </div>
    </Box>
  );
}
