/**
 * The state of a list kept in the address: its page, page size, sort and filters are search
 * parameters (`?q=node&state=off&page=3&per_page=50&sort=ip&order=desc`), so that a reload,
 * Back and a shared link keep them. Defaults are left out of the address.
 */
import { useDebouncedCallback } from '@mantine/hooks';
import { useState } from 'react';
import { useSearchParams } from 'react-router';

/** The page sizes a list offers, the first its default. */
export const PAGE_SIZES: readonly number[] = [25, 50, 100];

/** How a list keeps its state in the address. */
export interface ListSpec<F extends string = string> {
  /** The filters' parameter names (`q`, `state`, ...): text, absent when empty. */
  readonly filters?: readonly F[];
  /** The page sizes offered, the first the default (PAGE_SIZES when absent). */
  readonly pageSizes?: readonly number[];
  /** The columns it sorts by, the first the default (no sort when absent). */
  readonly sortColumns?: readonly string[];
  /** Put before every parameter name: for a list in a page whose address holds other state. */
  readonly prefix?: string;
}

/** A list's state as the address has it. */
export interface ListState<F extends string = string> {
  /** From 1. */
  page: number;
  perPage: number;
  /** The sort column, or null when the list does not sort. */
  sort: string | null;
  /** 1 ascending, -1 descending. */
  order: 1 | -1;
  /** Each filter's value, null when absent. */
  filters: Record<F, string | null>;
}

/** A change of a list's state. Changing the filters or the page size goes back to page 1, unless `page` is given too. */
export interface ListChange<F extends string = string> {
  page?: number;
  perPage?: number;
  sort?: string;
  order?: 1 | -1;
  filters?: Partial<Record<F, string | null>>;
}

/** How many pages `total` items fill, `perPage` a page: at least one. */
export function pageCount(total: number, perPage: number): number {
  return Math.max(1, Math.ceil(total / perPage));
}

function names(spec: ListSpec) {
  const prefix = spec.prefix ?? '';
  return { page: `${prefix}page`, perPage: `${prefix}per_page`, sort: `${prefix}sort`, order: `${prefix}order`, filter: (name: string) => `${prefix}${name}` };
}

/** Reads a list's state from the address; what is missing or invalid takes its default. */
export function readListParams<F extends string>(params: URLSearchParams, spec: ListSpec<F>): ListState<F> {
  const n = names(spec);
  const sizes = spec.pageSizes ?? PAGE_SIZES;
  const perPage = Number(params.get(n.perPage));
  const page = Number(params.get(n.page));
  const sort = params.get(n.sort);
  const filters = {} as Record<F, string | null>;
  for (const name of spec.filters ?? []) filters[name] = params.get(n.filter(name)) || null;
  return {
    page: Number.isSafeInteger(page) && page >= 1 ? page : 1,
    perPage: sizes.includes(perPage) ? perPage : (sizes[0] ?? 25),
    sort: spec.sortColumns ? (sort !== null && spec.sortColumns.includes(sort) ? sort : (spec.sortColumns[0] ?? null)) : null,
    order: params.get(n.order) === 'desc' ? -1 : 1,
    filters,
  };
}

/** The address after a change of the list's state: the other parameters stay, defaults are left out. */
export function writeListParams<F extends string>(params: URLSearchParams, change: ListChange<F>, spec: ListSpec<F>): URLSearchParams {
  const n = names(spec);
  const next = new URLSearchParams(params);
  const set = (name: string, value: string | null) => {
    if (value === null || value === '') next.delete(name);
    else next.set(name, value);
  };
  const sizes = spec.pageSizes ?? PAGE_SIZES;
  for (const [name, value] of Object.entries(change.filters ?? {}) as [F, string | null | undefined][]) {
    if (value !== undefined) set(n.filter(name), value);
  }
  if (change.perPage !== undefined) set(n.perPage, change.perPage === sizes[0] ? null : String(change.perPage));
  if (change.sort !== undefined) set(n.sort, change.sort === spec.sortColumns?.[0] ? null : change.sort);
  if (change.order !== undefined) set(n.order, change.order === -1 ? 'desc' : null);
  const resetPage = change.filters !== undefined || change.perPage !== undefined;
  if (change.page !== undefined) set(n.page, change.page <= 1 ? null : String(change.page));
  else if (resetPage) next.delete(n.page);
  return next;
}

/**
 * A list's state in the address and how to change it. A new page is a new history entry
 * (Back goes to the page before); a change of filters, size or sort replaces the entry.
 * `spec` should be a constant of the module.
 */
export function useListParams<F extends string>(spec: ListSpec<F>) {
  const [params, setParams] = useSearchParams();
  const state = readListParams(params, spec);
  const change = (delta: ListChange<F>) => {
    const paging = Object.keys(delta).every((key) => key === 'page');
    setParams((current) => writeListParams(current, delta, spec), { replace: !paging });
  };
  return {
    ...state,
    change,
    setPage: (page: number) => change({ page }),
    setFilter: (name: F, value: string | null) => change({ filters: { [name]: value } as Partial<Record<F, string | null>> }),
    /** The `paging` of a DataTable showing this list of `noun` (its page, size and sizes, kept here). */
    paging: (noun: string) => ({
      page: state.page,
      perPage: state.perPage,
      noun,
      onPage: (page: number) => change({ page }),
      pageSizes: spec.pageSizes ?? PAGE_SIZES,
      onPerPage: (perPage: number) => change({ perPage }),
    }),
  };
}

/**
 * The text of a search box whose value is kept in the address (`committed`): the box shows
 * what is typed, and `commit` gets the trimmed text once typing pauses (300 ms). When the
 * address changes otherwise (Back, a link), the box follows it.
 */
export function useSearchText(committed: string, commit: (text: string) => void, delay = 300) {
  const [text, setText] = useState(committed);
  const [seen, setSeen] = useState(committed);
  if (committed !== seen) {
    setSeen(committed);
    if (committed !== text.trim()) setText(committed);
  }
  const commitLater = useDebouncedCallback((value: string) => commit(value.trim()), delay);
  return {
    text,
    setText: (value: string) => {
      setText(value);
      commitLater(value);
    },
  };
}
