import { describe, expect, it } from 'vitest';
import { pageCount, readListParams, writeListParams, type ListSpec } from './listParams.ts';

const SPEC: ListSpec<'q' | 'state'> = { filters: ['q', 'state'], pageSizes: [25, 50, 100], sortColumns: ['name', 'ip'] };
const read = (search: string, spec = SPEC) => readListParams(new URLSearchParams(search), spec);
const write = (search: string, change: Parameters<typeof writeListParams<'q' | 'state'>>[1], spec = SPEC) => writeListParams(new URLSearchParams(search), change, spec).toString();

describe('a list in the address', () => {
  it('reads page, size, sort and filters, with defaults for what is missing or invalid', () => {
    expect(read('')).toEqual({ page: 1, perPage: 25, sort: 'name', order: 1, filters: { q: null, state: null } });
    expect(read('q=node&state=off&page=3&per_page=50&sort=ip&order=desc')).toEqual({ page: 3, perPage: 50, sort: 'ip', order: -1, filters: { q: 'node', state: 'off' } });
    expect(read('page=0&per_page=7&sort=evil&order=up')).toEqual({ page: 1, perPage: 25, sort: 'name', order: 1, filters: { q: null, state: null } });
    expect(read('page=2.5&q=')).toMatchObject({ page: 1, filters: { q: null } });
    expect(read('sort=name', { filters: [] })).toMatchObject({ sort: null, perPage: 25 });
  });

  it('writes changes, leaving defaults out and the other parameters as they are', () => {
    expect(write('tab=x', { page: 3 })).toBe('tab=x&page=3');
    expect(write('page=3', { page: 1 })).toBe('');
    expect(write('', { perPage: 50, sort: 'ip', order: -1 })).toBe('per_page=50&sort=ip&order=desc');
    expect(write('per_page=50&sort=ip&order=desc', { perPage: 25, sort: 'name', order: 1 })).toBe('');
    expect(write('q=a', { filters: { q: 'b b', state: null } })).toBe('q=b+b');
  });

  it('goes back to page 1 when the filters or the page size change, not when the sort does', () => {
    expect(write('q=a&page=4', { filters: { q: 'ab' } })).toBe('q=ab');
    expect(write('page=4', { perPage: 100 })).toBe('per_page=100');
    expect(write('page=4', { sort: 'ip' })).toBe('page=4&sort=ip');
    expect(write('page=4', { filters: { state: 'off' }, page: 2 })).toBe('page=2&state=off');
  });

  it('keeps two lists of a page apart with a prefix', () => {
    const versions: ListSpec = { prefix: 'versions_', pageSizes: [20] };
    expect(readListParams(new URLSearchParams('page=3&versions_page=2'), versions)).toMatchObject({ page: 2, perPage: 20 });
    expect(writeListParams(new URLSearchParams('page=3'), { page: 5 }, versions).toString()).toBe('page=3&versions_page=5');
  });

  it('counts pages', () => {
    expect(pageCount(0, 25)).toBe(1);
    expect(pageCount(25, 25)).toBe(1);
    expect(pageCount(26, 25)).toBe(2);
  });
});
