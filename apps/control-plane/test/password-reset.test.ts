import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, ROOT_PASSWORD } from '@carapace/test-support/harness';

const REQUESTED = { message: 'Password reset was requested.' };
const DONE = { message: 'Password has been reset.' };

describe('password reset by e-mail', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start({
      CARAPACE_RESET_URL: 'https://carapace.example.com/reset/{reset_token}/',
      CARAPACE_PASSWORD_RESET_TTL_S: '900',
    });
  });
  afterAll(() => h.stop());

  async function requestToken(login: string, email: string): Promise<string> {
    const before = h.mail.mails.length;
    const res = await h.request('POST', '/v1/password_reset/', { body: { login } });
    expect(res.status).toBe(200);
    expect(res.json).toEqual(REQUESTED);
    for (let i = 0; i < 100 && h.mail.mails.length === before; i++) await new Promise((r) => setTimeout(r, 20));
    const mail = h.mail.mails.slice(before).find((m) => m.to.includes(email) && m.subject.includes('password reset'));
    if (!mail) throw new Error('no reset mail');
    const token = /https:\/\/carapace\.example\.com\/reset\/([A-Za-z0-9_-]+)\//.exec(mail.text)?.[1];
    // hex, so that no token starts with '-' (read as an option on a command line)
    expect(token).toMatch(/^[0-9a-f]{64}$/);
    expect(token).toBeDefined();
    expect(mail.text).toContain(`reset token: ${token}`);
    return token ?? '';
  }

  it('e-mails a link, checks without consuming, resets once, and revokes old tokens', async () => {
    const oldToken = await h.login('root', ROOT_PASSWORD);
    const token = await requestToken('root', 'root@localhost');
    expect((await h.request('GET', `/v1/password_reset/${token}/`)).json).toEqual(REQUESTED);
    expect((await h.request('GET', `/v1/password_reset/${token}/`)).status).toBe(200);
    const reset = await h.request('POST', `/v1/password_reset/${token}/`, { body: { password: 'a-new-root-password' } });
    expect(reset.status).toBe(200);
    expect(reset.json).toEqual(DONE);
    expect((await h.request('GET', '/v1/user/self/', { token: oldToken })).status).toBe(401);
    expect((await h.request('POST', '/v1/auth/', { body: { username: 'root', password: ROOT_PASSWORD } })).status).toBe(401);
    await h.login('root', 'a-new-root-password');
    const again = await h.request('POST', `/v1/password_reset/${token}/`, { body: { password: 'yet-another-password' } });
    expect(again.status).toBe(404);
    expect((await h.request('GET', `/v1/password_reset/${token}/`)).status).toBe(404);
  });

  it('accepts new_password, refuses a short one without consuming the token', async () => {
    const token = await requestToken('root', 'root@localhost');
    const short = await h.request('POST', `/v1/password_reset/${token}/`, { body: { new_password: 'short' } });
    expect(short.status).toBe(400);
    const missing = await h.request('POST', `/v1/password_reset/${token}/`, { body: {} });
    expect(missing.status).toBe(400);
    const ok = await h.request('POST', `/v1/password_reset/${token}/`, { body: { new_password: ROOT_PASSWORD } });
    expect(ok.status).toBe(200);
    await h.login('root', ROOT_PASSWORD);
  });

  it('expires reset tokens', async () => {
    const token = await requestToken('root', 'root@localhost');
    h.clock.advance(901);
    expect((await h.request('GET', `/v1/password_reset/${token}/`)).status).toBe(404);
    expect((await h.request('POST', `/v1/password_reset/${token}/`, { body: { password: 'late-password-1' } })).status).toBe(404);
  });

  it('answers the same for an unknown login and sends nothing', async () => {
    const before = h.mail.mails.length;
    const res = await h.request('POST', '/v1/password_reset/', { body: { login: 'ghost' } });
    expect(res.status).toBe(200);
    expect(res.json).toEqual(REQUESTED);
    await new Promise((r) => setTimeout(r, 200));
    expect(h.mail.mails.length).toBe(before);
    expect((await h.request('GET', '/v1/password_reset/not-a-real-token/')).status).toBe(404);
  });

  it('throttles reset requests per login with 429', async () => {
    const limit = h.config.throttle.resetRequestsPerUser;
    let status = 200;
    for (let i = 0; i <= limit + 1 && status === 200; i++) {
      status = (await h.request('POST', '/v1/password_reset/', { body: { login: 'throttled-login' } })).status;
    }
    expect(status).toBe(429);
  });
});
