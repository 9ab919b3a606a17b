import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@carapace/test-support/harness';

describe('optimistic concurrency', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start();
  });
  afterAll(() => h.stop());

  it('gives exactly one success per version to 200 concurrent updates of one model', async () => {
    const root = await h.rootToken();
    const created = await h.request('POST', '/v1/user/', { token: root, body: { login: 'contended', email: 'contended@example.com' } });
    const id = created.json.id as string;
    const winners: number[] = [];
    let conflicts = 0;
    // Each writer reads the latest envelope, then writes; rounds of 200 concurrent writers
    // race on whatever they read.
    const writer = async (n: number) => {
      const read = await h.request('GET', `/v1/user/${id}/`, { token: root });
      const res = await h.request('PUT', `/v1/user/${id}/`, {
        token: root,
        body: { ...read.json, data: { ...read.json.data, full_name: `writer ${n}` } },
      });
      if (res.status === 200) winners.push(res.json.version as number);
      else {
        expect(res.status).toBe(409);
        expect(res.json.error).toBe('CannotUpdateManagedFieldsError');
        conflicts++;
      }
    };
    await Promise.all(Array.from({ length: 200 }, (_, n) => writer(n)));
    expect(winners.length + conflicts).toBe(200);
    expect(winners.length).toBeGreaterThanOrEqual(1);
    expect(new Set(winners).size).toBe(winners.length);
    const versions = await h.request('GET', `/v1/user/${id}/version/?all=1`, { token: root });
    const numbers = (versions.json.items as { version: number }[]).map((v) => v.version).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: winners.length + 1 }, (_, i) => i + 1));
    expect([...winners].sort((a, b) => a - b)).toEqual(numbers.slice(1));
  });

  it('lets exactly one of 200 writers holding the same envelope win', async () => {
    const root = await h.rootToken();
    const created = await h.request('POST', '/v1/role/', { token: root, body: { name: 'contended-role', permissions: [] } });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, n) =>
        h.request('PUT', `/v1/role/${created.json.id}/`, {
          token: root,
          body: { ...created.json, data: { ...created.json.data, name: `contended-${n}` } },
        }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(199);
    const versions = await h.request('GET', `/v1/role/${created.json.id}/version/`, { token: root });
    expect(versions.json.total).toBe(2);
  });
});
