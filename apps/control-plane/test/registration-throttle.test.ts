import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from './harness.js';

describe('server registration throttling', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start();
  });
  afterAll(() => h.stop());

  const register = (n: number, token: string) =>
    h.request('POST', '/v1/server/', {
      headers: { authorization: token },
      body: { id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, host: `10.9.${Math.floor(n / 250)}.${(n % 250) + 1}`, username: 'ansible' },
    });

  it('answers 429 with Retry-After past the limit per address, counting refused attempts too, and lets it in again later', async () => {
    const token = h.config.discoveryTokens[0] ?? '';
    const limit = h.config.throttle.registrationsPerAddress;
    expect((await register(0, 'wrong-token')).status).toBe(401);
    for (let i = 1; i < limit; i++) expect((await register(i, token)).status).toBe(200);
    const refused = await register(limit, token);
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({ code: 429, error: 'TooManyRequests' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const list = await h.request('GET', '/v1/server/?all=true', { token: await h.rootToken() });
    expect(list.json.total).toBe(limit - 1);
    h.clock.advance(h.config.throttle.windowS + 1);
    expect((await register(limit, token)).status).toBe(200);
  });
});
