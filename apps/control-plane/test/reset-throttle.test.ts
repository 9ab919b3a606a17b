import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '@carapace/test-support/harness';

describe('password reset request throttling', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start();
  });
  afterAll(() => h.stop());

  const requestFrom = (remoteAddress: string, login: string) =>
    h.app.inject({ method: 'POST', url: '/v1/password_reset/', remoteAddress, payload: { login } });

  it("counts requests per login and address: an attacker's requests do not keep the owner from asking", async () => {
    const limit = h.config.throttle.resetRequestsPerUser;
    for (let i = 0; i < limit; i++) expect((await requestFrom('203.0.113.8', 'root')).statusCode).toBe(200);
    const refused = await requestFrom('203.0.113.8', 'root');
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 429, error: 'TooManyRequests' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    const before = h.mail.mails.length;
    expect((await requestFrom('198.51.100.9', 'root')).statusCode).toBe(200);
    const mail = await h.mail.waitFor('root@localhost', 'password reset', (m) => h.mail.mails.indexOf(m) >= before);
    expect(mail.text).toMatch(/reset token: [0-9a-f]{64}/);
  });

  it('still bounds the requests of one address across logins', async () => {
    const limit = h.config.throttle.resetRequestsPerAddress;
    for (let i = 0; i < limit; i++) expect((await requestFrom('192.0.2.77', `someone-${i}`)).statusCode).toBe(200);
    expect((await requestFrom('192.0.2.77', 'root')).statusCode).toBe(429);
  });
});
