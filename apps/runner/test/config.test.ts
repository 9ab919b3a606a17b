import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRunnerConfig, nameOfToken, parseLabels, RunnerConfigError } from '../src/config.js';

const EXAMPLE = join(import.meta.dirname, '../../../deploy/carapace-runner.example.yaml');
const token = (name: string) => `crt.${Buffer.from(name).toString('base64url')}.secret-part-0123456789`;

describe('runner configuration', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-runner-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loads the annotated example of deploy/, with the name taken from the token', () => {
    const config = loadRunnerConfig({ file: EXAMPLE, env: { CARAPACE_RUNNER_TOKEN: token('par1-a') } });
    expect(config).toMatchObject({ controlPlane: 'cp.example.net:8081', name: 'par1-a', slots: 2, labels: { site: 'par1', networks: '10.0.0.0/8' } });
    expect(config.sshKeyFile).toBe('/var/lib/carapace-runner/id_ed25519');
  });

  it('lets CARAPACE_RUNNER_* override the file, and reads the token from a file', () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${token('edge-1')}\n`);
    const config = loadRunnerConfig({
      file: EXAMPLE,
      env: { CARAPACE_RUNNER_TOKEN_FILE: tokenFile, CARAPACE_RUNNER_SLOTS: '7', CARAPACE_RUNNER_LABELS: 'site=ams,networks=10.1.0.0/16,192.168.0.0/24', CARAPACE_RUNNER_TLS: 'yes' },
    });
    expect(config).toMatchObject({ name: 'edge-1', slots: 7, labels: { site: 'ams', networks: '10.1.0.0/16,192.168.0.0/24' }, tls: { enabled: true } });
  });

  it('refuses local connections unless CARAPACE_RUNNER_ALLOW_LOCAL_CONNECTION turns them on', () => {
    expect(loadRunnerConfig({ file: EXAMPLE, env: { CARAPACE_RUNNER_TOKEN: token('a') } }).allowLocalConnection).toBe(false);
    expect(loadRunnerConfig({ env: { CARAPACE_RUNNER_TOKEN: token('a') } }).allowLocalConnection).toBe(false);
    const on = loadRunnerConfig({ file: EXAMPLE, env: { CARAPACE_RUNNER_TOKEN: token('a'), CARAPACE_RUNNER_ALLOW_LOCAL_CONNECTION: 'true' } });
    expect(on.allowLocalConnection).toBe(true);
  });

  it('reads the log format: auto by default, json or pretty from the file or CARAPACE_RUNNER_LOG_FORMAT, nothing else', () => {
    expect(loadRunnerConfig({ file: EXAMPLE, env: { CARAPACE_RUNNER_TOKEN: token('a') } }).logFormat).toBe('auto');
    expect(loadRunnerConfig({ env: { CARAPACE_RUNNER_TOKEN: token('a'), CARAPACE_RUNNER_LOG_FORMAT: 'pretty' } }).logFormat).toBe('pretty');
    const file = join(dir, 'log-format.yaml');
    writeFileSync(file, 'logFormat: json\n');
    expect(loadRunnerConfig({ file, env: { CARAPACE_RUNNER_TOKEN: token('a') } }).logFormat).toBe('json');
    expect(() => loadRunnerConfig({ env: { CARAPACE_RUNNER_TOKEN: token('a'), CARAPACE_RUNNER_LOG_FORMAT: 'colour' } })).toThrow(/\/logFormat/);
  });

  it('names the bad setting', () => {
    expect(() => loadRunnerConfig({ file: EXAMPLE, env: { CARAPACE_RUNNER_TOKEN: token('a'), CARAPACE_RUNNER_SLOTS: 'many' } })).toThrow(/CARAPACE_RUNNER_SLOTS must be a whole number/);
    expect(() => loadRunnerConfig({ file: EXAMPLE, env: { CARAPACE_RUNNER_TOKEN: token('a'), CARAPACE_RUNNER_TLS: 'maybe' } })).toThrow(RunnerConfigError);
    expect(() => loadRunnerConfig({ env: { CARAPACE_RUNNER_TOKEN: 'not-a-runner-token' } })).toThrow(/runner name/);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'slots: -1\n');
    expect(() => loadRunnerConfig({ file: bad, env: { CARAPACE_RUNNER_TOKEN: token('a') } })).toThrow(/\/slots/);
    expect(() => loadRunnerConfig({ file: join(dir, 'missing.yaml'), env: {} })).toThrow(/cannot read configuration file/);
  });

  it('parses labels and runner tokens', () => {
    expect(parseLabels('a=1, b = 2,,c=')).toEqual({ a: '1', b: '2', c: '' });
    expect(() => parseLabels('novalue')).toThrow(RunnerConfigError);
    expect(nameOfToken(token('x.y_z-1'))).toBe('x.y_z-1');
    expect(nameOfToken('crt.bad')).toBeNull();
    expect(nameOfToken(`crt.${Buffer.from('UPPER case').toString('base64url')}.s`)).toBeNull();
  });
});
