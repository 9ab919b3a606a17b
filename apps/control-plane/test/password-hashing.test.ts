import { pbkdf2 } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import { PasswordHashing } from '../src/adapters/passwords.js';
import { Harness, ROOT_PASSWORD } from '@carapace/test-support/harness';

describe('password hashing with bounded concurrency', () => {
  it('runs at most `concurrency` derivations at once, queues up to `queue`, and refuses the rest with 503 and Retry-After', async () => {
    const hashing = new PasswordHashing({ concurrency: 1, queue: 2 });
    const stored = await hashing.hash('a password');
    const outcomes = Array.from({ length: 5 }, () => hashing.verify('a password', stored).then(String, (e: unknown) => e));
    expect(hashing.load()).toEqual({ active: 1, waiting: 2 });
    const settled = await Promise.all(outcomes);
    expect(settled.slice(0, 3)).toEqual(['true', 'true', 'true']);
    for (const refused of settled.slice(3)) {
      expect(refused).toBeInstanceOf(ApiError);
      expect(refused).toMatchObject({ statusCode: 503, errorName: 'ServiceUnavailable' });
      expect(Number((refused as ApiError).headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    expect(hashing.load()).toEqual({ active: 0, waiting: 0 });
    expect(await hashing.verify('another password', stored)).toBe(false);
  });

  it('never runs more at once than allowed, whatever the load', async () => {
    const hashing = new PasswordHashing();
    hashing.configure({ concurrency: 2, queue: 100 });
    let most = 0;
    const jobs = Array.from({ length: 8 }, (_, i) => hashing.hash(`password ${i}`));
    const timer = setInterval(() => (most = Math.max(most, hashing.load().active)), 1);
    const hashes = await Promise.all(jobs);
    clearInterval(timer);
    expect(new Set(hashes).size).toBe(8);
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
  });

  it("leaves libuv's thread pool to the request path (file system, DNS, token checks)", async () => {
    const hashing = new PasswordHashing();
    hashing.configure({ concurrency: 4, queue: 10 });
    const order: string[] = [];
    const hashes = Array.from({ length: 4 }, (_, i) => hashing.hash(`password ${i}`).then(() => order.push('hash')));
    await new Promise((resolve) => setImmediate(resolve));
    // One quick job on the pool (4 threads): behind the 4 hashes if they held the pool.
    await new Promise<void>((resolve, reject) => pbkdf2('x', 'salt', 1, 32, 'sha256', (err) => (err ? reject(err) : resolve())));
    order.push('pool job');
    await Promise.all(hashes);
    expect(order[0]).toBe('pool job');
  });
});

describe('a flood of logins', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start({ CARAPACE_PASSWORD_HASH_CONCURRENCY: '1', CARAPACE_PASSWORD_HASH_QUEUE: '2' });
  });
  // The bounds are the container's own (an injected PasswordHasher): nothing to put back after.
  afterAll(() => h.stop());

  it('answers the logins past a full queue 503 with Retry-After and the error body, at once, and serves the others', async () => {
    const logins = Array.from({ length: 8 }, () => h.request('POST', '/v1/auth/', { body: { username: 'root', password: ROOT_PASSWORD } }));
    const answers = await Promise.all(logins);
    const ok = answers.filter((a) => a.status === 200);
    const shed = answers.filter((a) => a.status === 503);
    // 1 running and 2 waiting at most: 5 of the 8 are shed (more get in if some arrive late).
    expect(ok.length).toBeGreaterThanOrEqual(3);
    expect(shed.length).toBeGreaterThan(0);
    expect(ok.length + shed.length).toBe(8);
    for (const a of shed) {
      expect(a.json).toEqual({ code: 503, error: 'ServiceUnavailable', description: expect.any(String), message: a.json.description });
      expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    // A shed login is not a failed one: nothing is throttled afterwards.
    expect((await h.request('POST', '/v1/auth/', { body: { username: 'root', password: ROOT_PASSWORD } })).status).toBe(200);
  });
});
