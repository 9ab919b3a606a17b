import type { ListItem, ListRequest, Page, Stored } from '../db/versioned.repository.js';

const OPEN = Buffer.from('{"items":[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('}');

/**
 * The JSON body of a list page (`{"items": [...], "page", "per_page", "total"}`, as
 * `pageBody` and the list schema make it) written from stored rows: each row's envelope,
 * then its data JSON as stored, copied as bytes, never parsed nor serialized. Only for rows
 * whose data is exactly what the API serves (`ListItem.row`); a parsed model goes through
 * `serialize` (the response schema's serializer of one model, with its `model` name).
 */
export function listJson<D>(request: ListRequest, page: Page<ListItem<D>>, model: string, serialize: (model: Stored<D>) => string): Buffer {
  const name = JSON.stringify(model);
  const parts: Buffer[] = [OPEN];
  page.items.forEach((item, i) => {
    if (i > 0) parts.push(COMMA);
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
  const pageNumber = request.all ? 1 : request.page;
  const perPage = request.all ? page.total : request.perPage;
  parts.push(Buffer.from(`],"page":${pageNumber},"per_page":${perPage},"total":${page.total}}`));
  return Buffer.concat(parts);
}
