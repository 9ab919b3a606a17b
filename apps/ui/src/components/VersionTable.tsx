import { Badge, Table } from '@mantine/core';
import type { ReactNode } from 'react';

/** A column of a version table after the first one ("Version"). */
export interface VersionColumn<T> {
  header: string;
  cell: (version: T) => ReactNode;
}

/**
 * The versions of a model, one row each: first the version number (with a "deleted" badge on a
 * deleted version unless `markDeleted` is false), then the page's own columns. In a scroll
 * container when `minWidth` is given.
 */
export function VersionTable<T extends { version: number; time_deleted?: number | null }>({
  items,
  columns,
  label = 'Version history',
  minWidth,
  markDeleted = true,
}: {
  items: readonly T[];
  columns: readonly VersionColumn<T>[];
  label?: string;
  minWidth?: number;
  markDeleted?: boolean;
}) {
  const table = (
    <Table striped aria-label={label}>
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Version</Table.Th>
          {columns.map((c) => (
            <Table.Th key={c.header}>{c.header}</Table.Th>
          ))}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {items.map((v) => (
          <Table.Tr key={v.version}>
            <Table.Td>
              {v.version}
              {markDeleted && v.time_deleted ? (
                <Badge ml={6} size="xs" color="red" tt="none">
                  deleted
                </Badge>
              ) : null}
            </Table.Td>
            {columns.map((c) => (
              <Table.Td key={c.header}>{c.cell(v)}</Table.Td>
            ))}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
  return minWidth === undefined ? table : <Table.ScrollContainer minWidth={minWidth}>{table}</Table.ScrollContainer>;
}
