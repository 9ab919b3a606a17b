/** Renders API answers as plain-text tables for `--output table`. */

type Row = Record<string, unknown>;
type Column = readonly [header: string, get: (item: Row) => unknown];

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
    ['server_id', (m) => data(m).server_id],
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

function grid(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n') + '\n';
}

function isModel(value: unknown): value is Row {
  return typeof value === 'object' && value !== null && 'model' in value && 'data' in value && 'id' in value;
}

function rowsTable(items: readonly unknown[]): string {
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
  const rows = items.map((item) => columns.map(([, get]) => cell(get((typeof item === 'object' && item !== null ? item : { value: item }) as Row))));
  return grid(
    columns.map(([h]) => h),
    rows,
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
 * fields flattened as `data.name`.
 */
export function renderTable(value: unknown): string {
  if (Array.isArray(value)) return rowsTable(value);
  if (typeof value === 'object' && value !== null) {
    const object = value as Row;
    if (Array.isArray(object.items)) {
      const table = rowsTable(object.items);
      if (typeof object.total !== 'number') return table;
      const pages = Math.max(1, Math.ceil(object.total / Math.max(1, Number(object.per_page) || 1)));
      return `${table}page ${String(object.page)} of ${pages}, ${object.total} in all\n`;
    }
    const pairs = flatten(object);
    if (pairs.length === 0) return '(empty)\n';
    const width = Math.max(...pairs.map(([k]) => k.length));
    return pairs.map(([k, v]) => `${k.padEnd(width)}  ${v}`.trimEnd()).join('\n') + '\n';
  }
  return `${cell(value)}\n`;
}
