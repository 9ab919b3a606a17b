import { Group, Pagination, Text } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useState } from 'react';

/** How many pages `total` items fill, `perPage` a page: at least one. */
export function pageCount(total: number, perPage: number): number {
  return Math.max(1, Math.ceil(total / perPage));
}

/** A search box's text (its trimmed value debounced by 300 ms, for the query) and the page, back to 1 as the text changes. */
export function usePagedSearch() {
  const [page, setPage] = useState(1);
  const [search, setSearchText] = useState('');
  const [debounced] = useDebouncedValue(search.trim(), 300);
  const setSearch = (text: string) => {
    setSearchText(text);
    setPage(1);
  };
  return { page, setPage, search, setSearch, debounced };
}

/** Under a list: how many items in all, and the pages when there is more than one. */
export function ListFooter({ total, page, pages, onChange }: { total: number; page: number; pages: number; onChange: (page: number) => void }) {
  return (
    <Group justify="space-between">
      <Text size="sm" c="dimmed">
        {total} in all
      </Text>
      {pages > 1 ? <Pagination total={pages} value={page} onChange={onChange} aria-label="Pages" /> : null}
    </Group>
  );
}
