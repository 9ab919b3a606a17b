/**
 * A virtualised view of a (growing) log: only the visible lines are in the DOM, so hundreds
 * of thousands of lines stay responsive. It follows the end while `following` unless the
 * user scrolled up, and searches the log (highlight, previous/next match).
 */
import { ActionIcon, Badge, Box, Button, Group, Text, TextInput, Tooltip } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useImperativeHandle, useLayoutEffect, useRef, useState, type KeyboardEvent, type ReactNode, type Ref } from 'react';
import { NO_SEARCH, searchMore, splitMatches, type LogBuffer, type SearchResult } from './logBuffer.ts';

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
  const lines = useRef<LogLinesHandle>(null);
  const [atEnd, setAtEnd] = useState(true);
  const count = buffer.lineCount;

  // Search: incremental over the growing buffer. The result is state, brought up to date
  // during the render whenever the query or the buffer (`version`) changed since.
  const [query, setQuery] = useState('');
  const [debounced] = useDebouncedValue(query, 200);
  const [search, setSearch] = useState<{ version: number; result: SearchResult }>({ version, result: NO_SEARCH });
  let matches = search.result;
  if (search.version !== version || search.result.query !== debounced) {
    matches = searchMore(search.result, buffer, debounced);
    setSearch({ version, result: matches });
  }
  // The match shown, for the query it was chosen in (a new query starts before the first).
  const [cursor, setCursor] = useState({ query: '', index: -1 });
  const current = cursor.query === debounced && cursor.index < matches.matches.length ? cursor.index : -1;
  const activeLine = current >= 0 ? matches.matches[current] : undefined;

  const jump = (step: 1 | -1) => {
    const total = matches.matches.length;
    if (!total) return;
    const next = current < 0 ? (step === 1 ? 0 : total - 1) : (current + step + total) % total;
    setCursor({ query: debounced, index: next });
    const line = matches.matches[next];
    if (line !== undefined) lines.current?.scrollTo(line);
  };

  const onSearchKey = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      jump(event.shiftKey ? -1 : 1);
    }
  };

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
            <ActionIcon variant="default" aria-label="Previous match" disabled={!matches.matches.length} onClick={() => jump(-1)}>
              ↑
            </ActionIcon>
          </Tooltip>
          <Tooltip label="Next match (Enter)">
            <ActionIcon variant="default" aria-label="Next match" disabled={!matches.matches.length} onClick={() => jump(1)}>
              ↓
            </ActionIcon>
          </Tooltip>
          {debounced ? (
            <Text size="xs" c="dimmed" aria-live="polite" data-testid="log-match-count">
              {matches.matches.length ? `${current >= 0 ? current + 1 : 0} of ${matches.matches.length}` : 'No match'}
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
            <Button size="xs" variant="light" onClick={() => lines.current?.toEnd()}>
              Jump to end
            </Button>
          ) : null}
          {actions}
        </Group>
      </Group>
      <LogLines ref={lines} buffer={buffer} count={count} version={version} query={debounced} activeLine={activeLine} label={label} height={height} onAtEnd={setAtEnd} />
    </Box>
  );
}

/** What {@link LogView} asks of its lines: to show a line (and stop following the end), or to go back to the end. */
interface LogLinesHandle {
  scrollTo: (line: number) => void;
  toEnd: () => void;
}

/** The scrolling, virtualised lines of a {@link LogView}; says whether the view is at the end (`onAtEnd`). */
function LogLines({
  ref,
  buffer,
  count,
  version,
  query,
  activeLine,
  label,
  height,
  onAtEnd,
}: {
  ref: Ref<LogLinesHandle>;
  buffer: LogBuffer;
  count: number;
  version: number;
  query: string;
  activeLine: number | undefined;
  label: string;
  height: string;
  onAtEnd: (atEnd: boolean) => void;
}) {
  const scroller = useRef<HTMLDivElement>(null);
  // Whether the view sticks to the end as lines arrive: until the user scrolls up or jumps to a match.
  const stick = useRef(true);
  const atEnd = useRef(true);
  // TanStack Virtual's virtualizer is a mutable object, which React Compiler cannot memoize:
  // it skips this component (the app does not use the compiler), nothing here is memoized.
  // eslint-disable-next-line react-hooks/incompatible-library
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => LOG_LINE_HEIGHT,
    overscan: 20,
  });

  const report = (value: boolean) => {
    if (value !== atEnd.current) {
      atEnd.current = value;
      onAtEnd(value);
    }
  };

  useImperativeHandle(ref, () => ({
    scrollTo: (line: number) => {
      stick.current = false;
      report(false);
      virtualizer.scrollToIndex(line, { align: 'center' });
    },
    toEnd: () => {
      stick.current = true;
      report(true);
      const el = scroller.current;
      if (el) el.scrollTop = el.scrollHeight;
    },
  }));

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
    report(bottom);
  };

  const digits = String(count).length;
  return (
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
        {virtualizer.getVirtualItems().map((item) => {
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
              {query
                ? splitMatches(text, query).map((part, i) =>
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
  );
}
