import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@carapace/client';
import { QueryClient, type QueryFunctionContext, type QueryKey } from '@tanstack/react-query';
import { describe, expect, it } from 'vitest';
import { queries, queryKeys } from './queries.ts';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Every source file of the UI but the tests, relative to src/. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [relative(SRC, path)] : [];
  });
}

/** Whether `key` starts with `prefix` (what TanStack Query's invalidation matches). */
function startsWith(key: QueryKey, prefix: QueryKey): boolean {
  return prefix.every((part, i) => JSON.stringify(part) === JSON.stringify(key[i]));
}

type Tail<T extends unknown[]> = T extends [unknown, ...infer Rest] ? Rest : never;

/** The arguments (after the client) each query is tried with: one entry per query, or this file does not compile. */
const ARGS: { [K in keyof typeof queries]: Tail<Parameters<(typeof queries)[K]>> } = {
  session: ['tok-1'],
  passwordReset: ['reset-1'],
  playbooks: [],
  permissions: [],
  runners: [],
  users: [{ all: true }],
  roles: [{ page: 2, perPage: 25 }],
  clusters: [{ filter: { name: 'a' } }],
  clusterStatuses: [],
  cluster: ['c-1'],
  clusterVersions: ['c-1', { perPage: 50 }],
  clusterStatus: ['c-1'],
  clusterStatusHistory: ['c-1', 24],
  cinderIntegration: ['c-1', '/etc/ceph'],
  servers: [{ page: 3 }],
  serverCounts: [],
  server: ['s-1'],
  serverVersions: ['s-1', { page: 1, perPage: 20 }],
  configurations: [{ page: 1 }],
  configuration: ['pc-1'],
  configurationVersions: ['pc-1', 3],
  executions: [{ page: 1 }, 'previews'],
  execution: ['e-1'],
  executionSteps: ['e-1'],
  executionPreview: ['e-1'],
};

/** A client whose every method records its arguments and answers an empty page. */
function recordingClient(): { client: Client; calls: { method: string; args: unknown[] }[] } {
  const calls: { method: string; args: unknown[] }[] = [];
  const client = new Proxy(
    {},
    {
      get: (_target, method) => (...args: unknown[]) => {
        calls.push({ method: String(method), args });
        return Promise.resolve({ items: [], page: 1, per_page: 1, total: 0 });
      },
    },
  ) as Client;
  return { client, calls };
}

describe('the query keys', () => {
  it('nest: every query of a kind starts with its `all` key, every query of one item with its detail key', () => {
    const params = { page: 2, filter: { state: 'operational' } };
    expect(startsWith(queryKeys.servers.list(params), queryKeys.servers.all)).toBe(true);
    expect(startsWith(queryKeys.servers.counts(), queryKeys.servers.all)).toBe(true);
    expect(startsWith(queryKeys.servers.versions('s-1', params), queryKeys.servers.detail('s-1'))).toBe(true);
    expect(startsWith(queryKeys.servers.detail('s-1'), queryKeys.servers.all)).toBe(true);
    for (const key of [queryKeys.clusters.status('c-1'), queryKeys.clusters.statusHistory('c-1', 24), queryKeys.clusters.cinder('c-1', '/etc/ceph'), queryKeys.clusters.versions('c-1', {})]) {
      expect(startsWith(key, queryKeys.clusters.detail('c-1'))).toBe(true);
    }
    expect(startsWith(queryKeys.clusters.statuses(), queryKeys.clusters.all)).toBe(true);
    expect(startsWith(queryKeys.executions.steps('e-1'), queryKeys.executions.detail('e-1'))).toBe(true);
    expect(startsWith(queryKeys.executions.preview('e-1'), queryKeys.executions.detail('e-1'))).toBe(true);
    expect(startsWith(queryKeys.executions.list({}, 'previews'), queryKeys.executions.all)).toBe(true);
    expect(startsWith(queryKeys.configurations.versions('pc-1', 2), queryKeys.configurations.detail('pc-1'))).toBe(true);
    expect(startsWith(queryKeys.configurations.list({}), queryKeys.configurations.all)).toBe(true);
  });

  it('are the request: the same parameters give the same key, other parameters or another item another', () => {
    expect(queryKeys.servers.list({ all: true, sortBy: { name: 1 } })).toEqual(queryKeys.servers.list({ all: true, sortBy: { name: 1 } }));
    expect(queryKeys.servers.list({ page: 1 })).not.toEqual(queryKeys.servers.list({ page: 2 }));
    expect(queryKeys.executions.list({ page: 1 }, 'runs')).not.toEqual(queryKeys.executions.list({ page: 1 }, 'previews'));
    expect(queryKeys.clusters.detail('a')).not.toEqual(queryKeys.clusters.detail('b'));
    // A server whose id were "list" is no list.
    expect(queryKeys.servers.detail('list')).not.toEqual(queryKeys.servers.list({}).slice(0, 3));
    expect(queryKeys.session('a')).not.toEqual(queryKeys.session(null));
  });
});

describe('the queries', () => {
  it("each pass TanStack Query's abort signal to every client call they make", async () => {
    expect(Object.keys(ARGS).sort()).toEqual(Object.keys(queries).sort());
    for (const name of Object.keys(queries) as (keyof typeof queries)[]) {
      const { client, calls } = recordingClient();
      const factory = queries[name] as (client: Client, ...args: unknown[]) => ReturnType<(typeof queries)[typeof name]>;
      const options = factory(client, ...ARGS[name]);
      const signal = new AbortController().signal;
      expect(typeof options.queryFn, name).toBe('function');
      const context = { queryKey: options.queryKey, signal, meta: undefined, client: new QueryClient() } as unknown as QueryFunctionContext<QueryKey>;
      await (options.queryFn as (context: QueryFunctionContext<QueryKey>) => Promise<unknown>)(context);
      expect(calls.length, name).toBeGreaterThan(0);
      for (const call of calls) expect((call.args.at(-1) as { signal?: AbortSignal } | undefined)?.signal, `${name}: ${call.method}`).toBe(signal);
    }
  });

  it('ask what their key says', async () => {
    const { client, calls } = recordingClient();
    const options = queries.executions(client, { page: 2, perPage: 25 }, 'previews');
    expect(options.queryKey).toEqual(['executions', 'list', 'previews', { page: 2, perPage: 25 }]);
    await (options.queryFn as (context: QueryFunctionContext<QueryKey>) => Promise<unknown>)({ queryKey: options.queryKey, signal: new AbortController().signal } as unknown as QueryFunctionContext<QueryKey>);
    expect(calls.map((c) => [c.method, c.args[0]])).toEqual([['getPreviews', { page: 2, perPage: 25 }]]);
  });
});

describe('the data layer', () => {
  it('is one module: no other file calls useQuery or writes a query key', () => {
    const files = sources();
    expect(files).toContain('api/queries.ts');
    for (const file of files.filter((f) => f !== 'api/queries.ts')) {
      const text = readFileSync(join(SRC, file), 'utf8');
      expect(text, file).not.toMatch(/\buse(Suspense)?Quer(y|ies)\(/);
      expect(text, file).not.toMatch(/queryFn\s*:/);
      // Keys come from the factory: `queryKey: queryKeys.…` (or a prop that carries one).
      for (const [, value] of text.matchAll(/queryKey\s*:\s*([^,}\n]+)/g)) expect(value, file).toMatch(/^(queryKeys\.|QueryKey\b)/);
    }
  });
});
