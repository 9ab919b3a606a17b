import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { createContainer } from '../src/container.js';
import { openDatabase } from '../src/db/client.js';
import { DISCOVERY_TOKEN_FILE, withDiscoveryToken } from '../src/discovery-token.js';
import { buildApp } from '../src/http/app.js';
import { createLogger } from '../src/logger.js';

describe('the discovery token generated at first start', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function setup(env: Record<string, string> = {}) {
    const dataDir = mkdtempSync(join(tmpdir(), 'carapace-dtoken-'));
    dirs.push(dataDir);
    const lines: { obj: object; msg: string }[] = [];
    const log = { info: (obj: object, msg: string) => lines.push({ obj, msg }) };
    const config = loadConfig({ env: { CARAPACE_DATA_DIR: join(dataDir, 'data'), ...env } });
    return { dataDir: config.dataDir, config, log, lines };
  }

  it('is generated once (48 hex characters, mode 0600), named in the log without its value, and kept across starts', () => {
    const { dataDir, config, log, lines } = setup();
    const first = withDiscoveryToken(config, log);
    const file = join(dataDir, DISCOVERY_TOKEN_FILE);
    const token = readFileSync(file, 'utf8').trim();
    expect(token).toMatch(/^[0-9a-f]{48}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.discoveryTokens).toEqual([token]);
    expect(Object.isFrozen(first)).toBe(true);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.obj).toEqual({ file });
    expect(JSON.stringify(lines)).not.toContain(token);

    const second = withDiscoveryToken(config, log);
    expect(second.discoveryTokens).toEqual([token]);
    expect(readFileSync(file, 'utf8').trim()).toBe(token);
    expect(JSON.stringify(lines)).not.toContain(token);
  });

  it('is not generated when tokens are configured', () => {
    const { dataDir, config, log, lines } = setup({ CARAPACE_DISCOVERY_TOKEN: 'configured-token-0123456789' });
    expect(withDiscoveryToken(config, log)).toBe(config);
    expect(() => statSync(join(dataDir, DISCOVERY_TOKEN_FILE))).toThrow(/ENOENT/);
    expect(lines).toHaveLength(0);
  });

  it('refuses a file that holds a token the service would not accept', () => {
    const { dataDir, config, log } = setup();
    withDiscoveryToken(config, log);
    writeFileSync(join(dataDir, DISCOVERY_TOKEN_FILE), 'short\n');
    expect(() => withDiscoveryToken(config, log)).toThrow(ConfigError);
    expect(() => withDiscoveryToken(config, log)).toThrow(/at least 16 characters/);
  });

  it('registers servers through the real API, and nothing else does', async () => {
    const { config, log } = setup({ CARAPACE_ADMIN_PASSWORD: 'admin-password-0123', CARAPACE_LOG_LEVEL: 'silent' });
    const withToken = withDiscoveryToken(config, log);
    const token = withToken.discoveryTokens[0] ?? '';
    const logger = createLogger('silent');
    const container = await createContainer(withToken, await openDatabase(':memory:'), logger);
    const app = await buildApp({ services: container.services, logger });
    try {
      const register = (authorization: string) =>
        app.inject({
          method: 'POST',
          url: '/v1/server/',
          headers: { authorization, 'content-type': 'application/json' },
          payload: JSON.stringify({ id: '0f8e9a4c-1b2d-4e3f-8a5b-6c7d8e9f0a1b', host: '10.77.0.11', username: 'ansible' }),
        });
      expect((await register('not-the-generated-token-0123')).statusCode).toBe(401);
      expect((await register(token)).statusCode).toBe(200);
    } finally {
      await app.close();
      await container.close();
    }
  });
});
