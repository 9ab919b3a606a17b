import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_CONFIG, loadConfig } from '../src/index.js';

describe('configuration', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has safe defaults: loopback, port 8080, no admin password, embedded runner', () => {
    const config = loadConfig({ env: {} });
    expect(config.http).toMatchObject({ host: '127.0.0.1', port: 8080 });
    expect(config.admin.password).toBeNull();
    expect(config.runner).toBe('embedded');
    expect(config.tokenTtlS).toBe(1800);
    expect(Object.isFrozen(config) && Object.isFrozen(config.http)).toBe(true);
    expect(config.dataDir).toMatch(/^\//);
  });

  it('loads the annotated example of deploy/ as the defaults (every key documented there exists)', () => {
    const example = join(import.meta.dirname, '../../../deploy/carapace.example.yaml');
    const config = loadConfig({ file: example, env: {} });
    const defaults = loadConfig({ env: {} });
    expect({ ...config, dataDir: null }).toEqual({ ...defaults, dataDir: null });
  });

  it('reads the YAML file, then lets environment variables override it', () => {
    const file = join(dir, 'carapace.yaml');
    writeFileSync(file, 'http:\n  port: 9000\n  host: 0.0.0.0\nsmtp:\n  host: mail.example.com\ntokenTtlS: 60\n');
    const config = loadConfig({
      file,
      env: { CARAPACE_HTTP_PORT: '9100', CARAPACE_DISCOVERY_TOKEN: 'aaaaaaaaaaaaaaaa1, bbbbbbbbbbbbbbbb2', CARAPACE_SMTP_SECURE: 'yes' },
    });
    expect(config.http).toMatchObject({ host: '0.0.0.0', port: 9100 });
    expect(config.smtp).toMatchObject({ host: 'mail.example.com', secure: true, port: DEFAULT_CONFIG.smtp.port });
    expect(config.tokenTtlS).toBe(60);
    expect(config.discoveryTokens).toEqual(['aaaaaaaaaaaaaaaa1', 'bbbbbbbbbbbbbbbb2']);
    expect(loadConfig({ env: { CARAPACE_CONFIG: file } }).http.port).toBe(9000);
  });

  it('reads the log format: auto by default, json or pretty from the file or CARAPACE_LOG_FORMAT, nothing else', () => {
    expect(loadConfig({ env: {} }).logFormat).toBe('auto');
    const file = join(dir, 'log-format.yaml');
    writeFileSync(file, 'logFormat: pretty\n');
    expect(loadConfig({ file, env: {} }).logFormat).toBe('pretty');
    expect(loadConfig({ file, env: { CARAPACE_LOG_FORMAT: 'json' } }).logFormat).toBe('json');
    expect(() => loadConfig({ env: { CARAPACE_LOG_FORMAT: 'text' } })).toThrow(/\/logFormat/);
    writeFileSync(file, 'logFormat: true\n');
    expect(() => loadConfig({ file, env: {} })).toThrow(ConfigError);
  });

  it('names the bad key of a bad configuration', () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'http:\n  port: "eighty"\n');
    expect(() => loadConfig({ file: bad, env: {} })).toThrow(/\/http\/port/);
    writeFileSync(bad, 'nonsense: true\n');
    expect(() => loadConfig({ file: bad, env: {} })).toThrow(ConfigError);
    writeFileSync(bad, 'http: [\n');
    expect(() => loadConfig({ file: bad, env: {} })).toThrow(/not valid YAML/);
    expect(() => loadConfig({ file: join(dir, 'missing.yaml'), env: {} })).toThrow(/cannot read/);
    expect(() => loadConfig({ env: { CARAPACE_HTTP_PORT: 'x' } })).toThrow(/CARAPACE_HTTP_PORT/);
    expect(() => loadConfig({ env: { CARAPACE_RUNNER: 'remote' } })).toThrow(/runner/);
    expect(() => loadConfig({ env: { CARAPACE_ADMIN_PASSWORD: 'short' } })).toThrow(/admin\/password/);
  });
});
