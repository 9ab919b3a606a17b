import { Readable } from 'node:stream';
import type { ListCursor, ListItem, ListRequest, Page, Stored } from '../domain/list-types.js';

const OPEN = Buffer.from('{"items":[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('}');
/** The bytes an `all` answer holds ready before it waits for the client to take them. */
const STREAM_HIGH_WATER_BYTES = 64 * 1024;

/**
 * Turns for the batches of streamed answers: one batch of one answer per turn of the event
 * loop (round robin), whatever the number of answers under way, so that together they hold
 * the loop for one batch at a time and other requests are read and answered in between.
 */
class BatchTurns {
  private readonly waiting: (() => void)[] = [];
  private scheduled = false;

  /** Resolves when the caller may read and write its next batch. */
  next(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.waiting.shift()?.();
      if (this.waiting.length > 0) this.schedule();
    });
  }
}

const turns = new BatchTurns();

/** The JSON of the items of a list, each as stored when it can be, else serialized. */
function itemParts<D>(items: readonly ListItem<D>[], name: string, serialize: (model: Stored<D>) => string, first: boolean): Buffer[] {
  const parts: Buffer[] = [];
  items.forEach((item, i) => {
    if (i > 0 || !first) parts.push(COMMA);
    if (!item.row) {
      parts.push(Buffer.from(serialize(item.model)));
      return;
    }
    const r = item.row;
    const envelope =
      `{"id":${JSON.stringify(r.id)},"model":${name},"version":${r.version},"time_updated":${r.time_updated},` +
      `"time_deleted":${r.time_deleted},"initiator_id":${JSON.stringify(r.initiator_id)},"data":`;
    parts.push(Buffer.from(envelope), r.data, CLOSE);
  });
  return parts;
}

/**
 * The JSON body of a list page (`{"items": [...], "page", "per_page", "total"}`, as
 * `pageBody` and the list schema make it) written from stored rows: each row's envelope,
 * then its data JSON as stored, copied as bytes, never parsed nor serialized. Only for rows
 * whose data is exactly what the API serves (`ListItem.row`); a parsed model goes through
 * `serialize` (the response schema's serializer of one model, with its `model` name).
 */
export function listJson<D>(request: ListRequest, page: Page<ListItem<D>>, model: string, serialize: (model: Stored<D>) => string): Buffer {
  const parts = [OPEN, ...itemParts(page.items, JSON.stringify(model), serialize, true)];
  const pageNumber = request.all ? 1 : request.page;
  const perPage = request.all ? page.total : request.perPage;
  parts.push(Buffer.from(`],"page":${pageNumber},"per_page":${perPage},"total":${page.total}}`));
  return Buffer.concat(parts);
}

/**
 * The body of an `all` list (`page: 1`, `per_page` and `total` the number of items), as a
 * stream: one batch of the cursor at a time, read only when the client has taken the bytes
 * before (the stream's high-water mark, then the socket's `drain`), one batch of all the
 * answers under way per turn of the event loop (`BatchTurns`). What one answer holds in memory is a batch, whatever the number of
 * matches, and other requests run while it is written.
 */
export function listStream<D>(cursor: ListCursor<ListItem<D>>, model: string, serialize: (model: Stored<D>) => string): Readable {
  const name = JSON.stringify(model);
  async function* chunks(): AsyncGenerator<Buffer> {
    yield OPEN;
    let written = 0;
    for (;;) {
      await turns.next();
      const items = await cursor.next();
      if (items.length === 0) break;
      yield Buffer.concat(itemParts(items, name, serialize, written === 0));
      written += items.length;
    }
    yield Buffer.from(`],"page":1,"per_page":${written},"total":${written}}`);
  }
  return Readable.from(chunks(), { objectMode: false, highWaterMark: STREAM_HIGH_WATER_BYTES });
}
