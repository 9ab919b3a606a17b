import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { random } from '@carapace/test-support/random';
import { addServer } from '@carapace/test-support/facts';
import { Harness, type Answer } from '@carapace/test-support/harness';

/**
 * A fuzzer over every operation of `GET /v1/openapi.json` (issue 13): bad bodies, queries,
 * path parameters and headers, built from each operation's own schema plus the property
 * names that once broke lists (`toString`, `__proto__`, ...). Every answer must be below
 * 500, and every error must carry the contract's body with `Content-Type:
 * application/json` exactly. The run is deterministic (a seeded generator) and bounded in
 * count; it also records the longest event-loop stall seen while it runs.
 */

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minimum?: number;
  minLength?: number;
  default?: unknown;
};
interface Operation {
  readonly method: Method;
  readonly path: string;
  readonly params: { name: string; in: string }[];
  readonly body?: JsonSchema;
}

const BUILTIN_NAMES = ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf', 'prototype', 'isPrototypeOf'];

function nested(depth: number, leaf: unknown = 1, asArray = false): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = asArray ? [value] : { a: value };
  return value;
}

/** Hostile values for any field. */
const BAD_VALUES: unknown[] = [
  null,
  0,
  -1,
  1.5,
  1e308,
  '',
  ' ',
  'x'.repeat(10_000),
  '-oProxyCommand=touch /tmp/pwned',
  '../../etc/passwd',
  '\u0000\uffff\ud800',
  true,
  [],
  {},
  [1, 'a', null],
  { __proto__: { polluted: true }, constructor: { prototype: 1 } },
  nested(200),
  nested(1500, 1, true),
];

/** Numbers a lenient parser would take (as 16, 10, 1, 5, 5). */
const LENIENT_NUMBERS = ['0x10', '1e1', '1.5', ' 5', '+5'];
/** Query values that are not what a parameter takes. */
const BAD_QUERY = ['0', '-1', ...LENIENT_NUMBERS, 'abc', '99999999999999999999', '', 'Infinity', 'NaN', '%00', 'yes', 'x'.repeat(5000)];

function filterValues(): string[] {
  const values = [
    '{',
    '[]',
    '1',
    'null',
    '"x"',
    '{"name":{}}',
    '{"name":{"in":"x"}}',
    '{"name":{"in":[[1]]}}',
    '{"name":{"regexp":"(a"}}',
    '{"name":{"regexp":"^(([0-9a-f]|-)+)+Z$"}}',
    '{"id":{"regexp":"^(([0-9a-f]|-)+)+Z$"}}',
    '{"name":{"regexp":"(a)\\\\1"}}',
    '{"name":{"regexp":"(?=a)"}}',
    '{"time_deleted":{"ne":0}}',
    '{"data.x":1}',
    '{"name.a.b.c.d.e.f.g.h.i":1}',
    JSON.stringify({ name: nested(300) }),
    '{"name":{"gt":{"a":1}}}',
  ];
  for (const n of BUILTIN_NAMES) {
    values.push(`{"${n}":1}`, `{"name":{"${n}":1}}`, `{"${n}":{"eq":1}}`);
  }
  return values;
}

function sortValues(): string[] {
  const values = ['{', '[]', '{"name":2}', '{"name":"asc"}', '{"nope":1}', '{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1}'];
  for (const n of BUILTIN_NAMES) values.push(`{"${n}":1}`, `{"${n}":-1}`);
  return values;
}

/** A plausible value of a schema, to mutate from. */
function sample(schema: JsonSchema | undefined, name: string, ids: Record<string, string>): unknown {
  if (!schema) return null;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const alt = schema.anyOf ?? schema.oneOf;
  if (alt?.length) return sample(alt[0], name, ids);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, sub] of Object.entries(schema.properties ?? {})) out[key] = sample(sub, key, ids);
      return out;
    }
    case 'array':
      return [sample(schema.items, name, ids)];
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'string':
    default:
      if (ids[name]) return ids[name];
      if (schema.format === 'uuid') return ids.cluster_id;
      if (name === 'host') return '10.9.9.9';
      if (name === 'email') return `fuzz${Math.floor(Math.random() * 1e9)}@example.com`;
      return `fuzz-${name}-${Math.floor(Math.random() * 1e9)}`;
  }
}

/** Every property path of a sample (objects only), to mutate one at a time. */
function paths(value: unknown, prefix: string[] = []): string[][] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const out: string[][] = [];
  for (const [key, sub] of Object.entries(value)) {
    out.push([...prefix, key]);
    if (prefix.length < 2) out.push(...paths(sub, [...prefix, key]));
  }
  return out;
}

function withValue(base: unknown, path: string[], value: unknown): unknown {
  const copy = structuredClone(base) as Record<string, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = path[path.length - 1] as string;
  if (value === undefined) delete node[last];
  else Object.defineProperty(node, last, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

describe('fuzzing every operation of the OpenAPI document', () => {
  let h: Harness;
  let root: string;
  const ids: Record<string, string> = {};
  let operations: Operation[] = [];
  /** Version 1 of each seeded model, as read before the fuzzing: versions are never rewritten. */
  const seeded = new Map<string, unknown>();

  beforeAll(async () => {
    h = await Harness.start();
    root = await h.rootToken();
    const cluster = await h.request('POST', '/v1/cluster/', { token: root, body: { name: 'fuzz-cluster' } });
    ids.cluster_id = cluster.json.id;
    const server = await addServer(h);
    ids.server_id = server.id;
    const config = await h.request('POST', '/v1/playbook_configuration/', {
      token: root,
      body: { name: 'fuzz-config', cluster_id: ids.cluster_id, playbook_id: 'hello_world', server_ids: [server.id], hints: [] },
    });
    ids.playbook_configuration_id = config.json.id;
    const execution = await h.request('POST', '/v1/execution/', { token: root, body: { playbook_configuration: { id: config.json.id, version: 1 } } });
    ids.execution_id = execution.json.id;
    // Canceled: a terminal execution, so that `follow=yes` on its log ends at once.
    await h.request('DELETE', `/v1/execution/${execution.json.id}/`, { token: root });
    const user = await h.userWith('fuzz-user', ['view_user']);
    ids.user_id = user.id;
    const roles = await h.request('GET', '/v1/role/?filter={"name":"role-of-fuzz-user"}', { token: root });
    ids.role_id = roles.json.items[0].id;
    ids.runner = 'fuzz-runner';
    await h.request('POST', '/v1/runner/', { token: root, body: { name: 'fuzz-runner' } });

    for (const model of ['cluster', 'server', 'playbook_configuration', 'execution', 'user', 'role']) {
      const path = `/v1/${model}/${ids[`${model}_id`]}/version/1/`;
      seeded.set(path, (await h.request('GET', path, { token: root })).json);
    }
    const doc = (await h.request('GET', '/v1/openapi.json')).json as {
      paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; requestBody?: { content: Record<string, { schema: JsonSchema }> } }>>;
    };
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const body = op.requestBody && Object.values(op.requestBody.content)[0]?.schema;
        operations.push({ method: method.toUpperCase() as Method, path, params: op.parameters ?? [], ...(body ? { body } : {}) });
      }
    }
    operations = operations.filter((op) => op.path !== '/v1/auth' || op.method !== 'DELETE');
  });

  afterAll(async () => {
    await h?.stop();
  });

  function idFor(path: string, param: string): string {
    if (param === 'version') return '1';
    if (param === 'cluster_id') return ids.cluster_id ?? '';
    if (param === 'name') return ids.runner ?? '';
    if (param === 'token') return 'ab'.repeat(32);
    const model = /^\/v1\/([a-z_]+)\//.exec(path)?.[1] ?? '';
    return ids[`${model}_id`] ?? ids.cluster_id ?? '';
  }

  function url(op: Operation, values: Record<string, string> = {}, query = ''): string {
    const filled = op.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? idFor(op.path, name)));
    return `${filled}/${query ? `?${query}` : ''}`;
  }

  it('answers every malformed request with a 4xx and the contract error body, never a 5xx', async () => {
    const seen: { method: string; url: string; status: number; body: string; ms: number }[] = [];
    const failures: string[] = [];
    const rnd = random(13);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const started = performance.now();

    const check = (method: string, target: string, res: Answer, ms: number) => {
      seen.push({ method, url: target, status: res.status, body: res.body.slice(0, 200), ms });
      const where = `${method} ${target.slice(0, 160)} → ${res.status} ${res.body.slice(0, 160)}`;
      if (res.status >= 500) failures.push(`5xx: ${where}`);
      else if (res.status >= 400) {
        const body = res.json as Record<string, unknown> | undefined;
        if (res.headers['content-type'] !== 'application/json') failures.push(`content-type ${String(res.headers['content-type'])}: ${where}`);
        else if (
          !body ||
          body.code !== res.status ||
          typeof body.error !== 'string' ||
          typeof body.description !== 'string' ||
          body.message !== body.description
        ) {
          failures.push(`error body: ${where}`);
        }
      }
    };
    const send = async (method: Method, target: string, options: Parameters<Harness['request']>[2] = {}) => {
      const t0 = performance.now();
      const res = await h.request(method, target, options);
      check(method, target, res, performance.now() - t0);
      return res;
    };

    for (const op of operations) {
      const isList = op.params.some((p) => p.in === 'query' && p.name === 'filter');
      const pathParams = op.params.filter((p) => p.in === 'path').map((p) => p.name);

      // Headers: who is asking, and in which form.
      for (const authorization of [undefined, '', 'Bearer', 'Bearer x.y.z', 'x'.repeat(5000), `bearer ${root}`, `BEARER ${root}`, `Token ${root}`, `${root}x`]) {
        await send(op.method, url(op), { ...(authorization !== undefined ? { headers: { authorization } } : {}) });
      }

      // Path parameters. A number in the path is decimal digits only: a lenient one is a 400.
      for (const name of pathParams) {
        for (const value of ['x', '-1', '0', '1.5', '0x10', '1e1', '00000000-0000-4000-8000-999999999999', '..', '\u0000', 'a'.repeat(300), ...BUILTIN_NAMES]) {
          const res = await send(op.method, url(op, { [name]: value }), { token: root });
          if (name === 'version' && ['1.5', '0x10', '1e1'].includes(value) && res.status !== 400) {
            failures.push(`lenient version ${value} → ${res.status}: ${op.method} ${op.path}`);
          }
        }
      }

      // Query parameters.
      for (const param of op.params.filter((p) => p.in === 'query')) {
        const values = param.name === 'filter' ? filterValues() : param.name === 'sort_by' ? sortValues() : BAD_QUERY;
        for (const value of values) {
          if (param.name === 'follow' && /^(1|y|yes|t|true|on)$/i.test(value)) continue;
          const res = await send(op.method, url(op, {}, `${param.name}=${encodeURIComponent(value)}`), { token: root });
          if ((param.name === 'page' || param.name === 'per_page') && LENIENT_NUMBERS.includes(value) && res.status !== 400) {
            failures.push(`lenient ${param.name}=${value} → ${res.status}: ${op.method} ${op.path}`);
          }
        }
      }
      if (isList) {
        await send(op.method, url(op, {}, 'page=1&page=2'), { token: root });
        await send(op.method, url(op, {}, 'unknown=1'), { token: root });
        await send(op.method, url(op, {}, 'all=yes&per_page=1'), { token: root });
      }

      // Bodies: not JSON, the wrong JSON, then one hostile value at a time.
      if (op.method === 'POST' || op.method === 'PUT') {
        const target = url(op);
        for (const raw of ['', '{', 'null', '[]', '"x"', '1e400', JSON.stringify(nested(2000)), JSON.stringify({ __proto__: { admin: true } })]) {
          await send(op.method, target, { token: root, raw, headers: { 'content-type': 'application/json' } });
        }
        for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16']) {
          await send(op.method, target, { token: root, raw: 'a=1', headers: { 'content-type': contentType } });
        }
        let base: unknown = sample(op.body, '', ids);
        if (op.method === 'PUT') base = (await h.request('GET', target, { token: root })).json;
        const candidates = paths(base);
        for (const path of candidates) {
          const picks = [undefined, ...BAD_VALUES].filter(() => rnd() < 0.6);
          for (const value of picks) {
            await send(op.method, target, { token: root, body: withValue(base, path, value) });
          }
        }
        for (const name of BUILTIN_NAMES) {
          await send(op.method, target, { token: root, raw: JSON.stringify({ [name]: 1 }).replace(/^/, ''), headers: { 'content-type': 'application/json' } });
        }
      }
    }

    delay.disable();
    const elapsedS = (performance.now() - started) / 1000;
    const fiveXX = seen.filter((s) => s.status >= 500).length;
    const stallMs = delay.max / 1e6;
    console.log(
      `fuzz: ${seen.length} requests over ${operations.length} operations in ${elapsedS.toFixed(1)} s; ` +
        `5xx: ${fiveXX}; longest event-loop stall ${stallMs.toFixed(1)} ms (p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms)`,
    );
    const slowest = [...seen].sort((a, b) => b.ms - a.ms).slice(0, 5);
    console.log(`slowest: ${slowest.map((s) => `${s.ms.toFixed(0)} ms ${s.method} ${decodeURIComponent(s.url).slice(0, 100)} → ${s.status}`).join('\n')}`);
    expect(failures.slice(0, 20)).toEqual([]);
    expect(operations.length).toBeGreaterThanOrEqual(50);
    expect(seen.length).toBeGreaterThan(2000);
    expect(stallMs).toBeLessThan(2000);
  }, 600_000);

  it('still serves after the fuzzing, and every seeded version is stored as it was', async () => {
    expect((await h.request('GET', '/v1/info/')).status).toBe(200);
    expect(seeded.size).toBe(6);
    for (const [path, before] of seeded) {
      expect(before, path).toMatchObject({ version: 1 });
      const res = await h.request('GET', path, { token: root });
      expect(res.status, path).toBe(200);
      expect(res.json, path).toEqual(before);
    }
  });
});
