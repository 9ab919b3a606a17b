import { Center, Group, Pagination, Select, Skeleton, Stack, Table, Text, UnstyledButton } from '@mantine/core';
import type { ReactNode } from 'react';
import { ErrorNotice } from '../api/errors.ts';
import { pageCount } from './listParams.ts';

/** A column of a {@link DataTable}. */
export interface Column<T> {
  /** The header's text; unique in the table. */
  header: string;
  /** The cell of a row. */
  cell: (row: T) => ReactNode;
  /** The sort column (a key of the list's `sort`) when the header sorts the list. */
  sort?: string;
  /** The cell's `title` (a tooltip). */
  title?: (row: T) => string;
}

/** What a {@link DataTable} shows of a query (a TanStack Query result fits). */
export interface TableQuery<T> {
  data: { items: readonly T[]; total?: number } | undefined;
  error: unknown;
  isPending: boolean;
  isFetching?: boolean;
  isPlaceholderData?: boolean;
  refetch: () => unknown;
}

/** The pages under a {@link DataTable}: "1–25 of 4000 servers", the page size, the pages. */
export interface TablePaging {
  page: number;
  perPage: number;
  /** Plural noun of the items ("servers"). */
  noun: string;
  onPage: (page: number) => void;
  /** The page sizes offered (a size selector only with this). */
  pageSizes?: readonly number[];
  onPerPage?: (perPage: number) => void;
}

/** How a {@link DataTable} is sorted, and how to sort it. */
export interface TableSort {
  column: string;
  order: 1 | -1;
  onSort: (column: string) => void;
}

function SortHeader({ label, column, sort }: { label: string; column: string; sort: TableSort }) {
  const active = sort.column === column;
  return (
    <Table.Th aria-sort={active ? (sort.order === 1 ? 'ascending' : 'descending') : 'none'}>
      <UnstyledButton onClick={() => sort.onSort(column)} fw={700} fz="sm" aria-label={`Sort by ${label}`}>
        {label} {active ? (sort.order === 1 ? '▲' : '▼') : ''}
      </UnstyledButton>
    </Table.Th>
  );
}

function Footer({ paging, total }: { paging: TablePaging; total: number }) {
  const { page, perPage, noun } = paging;
  const pages = pageCount(total, perPage);
  return (
    <Group justify="space-between" mt="md" wrap="wrap">
      <Text size="sm" c="dimmed" aria-live="polite">
        {total === 0 ? `No ${noun}` : `${(page - 1) * perPage + 1}–${Math.min(page * perPage, total)} of ${total} ${noun}`}
      </Text>
      <Group gap="sm">
        {paging.pageSizes && paging.onPerPage ? (
          <Select
            aria-label={`${noun[0]?.toUpperCase() ?? ''}${noun.slice(1)} per page`}
            data={paging.pageSizes.map(String)}
            value={String(perPage)}
            onChange={(value) => paging.onPerPage?.(Number(value))}
            allowDeselect={false}
            w={80}
            size="xs"
          />
        ) : null}
        {pages > 1 ? (
          <Pagination
            total={pages}
            value={Math.min(page, pages)}
            onChange={paging.onPage}
            size="sm"
            getControlProps={(control) => ({ 'aria-label': `${control} page` })}
            getItemProps={(item) => ({ 'aria-label': `Page ${item}` })}
          />
        ) : null}
      </Group>
    </Group>
  );
}

/**
 * The table of a list page: the query's error (with Retry), skeleton rows while it loads,
 * the rows (dimmed while the next page loads over the last one), a text when there is none,
 * and the pages under it. Sorting headers with `sort`; the pages with `paging`.
 */
export function DataTable<T>({
  label,
  columns,
  query,
  rowKey,
  empty,
  minWidth = 600,
  skeletonRows = 4,
  paging,
  sort,
}: {
  /** The table's accessible name ("Servers"); "Loading servers" names its skeleton. */
  label: string;
  columns: readonly Column<T>[];
  query: TableQuery<T>;
  rowKey: (row: T) => string;
  /** What to say when the list is empty. */
  empty: ReactNode;
  minWidth?: number;
  skeletonRows?: number;
  paging?: TablePaging;
  sort?: TableSort;
}) {
  const items = query.data?.items;
  return (
    <>
      <ErrorNotice error={query.error} onRetry={() => void query.refetch()} />
      {query.isPending ? (
        <Stack gap="xs" aria-busy="true" aria-label={`Loading ${label.toLowerCase()}`}>
          {Array.from({ length: skeletonRows }, (_, i) => (
            <Skeleton key={i} h={28} />
          ))}
        </Stack>
      ) : items ? (
        <>
          <Table.ScrollContainer minWidth={minWidth}>
            <Table striped highlightOnHover aria-label={label} aria-busy={query.isFetching ?? false} style={{ opacity: query.isPlaceholderData ? 0.6 : 1 }}>
              <Table.Thead>
                <Table.Tr>
                  {columns.map((column) =>
                    column.sort !== undefined && sort ? (
                      <SortHeader key={column.header} label={column.header} column={column.sort} sort={sort} />
                    ) : (
                      <Table.Th key={column.header}>{column.header}</Table.Th>
                    ),
                  )}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((row) => (
                  <Table.Tr key={rowKey(row)}>
                    {columns.map((column) => (
                      <Table.Td key={column.header} title={column.title?.(row)}>
                        {column.cell(row)}
                      </Table.Td>
                    ))}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
          {items.length === 0 ? (
            <Center py="lg">
              <Text c="dimmed">{empty}</Text>
            </Center>
          ) : null}
          {paging ? <Footer paging={paging} total={query.data?.total ?? items.length} /> : null}
        </>
      ) : null}
    </>
  );
}
