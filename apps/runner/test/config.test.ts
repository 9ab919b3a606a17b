import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRunnerConfig, nameOfToken, parseControlPlanes, parseLabels, parseListenAddress, RunnerConfigError } from '../src/config.js';

const EXAMPLE = join(import.meta.dirname, '../../../deploy/carapace-runner.example.yaml');
const token = (name: string) => `crt.${Buffer.from(name).toString('base64url')}.secret-part-0123456789`;

describe('runner configuration', () => {
  const dir = mkdtempSync(join(tmpdir(), 'carapace-runner-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loads the annotated example of deploy/, with the name taken from the token', () => {
    const config = loadRunnerConfig({ file: EXAMPLE, env: { CARAPACE_RUNNER_TOKEN: token('par1-a') } });
    expect(config).toMatchObject({ controlPlanes: ['cp.example.net:8081'], name: 'par1-a', slots: 2, labels: { site: 'par1', networks: '10.0.0.0/8' } });
    expect(config.metricsListen).toBeNull();
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

  it('takes one control-plane address or several: comma-separated, or a YAML list', () => {
    const env = { CARAPACE_RUNNER_TOKEN: token('a') };
    expect(loadRunnerConfig({ env }).controlPlanes).toEqual(['127.0.0.1:8081']);
    expect(loadRunnerConfig({ env: { ...env, CARAPACE_RUNNER_URL: 'cp.example.net:8081' } }).controlPlanes).toEqual(['cp.example.net:8081']);
    expect(loadRunnerConfig({ env: { ...env, CARAPACE_RUNNER_URL: ' cp-a.example.net:8081 , 10.0.0.2:8081,[2001:db8::1]:8081,cp_b:443 ' } }).controlPlanes).toEqual([
      'cp-a.example.net:8081',
      '10.0.0.2:8081',
      '[2001:db8::1]:8081',
      'cp_b:443',
    ]);
    const list = join(dir, 'list.yaml');
    writeFileSync(list, 'controlPlane:\n  - cp-a:8081\n  - cp-b:8081\n');
    expect(loadRunnerConfig({ file: list, env }).controlPlanes).toEqual(['cp-a:8081', 'cp-b:8081']);
    const text = join(dir, 'text.yaml');
    writeFileSync(text, 'controlPlane: "cp-a:8081,cp-b:8081"\n');
    expect(loadRunnerConfig({ file: text, env }).controlPlanes).toEqual(['cp-a:8081', 'cp-b:8081']);
    // The variable replaces the file's list as a whole.
    expect(loadRunnerConfig({ file: list, env: { ...env, CARAPACE_RUNNER_URL: 'cp-c:8081' } }).controlPlanes).toEqual(['cp-c:8081']);
    expect(Object.isFrozen(loadRunnerConfig({ file: list, env }).controlPlanes)).toBe(true);
  });

  it('refuses a bad control-plane address, an empty list, and an address given twice', () => {
    const url = (value: string) => () => loadRunnerConfig({ env: { CARAPACE_RUNNER_TOKEN: token('a'), CARAPACE_RUNNER_URL: value } });
    expect(url('cp.example.net')).toThrow(/CARAPACE_RUNNER_URL\): address "cp.example.net" must be host:port/);
    expect(url('cp:8081,cp2')).toThrow(/address "cp2" must be host:port/);
    expect(url('http://cp:8081')).toThrow(/without a scheme/);
    expect(url('cp:0')).toThrow(/the port must be 1 to 65535/);
    expect(url('cp:65536')).toThrow(/the port must be 1 to 65535/);
    expect(url('cp:80a')).toThrow(/must be host:port/);
    expect(url('cp host:80')).toThrow(/"cp host" is not a host name or an IP address/);
    expect(url('300.1.2.3:80')).toThrow(/"300.1.2.3" is not a host name or an IP address/);
    expect(url('[2001:db8::zz]:80')).toThrow(/is not a host name or an IP address/);
    expect(url('2001:db8::1:80')).toThrow(/must be host:port/);
    expect(url('cp:8081,')).toThrow(/address 2 of 2 is empty/);
    expect(url(' , ')).toThrow(/names no control-plane address/);
    expect(url('cp-a:8081,cp-b:8081,CP-A:8081')).toThrow(/names the same control plane twice: "cp-a:8081" and "CP-A:8081"/);
    expect(url('cp-a:8081,cp-b:8081')).not.toThrow();
    for (const bad of ['controlPlane: []\n', 'controlPlane: ""\n']) {
      const file = join(dir, 'empty-list.yaml');
      writeFileSync(file, bad);
      expect(() => loadRunnerConfig({ file, env: { CARAPACE_RUNNER_TOKEN: token('a') } })).toThrow(/names no control-plane address/);
    }
    const numbers = join(dir, 'numbers.yaml');
    writeFileSync(numbers, 'controlPlane: [8081]\n');
    expect(() => loadRunnerConfig({ file: numbers, env: { CARAPACE_RUNNER_TOKEN: token('a') } })).toThrow(/\/controlPlane/);
    expect(() => parseControlPlanes([])).toThrow(RunnerConfigError);
    expect(parseControlPlanes(['cp:1', 'cp:2'])).toEqual(['cp:1', 'cp:2']);
  });

  it('reads the metrics address: none unless CARAPACE_RUNNER_METRICS_LISTEN or metricsListen says host:port', () => {
    const env = { CARAPACE_RUNNER_TOKEN: token('a') };
    expect(loadRunnerConfig({ env }).metricsListen).toBeNull();
    expect(loadRunnerConfig({ env: { ...env, CARAPACE_RUNNER_METRICS_LISTEN: '127.0.0.1:9464' } }).metricsListen).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(loadRunnerConfig({ env: { ...env, CARAPACE_RUNNER_METRICS_LISTEN: '[::]:9464' } }).metricsListen).toEqual({ host: '::', port: 9464 });
    const file = join(dir, 'metrics.yaml');
    writeFileSync(file, 'metricsListen: "0.0.0.0:0"\n');
    expect(loadRunnerConfig({ file, env }).metricsListen).toEqual({ host: '0.0.0.0', port: 0 });
    expect(() => loadRunnerConfig({ env: { ...env, CARAPACE_RUNNER_METRICS_LISTEN: '9464' } })).toThrow(/metricsListen \(CARAPACE_RUNNER_METRICS_LISTEN\) "9464" must be host:port/);
    expect(() => parseListenAddress('localhost:70000')).toThrow(/the port must be 0 to 65535/);
  });

  it('parses labels and runner tokens', () => {
    expect(parseLabels('a=1, b = 2,,c=')).toEqual({ a: '1', b: '2', c: '' });
    expect(() => parseLabels('novalue')).toThrow(RunnerConfigError);
    expect(nameOfToken(token('x.y_z-1'))).toBe('x.y_z-1');
    expect(nameOfToken('crt.bad')).toBeNull();
    expect(nameOfToken(`crt.${Buffer.from('UPPER case').toString('base64url')}.s`)).toBeNull();
  });
});
