// What a list asks for and what it answers, independent of how a table stores its rows:
// the shapes shared by the routes (`http/`), the services and the repositories (`db/`),
// which all import them from here, so that no layer reaches into another for a type.

/** One stored version of a model: the envelope without `model`, and its `data`. */
export interface Stored<D> {
  readonly id: string;
  readonly version: number;
  readonly time_updated: number;
  readonly time_deleted: number;
  readonly initiator_id: string | null;
  readonly data: D;
}

/**
 * One stored version with its `data` as stored: the JSON text, in UTF-8, unparsed; `pk` is
 * the row's key (a row's data is never rewritten, so `pk` names its content for good).
 */
export interface StoredText extends Omit<Stored<unknown>, 'data'> {
  readonly pk: number;
  readonly data: Buffer;
}

/**
 * An item of a list page to write as stored: the row, when its data JSON is exactly what the
 * API serves, or else the parsed model, to serialize.
 */
export type ListItem<D> = { readonly row: StoredText; readonly model?: undefined } | { readonly row?: undefined; readonly model: Stored<D> };

/** What a list asks for: a page, or everything, with a filter and an order. */
export interface ListRequest {
  readonly page: number;
  readonly perPage: number;
  readonly all: boolean;
  readonly filter?: string | undefined;
  readonly sortBy?: string | undefined;
  /** The page only: `total` is not counted (then it is the page's length). */
  readonly withoutTotal?: boolean;
}

/** A page of results and the number of all matches. */
export interface Page<T> {
  readonly items: T[];
  readonly total: number;
}

/**
 * Every match of a list, read in batches: the keys of the matching rows were taken in order
 * when the cursor was made (rows are never rewritten, so a key names its content for good),
 * and each `next()` reads the following rows, a bounded number of rows and bytes at a time;
 * an empty batch is the end.
 */
export interface ListCursor<T> {
  /** How many rows matched. */
  readonly total: number;
  next(): Promise<T[]>;
}

/** A cursor whose items are mapped by `fn`. */
export function mapCursor<T, U>(cursor: ListCursor<T>, fn: (item: T) => U): ListCursor<U> {
  return { total: cursor.total, next: async () => (await cursor.next()).map(fn) };
}
