import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defectiveSsh2Pair } from './support/ssh2-defective-key.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRunnerConfig } from '../src/config.js';
import { enroll } from '../src/enroll.js';
import { ed25519PublicKeyProblem } from '../src/ssh/index.js';

const TOKEN = `crt.${Buffer.from('par1-a').toString('base64url')}.secret-part-0123456789`;

/** Runs enroll, capturing what it prints. */
function run(argv: string[], env: Record<string, string> = {}): { code: number; stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  const code = enroll(argv, { env, stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } });
  return { code, stdout, stderr };
}

const mode = (file: string) => statSync(file).mode & 0o777;

describe('carapace-runner enroll', () => {
  let dir = '';
  let certs = '';

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-enroll-'));
    certs = join(dir, 'certs');
    execFileSync('mkdir', ['-p', certs]);
    // A real certificate and key (self-signed: enroll checks the PEM kinds, the handshake is the e2e's).
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ed25519', '-nodes', '-days', '1', '-subj', '/CN=par1-a', '-keyout', join(certs, 'client.key'), '-out', join(certs, 'client.crt')], { stdio: 'ignore' });
    writeFileSync(join(certs, 'not-a-key.pem'), 'hello\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the configuration (0600), copies the TLS files, makes the key and prints its public key line', () => {
    const file = join(dir, 'etc', 'runner.yaml');
    const state = join(dir, 'state');
    writeFileSync(join(dir, 'seed.yaml'), `# the package's file\nsshKeyFile: ${state}/id_ed25519\nworkDir: ${state}\nslots: 3\n`);
    execFileSync('mkdir', ['-p', join(dir, 'etc')]);
    execFileSync('cp', [join(dir, 'seed.yaml'), file]);
    const r = run(['--config', file, '--url', 'cp.example.net:8081', '--token', TOKEN, '--label', 'site=par1', '--label', 'networks=10.1.0.0/16,10.2.0.0/16',
      '--tls-ca', join(certs, 'client.crt'), '--tls-cert', join(certs, 'client.crt'), '--tls-key', join(certs, 'client.key')]);
    expect(r.stderr).toMatch(/runner par1-a of cp\.example\.net:8081 \(mTLS\)/);
    expect(r.code).toBe(0);
    const publicKey = r.stdout.trim();
    expect(r.stdout.split('\n')).toHaveLength(2);
    expect(ed25519PublicKeyProblem(publicKey)).toBeUndefined();
    expect(readFileSync(join(state, 'id_ed25519.pub'), 'utf8').trim()).toBe(publicKey);
    expect(mode(join(state, 'id_ed25519'))).toBe(0o600);
    expect(mode(file)).toBe(0o600);
    expect(mode(join(dir, 'etc', 'runner-key.pem'))).toBe(0o600);
    expect(mode(join(dir, 'etc', 'runner-cert.pem'))).toBe(0o644);
    expect(readFileSync(join(dir, 'etc', 'runner-key.pem'), 'utf8')).toBe(readFileSync(join(certs, 'client.key'), 'utf8'));
    const text = readFileSync(file, 'utf8');
    expect(text).toMatch(/^# the package's file\n/);
    const config = loadRunnerConfig({ file, env: {} });
    expect(config).toMatchObject({
      name: 'par1-a',
      token: TOKEN,
      controlPlanes: ['cp.example.net:8081'],
      slots: 3,
      labels: { site: 'par1', networks: '10.1.0.0/16,10.2.0.0/16' },
      tls: { enabled: true, caFile: join(dir, 'etc', 'runner-ca.pem'), certFile: join(dir, 'etc', 'runner-cert.pem'), keyFile: join(dir, 'etc', 'runner-key.pem') },
      sshKeyFile: join(state, 'id_ed25519'),
    });

    // Enrolled again (a new token, two replicas): the same key, the other settings kept.
    const again = run(['--config', file, '--url', 'cp-a:8081,cp-b:8081', '--token', `${TOKEN}x`]);
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe(publicKey);
    expect(loadRunnerConfig({ file, env: {} })).toMatchObject({ controlPlanes: ['cp-a:8081', 'cp-b:8081'], token: `${TOKEN}x`, slots: 3, tls: { enabled: true } });

    // From the configuration file alone: checked, and the key printed.
    const fromFile = run([], { CARAPACE_RUNNER_CONFIG: file });
    expect(fromFile.code).toBe(0);
    expect(fromFile.stdout.trim()).toBe(publicKey);
  });

  it("reports and mends a key an older runner wrote with ssh2's defect (a 31-byte public key), printing the valid line", () => {
    const state = join(dir, 'old-runner');
    execFileSync('mkdir', ['-p', state]);
    const pair = defectiveSsh2Pair();
    writeFileSync(join(state, 'id_ed25519'), pair.private, { mode: 0o600 });
    writeFileSync(join(state, 'id_ed25519.pub'), `${pair.public}\n`);
    expect(ed25519PublicKeyProblem(pair.public)).toBeDefined();
    const file = join(dir, 'old-runner.yaml');
    writeFileSync(file, `sshKeyFile: ${state}/id_ed25519\nworkDir: ${state}\n`);
    const r = run(['--config', file, '--url', 'cp:8081', '--token', TOKEN]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/written by an older carapace-runner with a defect .* the same key, now valid/);
    expect(ed25519PublicKeyProblem(r.stdout.trim())).toBeUndefined();
    expect(readFileSync(join(state, 'id_ed25519.pub'), 'utf8').trim()).toBe(r.stdout.trim());
  });

  it('reads the token from a file', () => {
    const file = join(dir, 'token-file.yaml');
    writeFileSync(file, `sshKeyFile: ${dir}/token-file-state/id_ed25519\nworkDir: ${dir}/token-file-state\n`);
    writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
    const r = run(['--config', file, '--url', '10.0.0.5:8081', '--token-file', join(dir, 'token')], {});
    expect(r.code).toBe(0);
    expect(loadRunnerConfig({ file, env: {} }).token).toBe(TOKEN);
  });

  const bad: [string, string[], RegExp][] = [
    ['no configuration file', ['--url', 'cp:8081', '--token', TOKEN], /give --config FILE/],
    ['a URL with a scheme', ['--url', 'https://cp:8081', '--token', TOKEN], /must be host:port, without a scheme/],
    ['no token', ['--url', 'cp:8081'], /no token: give --token/],
    ['no control plane', ['--token', TOKEN], /no control plane: give --url/],
    ['something that is not a runner token', ['--url', 'cp:8081', '--token', 'hunter2-hunter2'], /not a runner token/],
    ['a certificate without its key', ['--url', 'cp:8081', '--token', TOKEN, '--tls-cert', 'x.pem'], /--tls-cert and --tls-key go together/],
    ['a key file that is no key', ['--url', 'cp:8081', '--token', TOKEN, '--tls-cert', 'CERTS/client.crt', '--tls-key', 'CERTS/not-a-key.pem'], /--tls-key: .*not a PEM file/],
    ['a TLS file that does not exist', ['--url', 'cp:8081', '--token', TOKEN, '--tls-ca', 'CERTS/missing.pem'], /--tls-ca: cannot read/],
    ['an unknown option', ['--url', 'cp:8081', '--tokn', TOKEN], /Unknown option '--tokn'/],
    ['an owner who does not exist', ['--url', 'cp:8081', '--token', TOKEN, '--owner', 'no-such-user-here'], /there is no user no-such-user-here/],
    ['slots the schema refuses', ['--url', 'cp:8081', '--token', TOKEN, '--config', 'SLOTS'], /invalid runner configuration at \/slots/],
  ];
  for (const [what, argv, message] of bad) {
    it(`refuses ${what} with a clear message (exit 2) and writes nothing`, () => {
      const file = join(dir, `bad-${what.replace(/\W+/g, '-')}.yaml`);
      const slots = join(dir, 'slots.yaml');
      writeFileSync(slots, 'slots: 0\n');
      const args = argv.map((a) => a.replace('CERTS', certs)).map((a) => (a === 'SLOTS' ? slots : a));
      const withConfig = what === 'no configuration file' || args.includes('--config') ? args : ['--config', file, ...args];
      const r = run(withConfig);
      expect(r.stderr).toMatch(message);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(existsSync(file)).toBe(false);
      expect(readFileSync(slots, 'utf8')).toBe('slots: 0\n');
    });
  }
});
