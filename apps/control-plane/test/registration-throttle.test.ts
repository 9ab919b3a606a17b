import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@carapace/test-support/harness';

describe('server registration throttling', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_THROTTLE_REGISTRATIONS_PER_ADDRESS: '30' });
  });
  afterAll(() => h.stop());

  let seq = 0;
  const register = (authorization: string, remoteAddress = '127.0.0.1') => {
    const n = seq++;
    return h.app.inject({
      method: 'POST',
      url: '/v1/server/',
      remoteAddress,
      headers: { authorization },
      payload: { id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`, host: `10.9.${Math.floor(n / 250)}.${(n % 250) + 1}`, username: 'ansible' },
    });
  };

  it('counts wrong tokens per address apart: past their limit they answer 429, and a valid token still registers', async () => {
    const token = h.config.discoveryTokens[0] ?? '';
    const address = '203.0.113.50';
    const limit = h.config.throttle.registrationFailuresPerAddress;
    for (let i = 0; i < 120; i++) expect((await register(`wrong-token-${i}`, address)).statusCode).toBe(i < limit ? 401 : 429);
    const refused = await register('wrong-token', address);
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 429, error: 'TooManyRequests', description: expect.any(String), message: expect.any(String) });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // A valid discovery token, raw or Bearer in any case, and a user token with
    // create_server, from the very same address: never refused for the wrong ones.
    for (const authorization of [token, `Bearer ${token}`, `bearer ${token}`, await h.rootToken()]) {
      expect((await register(authorization, address)).statusCode).toBe(200);
    }
  });

  it('keeps a separate bound on valid registrations per address, and lets them in again later', async () => {
    const token = h.config.discoveryTokens[0] ?? '';
    const address = '198.51.100.60';
    const limit = h.config.throttle.registrationsPerAddress;
    const before = (await h.request('GET', '/v1/server/?all=true', { token: await h.rootToken() })).json.total as number;
    for (let i = 0; i < limit; i++) expect((await register(token, address)).statusCode).toBe(200);
    const refused = await register(token, address);
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // another address is not concerned
    expect((await register(token, '198.51.100.61')).statusCode).toBe(200);
    const list = await h.request('GET', '/v1/server/?all=true', { token: await h.rootToken() });
    expect(list.json.total).toBe(before + limit + 1);
    h.clock.advance(h.config.throttle.windowS + 1);
    expect((await register(token, address)).statusCode).toBe(200);
  });
});
