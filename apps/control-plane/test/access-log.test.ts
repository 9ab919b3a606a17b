import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, createContainer, loadConfig, openDatabase, type Container } from '../src/index.js';
import { createLogger } from '../src/logger.js';

const PASSWORD = 'root-password-for-access-log';

describe('the access log', () => {
  const lines: Record<string, any>[] = [];
  let dir: string;
  let container: Container;
  let app: FastifyInstance;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-access-log-'));
    const config = loadConfig({ env: { CARAPACE_DATA_DIR: dir, CARAPACE_ADMIN_PASSWORD: PASSWORD, CARAPACE_RUNNER: 'none' } });
    const logger = createLogger('info', { format: 'json', destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
    container = await createContainer(config, await openDatabase(':memory:'), logger, { mailer: { send: async () => undefined, close: async () => undefined } });
    app = await buildApp({ services: container.services, logger });
  });
  afterAll(async () => {
    await app.close();
    await container.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The log lines written while `fn` runs. */
  async function logged(fn: () => Promise<unknown>): Promise<Record<string, any>[]> {
    const from = lines.length;
    await fn();
    return lines.slice(from);
  }

  it('writes one line per request, with its id, method, URL, status, time and user', async () => {
    let token = '';
    const login = await logged(async () => {
      const res = await app.inject({ method: 'POST', url: '/v1/auth/', payload: { username: 'root', password: PASSWORD } });
      token = res.json<{ id: string }>().id;
    });
    expect(login).toHaveLength(1);
    expect(login[0]).toMatchObject({ level: 30, msg: 'request completed', method: 'POST', url: '/v1/auth/', statusCode: 200 });
    expect(JSON.stringify(login)).not.toContain(PASSWORD);
    expect(JSON.stringify(login)).not.toContain(token);

    const self = await logged(() => app.inject({ method: 'GET', url: '/v1/user/self/?x=1', headers: { authorization: token } }));
    expect(self).toHaveLength(1);
    const root = await container.services.users.byLogin('root');
    expect(self[0]).toMatchObject({ msg: 'request completed', method: 'GET', url: '/v1/user/self/?x=1', statusCode: 200, userId: root?.id });
    expect(typeof self[0]?.reqId).toBe('string');
    expect(self[0]?.reqId).not.toBe(login[0]?.reqId);
    expect(typeof self[0]?.responseTime).toBe('number');
    expect(self[0]?.remoteAddress).toBe('127.0.0.1');
    expect(JSON.stringify(self)).not.toContain(token);

    const refused = await logged(() => app.inject({ method: 'GET', url: '/v1/user/' }));
    expect(refused).toEqual([expect.objectContaining({ msg: 'request completed', statusCode: 401 })]);
    expect(refused[0]?.userId).toBeUndefined();
    const missing = await logged(() => app.inject({ method: 'GET', url: '/v1/nothing-here/' }));
    expect(missing).toEqual([expect.objectContaining({ msg: 'request completed', url: '/v1/nothing-here/', statusCode: 404 })]);
  });

  it('logs the route pattern, not the secret, of a password reset URL', async () => {
    const secret = 'a-secret-reset-token-that-must-not-be-logged';
    const check = await logged(() => app.inject({ method: 'GET', url: `/v1/password_reset/${secret}/` }));
    expect(check).toEqual([expect.objectContaining({ url: '/v1/password_reset/:token', statusCode: 404 })]);
    const reset = await logged(() => app.inject({ method: 'POST', url: `/v1/password_reset/${secret}/`, payload: { password: 'whatever-password' } }));
    expect(reset).toHaveLength(1);
    expect(JSON.stringify([...check, ...reset])).not.toContain(secret);
  });
});
