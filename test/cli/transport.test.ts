import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISCOVERY_TOKEN, ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { buildCli, parsed, runCli } from '@carapace/test-support/cli';
import { TinyServer, closedPortUrl } from '@carapace/test-support/tiny-servers';
import { makePki, TlsProxy, type TestPki } from '@carapace/test-support/tls';

const GROUPS = ['cloud-config', 'cluster', 'execution', 'info', 'password-reset', 'permission', 'playbook', 'playbook-configuration', 'role', 'runner', 'server', 'user'];
const PUBLIC_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBvYJ0jS3Ys2Ab7gUQj3oUO1b3qO1q0WnV0n1yq8qkqC ansible@carapace';

/** The CLI as a subprocess: help, global options and environment, errors, TLS, cloud-config. */
describe('carapace: help, options, errors, TLS and cloud-config', () => {
  let cp: TestControlPlane;
  let dir: string;
  let pki: TestPki;
  let https: TlsProxy;
  let mutual: TlsProxy;
  let silent: TinyServer;
  let root: Record<string, string>;

  beforeAll(async () => {
    [cp] = await Promise.all([TestControlPlane.start(), buildCli()]);
    root = { CARAPACE_URL: cp.url, CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: ROOT_PASSWORD };
    dir = mkdtempSync(join(tmpdir(), 'carapace-cli-transport-'));
    pki = makePki(dir);
    https = await TlsProxy.start(pki, cp.url);
    mutual = await TlsProxy.start(pki, cp.url, { requireClientCert: true });
    silent = await TinyServer.start(() => undefined);
    writeFileSync(join(dir, 'id_ed25519.pub'), `${PUBLIC_KEY}\n`);
  }, 300_000);
  afterAll(async () => {
    await Promise.all([https.stop(), mutual.stop(), silent.stop()]);
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('--help everywhere: the program, every group and their commands', async () => {
    const runs = await Promise.all([
      runCli(['--help']),
      ...GROUPS.map((g) => runCli([g, '--help'])),
      runCli(['execution', 'log', '--help']),
      runCli(['server', 'get-all', '--help']),
      runCli(['user', 'update', '--help']),
      runCli(['help', 'role']),
    ]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const [top, ...rest] = runs.map((r) => r.stdout);
    for (const group of GROUPS) expect(top).toMatch(new RegExp(`^  ${group}\\s`, 'm'));
    expect(top).toContain('CARAPACE_URL');
    expect(top).toContain('Exit status');
    expect(rest[GROUPS.indexOf('cluster')]).toMatch(/get-all[\s\S]*get-version-all[\s\S]*create[\s\S]*update[\s\S]*delete/);
    expect(rest[GROUPS.indexOf('execution')]).toMatch(/cancel[\s\S]*steps[\s\S]*log/);
    expect(rest[GROUPS.indexOf('role')]).toMatch(/add-permission[\s\S]*remove-permission/);
    expect(rest[GROUPS.indexOf('cloud-config')]).toContain('--no-discovery');
    expect(rest[GROUPS.length]).toContain('--follow');
    expect(rest[GROUPS.length + 1]).toMatch(/--page[\s\S]*--per-page[\s\S]*--all[\s\S]*--sort-by[\s\S]*--list[\s\S]*--compact/);
    expect(rest[GROUPS.length + 2]).toMatch(/--model[\s\S]*--model-stdin[\s\S]*--model-editor/);
    expect(rest[GROUPS.length + 3]).toContain('add-permission');
  }, 120_000);

  it('takes the global options from flags or from the environment, flags first', async () => {
    const [fromEnv, fromFlags, flagWins] = await Promise.all([
      runCli(['cluster', 'get-all'], { env: { ...root, CARAPACE_OUTPUT: 'table' } }),
      runCli(['--url', cp.url, '--login', 'root', '--password', ROOT_PASSWORD, '--timeout', '10', 'cluster', 'get-all']),
      runCli(['cluster', 'get-all', '--output', 'json'], { env: { ...root, CARAPACE_OUTPUT: 'table' } }),
    ]);
    expect(fromEnv).toMatchObject({ code: 0, stdout: '(none)\n' });
    expect(parsed(fromFlags)).toEqual([]);
    expect(parsed(flagWins)).toEqual([]);
  });

  it('errors: the API error as JSON on stderr and status 1; usage 2; unreachable or too slow 3', async () => {
    const [wrong, notFound, noUrl, noLogin, unknown, badArg, unreachable, slow] = await Promise.all([
      runCli(['cluster', 'get-all'], { env: { ...root, CARAPACE_PASSWORD: 'wrong-password' } }),
      runCli(['user', 'get', 'not-a-uuid'], { env: root }),
      runCli(['cluster', 'get-all'], { env: { CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: 'x' } }),
      runCli(['cluster', 'get-all'], { env: { CARAPACE_URL: cp.url } }),
      runCli(['cluster', 'explode'], { env: root }),
      runCli(['cluster', 'get-version', 'x', 'zero'], { env: root }),
      runCli(['info'], { env: { CARAPACE_URL: await closedPortUrl() } }),
      runCli(['--timeout', '0.3', 'info'], { env: { CARAPACE_URL: silent.url } }),
    ]);
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stderr)).toEqual({ code: 401, error: 'Unauthorized', description: 'Invalid login or password.', message: 'Invalid login or password.' });
    expect(wrong.stdout).toBe('');
    expect(notFound.code).toBe(1);
    expect(JSON.parse(notFound.stderr)).toMatchObject({ code: 404, error: 'NotFound' });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('give --url or set CARAPACE_URL');
    expect(noLogin.code).toBe(2);
    expect(noLogin.stderr).toContain(`carapace: not logged in to ${cp.url}: run carapace login`);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'explode'");
    expect(badArg.code).toBe(2);
    expect(badArg.stderr).toContain('a whole number of at least 1 is expected');
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(/^carapace: GET \/v1\/info\/ failed: .*ECONNREFUSED/);
    expect(slow.code).toBe(3);
    expect(slow.stderr).toBe('carapace: GET /v1/info/ timed out after 300 ms\n');
  });

  it('an https:// URL on the plain HTTP port says so, not in OpenSSL\'s words', async () => {
    const url = cp.url.replace(/^http:/, 'https:');
    const run = await runCli(['--url', url, 'info']);
    expect(run.code).toBe(3);
    expect(run.stderr).toBe(`carapace: GET /v1/info/ failed: the server at ${url} does not speak TLS: use ${cp.url}\n`);
    expect(run.stderr).not.toMatch(/wrong version number|EPROTO|ssl3_get_record/);
  });

  it('TLS: verification on by default, --no-verify or CARAPACE_NO_VERIFY=1 off, --ssl-certificate for a client certificate', async () => {
    const asRoot = { CARAPACE_LOGIN: 'root', CARAPACE_PASSWORD: ROOT_PASSWORD };
    const [checked, flag, env, envZero, trusted, noCert, withCert] = await Promise.all([
      runCli(['--url', https.url, 'info']),
      runCli(['--url', https.url, '--no-verify', 'cluster', 'get-all'], { env: asRoot }),
      runCli(['--url', https.url, 'user', 'self'], { env: { ...asRoot, CARAPACE_NO_VERIFY: '1' } }),
      runCli(['--url', https.url, 'info'], { env: { CARAPACE_NO_VERIFY: '0' } }),
      runCli(['--url', https.url, 'info'], { env: { NODE_EXTRA_CA_CERTS: pki.caFile } }),
      runCli(['--url', mutual.url, '-k', 'info']),
      runCli(['--url', mutual.url, '-k', '--ssl-certificate', pki.clientBundleFile, 'user', 'self'], { env: asRoot }),
    ]);
    expect(checked.code).toBe(3);
    expect(checked.stderr).toMatch(/certificate/i);
    expect(parsed(flag)).toEqual([]);
    expect(parsed(env).data.login).toBe('root');
    expect(envZero.code).toBe(3);
    expect(parsed(trusted).version).toMatch(/^\d/);
    expect(noCert.code).toBe(3);
    expect(parsed(withCert).data.login).toBe('root');
    expect(mutual.clientNames).toContain('carapace-client');
  });

  it('cloud-config: user-data that cloud-init accepts, with the discovery of this service, or without', async () => {
    const keyFile = join(dir, 'id_ed25519.pub');
    const [full, bare, missingKey, badToken] = await Promise.all([
      runCli(['--url', cp.url, '--timeout', '7', 'cloud-config', DISCOVERY_TOKEN, keyFile, '--username', 'deploy']),
      runCli(['cloud-config', DISCOVERY_TOKEN, keyFile, '--no-discovery'], { env: { CARAPACE_URL: cp.url } }),
      runCli(['--url', cp.url, 'cloud-config', DISCOVERY_TOKEN, join(dir, 'missing.pub')]),
      runCli(['--url', cp.url, 'cloud-config', ' jeton-secret-été', keyFile]),
    ]);
    expect(full.code, full.stderr).toBe(0);
    expect(full.stdout.startsWith('#cloud-config\n')).toBe(true);
    expect(full.stdout).toContain(PUBLIC_KEY);
    expect(full.stdout).toContain('name: deploy');
    expect(full.stdout).toContain('carapace-discovery.service');
    expect(full.stdout).toContain(cp.url);
    expect(full.stdout).toMatch(/"timeout": 7/);
    expect(bare.code).toBe(0);
    expect(bare.stdout).toContain(PUBLIC_KEY);
    expect(bare.stdout).not.toContain('carapace-discovery');
    expect(missingKey.code).toBe(2);
    expect(missingKey.stderr).toContain('cannot read the public key file');
    expect(badToken.code).toBe(2);
    expect(badToken.stderr).toContain('serverDiscoveryToken');
    expect(badToken.stderr).not.toContain('jeton-secret');

    // The service accepts discovery tokens of 16 characters or more: a shorter one is refused
    // here rather than written into user-data that could never register.
    const [short, sixteen, shortWithout, fromStdin] = await Promise.all([
      runCli(['--url', cp.url, 'cloud-config', 'fifteen-chars-x', keyFile]),
      runCli(['--url', cp.url, 'cloud-config', 'sixteen-chars-xy', keyFile]),
      runCli(['--url', cp.url, 'cloud-config', 'short', keyFile, '--no-discovery']),
      runCli(['--url', cp.url, 'cloud-config', DISCOVERY_TOKEN, '-'], { input: `${PUBLIC_KEY}\n` }),
    ]);
    expect(short).toMatchObject({ code: 2, stdout: '' });
    expect(short.stderr).toContain('carapace: the discovery token is 15 characters long: the service accepts only tokens of at least 16');
    expect(short.stderr).not.toContain('fifteen-chars-x');
    expect(sixteen.code, sixteen.stderr).toBe(0);
    expect(sixteen.stdout).toContain('carapace-discovery');
    expect(shortWithout.code, shortWithout.stderr).toBe(0);
    expect(shortWithout.stdout).not.toContain('carapace-discovery');
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    expect(fromStdin.stdout).toContain(PUBLIC_KEY);

    for (const [name, text] of [
      ['full.yaml', full.stdout],
      ['bare.yaml', bare.stdout],
    ] as const) {
      writeFileSync(join(dir, name), text);
      const report = execFileSync('cloud-init', ['schema', '--config-file', join(dir, name)], { encoding: 'utf8' });
      expect(report).toMatch(/^Valid cloud-config/m);
    }
  });
});
