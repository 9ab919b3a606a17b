/** Renders API answers as plain-text tables for `--output table`. */

type Row = Record<string, unknown>;
type Column = readonly [header: string, get: (item: Row, context: TableContext) => unknown];

/** How a table is rendered. */
export interface TableContext {
  /** The widest line, in characters. */
  readonly width: number;
  /** Server id → how to show it (name and address), for the steps of an execution. */
  readonly servers?: ReadonlyMap<string, string>;
}

/** The width used when stdout is not a terminal (and COLUMNS is not set). */
export const DEFAULT_WIDTH = 100;

/**
 * The width tables fit in: `COLUMNS` when set (as `ls` does), else the terminal's width,
 * else {@link DEFAULT_WIDTH}.
 */
export function tableWidth(stdout: { isTTY?: boolean; columns?: number }, env: Readonly<Record<string, string | undefined>>): number {
  const columns = Number(env.COLUMNS);
  if (Number.isInteger(columns) && columns > 0) return columns;
  if (stdout.isTTY && typeof stdout.columns === 'number' && stdout.columns > 0) return stdout.columns;
  return DEFAULT_WIDTH;
}

const data = (item: Row): Row => (typeof item.data === 'object' && item.data !== null ? (item.data as Row) : {});
const count = (value: unknown): number => (Array.isArray(value) ? value.length : 0);

function groupNames(groups: unknown, name: string): string {
  if (!Array.isArray(groups)) return '';
  const group = (groups as Row[]).find((g) => g.name === name);
  return Array.isArray(group?.permissions) ? (group.permissions as string[]).join(' ') : '';
}

function clusterServers(configuration: unknown): number {
  if (typeof configuration !== 'object' || configuration === null) return 0;
  const ids = new Set<string>();
  for (const members of Object.values(configuration)) {
    if (Array.isArray(members)) for (const m of members as Row[]) ids.add(String(m.server_id));
  }
  return ids.size;
}

const envelope: Column[] = [
  ['id', (m) => m.id],
  ['version', (m) => m.version],
];

/** The columns of a list of each model kind. */
const MODEL_COLUMNS: Record<string, Column[]> = {
  user: [...envelope, ['login', (m) => data(m).login], ['email', (m) => data(m).email], ['full_name', (m) => data(m).full_name], ['role_id', (m) => data(m).role_id]],
  role: [...envelope, ['name', (m) => data(m).name], ['api', (m) => groupNames(data(m).permissions, 'api')], ['playbook', (m) => groupNames(data(m).permissions, 'playbook')]],
  cluster: [...envelope, ['name', (m) => data(m).name], ['servers', (m) => clusterServers(data(m).configuration)]],
  server: [
    ...envelope,
    ['name', (m) => data(m).name],
    ['fqdn', (m) => data(m).fqdn],
    ['ip', (m) => data(m).ip],
    ['username', (m) => data(m).username],
    ['state', (m) => data(m).state],
    ['cluster_id', (m) => data(m).cluster_id],
  ],
  playbook_configuration: [
    ...envelope,
    ['name', (m) => data(m).name],
    ['playbook_id', (m) => data(m).playbook_id],
    ['cluster_id', (m) => data(m).cluster_id],
    ['servers', (m) => count(data(m).server_ids)],
  ],
  execution: [
    ...envelope,
    ['playbook', (m) => (data(m).playbook_configuration as Row | undefined)?.playbook_name],
    ['configuration', (m) => {
      const pc = data(m).playbook_configuration as Row | undefined;
      return pc ? `${String(pc.id)} v${String(pc.version)}` : '';
    }],
    ['state', (m) => data(m).state],
    ['started', (m) => time(data(m).time_started)],
    ['finished', (m) => time(data(m).time_finished)],
  ],
  execution_step: [
    ['finished', (m) => time(data(m).time_finished)],
    ['role', (m) => data(m).role],
    ['name', (m) => data(m).name],
    ['result', (m) => data(m).result],
    ['server', (m, context) => {
      const id = data(m).server_id;
      return typeof id === 'string' ? (context.servers?.get(id) ?? id) : id;
    }],
  ],
};

/** A Unix time as `YYYY-MM-DD HH:MM:SS` (UTC), or empty. */
function time(value: unknown): string {
  if (typeof value !== 'number' || value <= 0) return '';
  return new Date(value * 1000).toISOString().replace('T', ' ').slice(0, 19);
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/**
 * The pieces a line may break between: words (at spaces) and, inside a word, the parts of
 * a comma-separated list (`site=lab,role=ceph`). `space` tells whether a space went before.
 */
function pieces(paragraph: string): { text: string; space: boolean }[] {
  return paragraph
    .split(/ +/)
    .filter(Boolean)
    .flatMap((word) => (word.match(/[^,]+,?|,/g) ?? []).map((text, i) => ({ text, space: i === 0 })));
}

/** The widest piece of `text` (see {@link pieces}): the narrowest it wraps to unbroken. */
function widestPiece(text: string): number {
  return Math.max(0, ...text.split('\n').flatMap((p) => pieces(p).map((piece) => piece.text.length)));
}

/**
 * Splits `text` into lines of at most `width` characters: at spaces and after the commas of
 * a list where it can, inside a piece longer than the line otherwise.
 */
export function wrap(text: string, width: number): string[] {
  const size = Math.max(1, width);
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const piece of pieces(paragraph)) {
      const joined = line && piece.space ? `${line} ${piece.text}` : `${line}${piece.text}`;
      if (joined.length <= size) {
        line = joined;
        continue;
      }
      if (line) lines.push(line);
      let rest = piece.text;
      while (rest.length > size) {
        lines.push(rest.slice(0, size));
        rest = rest.slice(size);
      }
      line = rest;
    }
    lines.push(line);
  }
  return lines;
}

const GAP = 2;
const SEPARATOR = ' '.repeat(GAP);

/**
 * The widths of the columns in `width`: each as wide as its widest cell when that fits;
 * else each at least as wide as its widest unbreakable piece, the space left shared out
 * (the columns that want least served first). Null when even that does not fit.
 */
function columnWidths(headers: readonly string[], rows: readonly (readonly string[])[], width: number): number[] | null {
  const widest = (i: number, measure: (cell: string) => number) => Math.max(1, measure(headers[i] ?? ''), ...rows.map((r) => measure(r[i] ?? '')));
  const natural = headers.map((_, i) => widest(i, (c) => Math.max(...c.split('\n').map((l) => l.length))));
  const available = width - GAP * (headers.length - 1);
  const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
  if (sum(natural) <= available) return natural;
  const widths = headers.map((_, i) => widest(i, widestPiece));
  let left = available - sum(widths);
  if (left < 0) return null;
  const wanting = headers.map((_, i) => i).filter((i) => (natural[i] ?? 0) > (widths[i] ?? 0));
  const want = (i: number) => (natural[i] ?? 0) - (widths[i] ?? 0);
  wanting.sort((a, b) => want(a) - want(b));
  wanting.forEach((i, k) => {
    const grant = Math.min(Math.floor(left / (wanting.length - k)), want(i));
    widths[i] = (widths[i] ?? 0) + grant;
    left -= grant;
  });
  return widths;
}

/** `key  value` lines, the values wrapped in what is left of `width` after the keys. */
function fields(pairs: readonly (readonly [string, string])[], width: number): string[] {
  const keyWidth = Math.min(Math.max(0, ...pairs.map(([k]) => k.length)), Math.floor(width / 3));
  const valueWidth = Math.max(1, width - keyWidth - GAP);
  return pairs.flatMap(([k, v]) => {
    const keys = wrap(k, keyWidth);
    const values = wrap(v, valueWidth);
    return Array.from({ length: Math.max(keys.length, values.length) }, (_, n) => `${(keys[n] ?? '').padEnd(keyWidth)}${SEPARATOR}${values[n] ?? ''}`.trimEnd());
  });
}

/**
 * The rows as a grid of columns, cells wrapped within their column; when the columns cannot
 * fit without breaking words (long ids), one record per row instead (`-[ 1 ]` then
 * `header  value` lines), as psql's expanded display does.
 */
function grid(headers: readonly string[], rows: readonly (readonly string[])[], width: number): string {
  const widths = columnWidths(headers, rows, width);
  if (!widths) {
    return (
      rows
        .flatMap((row, n) => {
          const title = `-[ ${n + 1} ]`;
          return [`${title}${'-'.repeat(Math.max(0, Math.min(width, 40) - title.length))}`, ...fields(headers.map((h, i) => [h, row[i] ?? ''] as const), width)];
        })
        .join('\n') + '\n'
    );
  }
  const lines = (cells: readonly string[]): string[] => {
    const wrapped = cells.map((c, i) => wrap(c, widths[i] ?? 1));
    const height = Math.max(...wrapped.map((w) => w.length));
    return Array.from({ length: height }, (_, n) => wrapped.map((w, i) => (w[n] ?? '').padEnd(widths[i] ?? 0)).join(SEPARATOR).trimEnd());
  };
  return [...lines(headers), widths.map((w) => '-'.repeat(w)).join(SEPARATOR), ...rows.flatMap(lines)].join('\n') + '\n';
}

function isModel(value: unknown): value is Row {
  return typeof value === 'object' && value !== null && 'model' in value && 'data' in value && 'id' in value;
}

function rowsTable(items: readonly unknown[], context: TableContext): string {
  if (items.length === 0) return '(none)\n';
  const first = items[0];
  const kind = isModel(first) ? String(first.model) : '';
  let columns: Column[] | undefined = MODEL_COLUMNS[kind];
  if (!columns) {
    const keys = [...new Set(items.flatMap((i) => (typeof i === 'object' && i !== null ? Object.keys(i) : [])))];
    columns = keys.map((k) => [k, (row: Row) => row[k]] as const);
  }
  if (items.some((i) => isModel(i) && typeof i.time_deleted === 'number' && i.time_deleted > 0)) {
    columns = [...columns, ['deleted', (m) => time(m.time_deleted)]];
  }
  const rows = items.map((item) => columns.map(([, get]) => cell(get((typeof item === 'object' && item !== null ? item : { value: item }) as Row, context))));
  return grid(
    columns.map(([h]) => h),
    rows,
    context.width,
  );
}

function flatten(value: Row, prefix = ''): [string, string][] {
  const out: [string, string][] = [];
  for (const [key, v] of Object.entries(value)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && (key === 'data' || key === 'time') && prefix === '') out.push(...flatten(v as Row, name));
    else out.push([name, key.startsWith('time_') && typeof v === 'number' && v > 0 ? `${time(v)} (${v})` : cell(v)]);
  }
  return out;
}

/**
 * Renders an answer: a list (or a page, with a line about the page) as one row per item
 * with the columns of its model kind; a single object as `field  value` lines, `data`
 * fields flattened as `data.name`. No line is wider than `context.width`: long cells and
 * values wrap within their column, and a list whose columns cannot fit is shown as one
 * record per item.
 */
export function renderTable(value: unknown, context: TableContext = { width: DEFAULT_WIDTH }): string {
  if (Array.isArray(value)) return rowsTable(value, context);
  if (typeof value === 'object' && value !== null) {
    const object = value as Row;
    if (Array.isArray(object.items)) {
      const table = rowsTable(object.items, context);
      if (typeof object.total !== 'number') return table;
      const pages = Math.max(1, Math.ceil(object.total / Math.max(1, Number(object.per_page) || 1)));
      return `${table}page ${String(object.page)} of ${pages}, ${object.total} in all\n`;
    }
    const pairs = flatten(object);
    if (pairs.length === 0) return '(empty)\n';
    return `${fields(pairs, context.width).join('\n')}\n`;
  }
  return `${cell(value)}\n`;
}
