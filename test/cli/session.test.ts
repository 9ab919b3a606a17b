import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_PASSWORD, TestControlPlane } from '@carapace/test-support/control-plane';
import { buildCli, CLI_BIN, parsed, runCli } from '@carapace/test-support/cli';

/** Whether the API takes `token` (a direct call, not through the CLI). */
async function accepted(url: string, token: string): Promise<number> {
  const res = await fetch(`${url}/v1/user/self/`, { headers: { authorization: token } });
  await res.body?.cancel();
  return res.status;
}

const mode = (path: string) => statSync(path).mode & 0o777;

/** The CLI as a subprocess: login, stored sessions, profiles and logout. */
describe('carapace login and logout: a session per profile', () => {
  let a: TestControlPlane;
  let b: TestControlPlane;
  let home: string;
  let env: Record<string, string>;
  const sessionFile = (profile = 'default') => join(home, 'carapace', 'sessions', `${profile}.json`);

  beforeAll(async () => {
    [a, b] = await Promise.all([TestControlPlane.start(), TestControlPlane.start(), buildCli()]);
    home = mkdtempSync(join(tmpdir(), 'carapace-cli-session-'));
    env = { XDG_CONFIG_HOME: home };
  }, 300_000);
  afterAll(async () => {
    await Promise.all([a.stop(), b.stop()]);
    rmSync(home, { recursive: true, force: true });
  });

  it('login (the password on stdin) stores the token 0600 under $XDG_CONFIG_HOME/carapace; later commands need no URL, login or password', async () => {
    const login = await runCli(['--url', a.url, '--login', 'root', 'login', '--password-stdin'], { env, input: `${ROOT_PASSWORD}\n` });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stdout).toBe('');
    expect(login.stderr).toMatch(new RegExp(`^Logged in to ${a.url} as root \\(profile default\\) until \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\.$`, 'm'));

    expect(mode(join(home, 'carapace'))).toBe(0o700);
    expect(mode(join(home, 'carapace', 'sessions'))).toBe(0o700);
    expect(mode(sessionFile())).toBe(0o600);
    expect(mode(join(home, 'carapace', 'profiles', 'default.json'))).toBe(0o600);
    const stored = JSON.parse(readFileSync(sessionFile(), 'utf8'));
    expect(stored).toEqual({ url: a.url, login: 'root', token: expect.any(String), expires_at: expect.any(Number) });
    expect(stored.expires_at).toBeGreaterThan(Date.now() / 1000);
    expect(await accepted(a.url, stored.token)).toBe(200);

    const [self, clusters] = await Promise.all([runCli(['user', 'self'], { env }), runCli(['cluster', 'get-all'], { env })]);
    expect(self.code, self.stderr).toBe(0);
    expect(parsed(self).data.login).toBe('root');
    expect(parsed(clusters)).toEqual([]);
    // A command on a stored session does not log it out.
    expect(await accepted(a.url, stored.token)).toBe(200);
  });

  it('profiles keep two control planes apart (--profile or CARAPACE_PROFILE); a session goes only to its own URL', async () => {
    // The password piped in without --password-stdin: stdin is not a terminal.
    const login = await runCli(['--url', b.url, '--login', 'root', 'login'], { env: { ...env, CARAPACE_PROFILE: 'lab' }, input: `${ROOT_PASSWORD}\n` });
    expect(login.code, login.stderr).toBe(0);
    expect(login.stderr).toContain(`Logged in to ${b.url} as root (profile lab)`);
    expect(mode(sessionFile('lab'))).toBe(0o600);

    const rootOf = async (cp: TestControlPlane) => {
      const token = (await (await fetch(`${cp.url}/v1/auth/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'root', password: ROOT_PASSWORD }) })).json()) as { data: { user: { id: string } } };
      return token.data.user.id;
    };
    const [rootA, rootB] = await Promise.all([rootOf(a), rootOf(b)]);
    expect(rootA).not.toBe(rootB);

    const [onA, onB, byEnv, elsewhere] = await Promise.all([
      runCli(['user', 'self'], { env }),
      runCli(['--profile', 'lab', 'user', 'self'], { env }),
      runCli(['user', 'self'], { env: { ...env, CARAPACE_PROFILE: 'lab' } }),
      runCli(['--url', b.url, 'user', 'self'], { env }),
    ]);
    expect(parsed(onA).id).toBe(rootA);
    expect(parsed(onB).id).toBe(rootB);
    expect(parsed(byEnv).id).toBe(rootB);
    // The default profile's token is for A: it is not sent to B.
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain(`not logged in to ${b.url}: run carapace login`);

    const badName = await runCli(['--profile', '../x', 'user', 'self'], { env });
    expect(badName.code).toBe(2);
    expect(badName.stderr).toContain('is not a profile name');
  });

  it('an expired stored session, or one the service refuses (revoked), says to log in again', async () => {
    const stored = JSON.parse(readFileSync(sessionFile('lab'), 'utf8'));
    writeFileSync(sessionFile('lab'), JSON.stringify({ ...stored, expires_at: Math.floor(Date.now() / 1000) - 1 }), { mode: 0o600 });
    const expired = await runCli(['--profile', 'lab', 'cluster', 'get-all'], { env });
    expect(expired).toMatchObject({ code: 2, stdout: '' });
    expect(expired.stderr).toBe('carapace: session expired: run carapace --profile lab login\n');

    // Revoked behind the CLI's back: the service answers 401, the CLI says so and forgets it.
    writeFileSync(sessionFile('lab'), JSON.stringify(stored), { mode: 0o600 });
    const revoke = await fetch(`${b.url}/v1/auth/`, { method: 'DELETE', headers: { authorization: stored.token } });
    expect(revoke.status).toBe(200);
    const refused = await runCli(['--profile', 'lab', 'cluster', 'get-all'], { env });
    expect(refused).toMatchObject({ code: 2, stdout: '' });
    expect(refused.stderr).toBe('carapace: the session was refused (expired or revoked): run carapace --profile lab login\n');
    expect(existsSync(sessionFile('lab'))).toBe(false);

    // The profile remembers its URL and login: logging in again needs only the password.
    const again = await runCli(['--profile', 'lab', 'login'], { env, input: `${ROOT_PASSWORD}\n` });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain(`Logged in to ${b.url} as root (profile lab)`);
    const noPassword = await runCli(['--profile', 'lab', 'login'], { env });
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain('no password on stdin');
    const wrong = await runCli(['--profile', 'lab', 'login'], { env, input: 'not-the-password\n' });
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stderr)).toMatchObject({ code: 401, error: 'Unauthorized' });
    // A failed login leaves the stored session as it was.
    expect(await accepted(b.url, JSON.parse(readFileSync(sessionFile('lab'), 'utf8')).token)).toBe(200);
  });

  it('logout revokes the token on the service and removes the file; a second logout has nothing to do', async () => {
    const { token } = JSON.parse(readFileSync(sessionFile(), 'utf8'));
    expect(await accepted(a.url, token)).toBe(200);
    const logout = await runCli(['logout'], { env });
    expect(logout.code, logout.stderr).toBe(0);
    expect(logout.stderr).toContain(`Logged out of ${a.url} (profile default): the token is revoked.`);
    expect(existsSync(sessionFile())).toBe(false);
    expect(await accepted(a.url, token)).toBe(401);

    const again = await runCli(['logout'], { env });
    expect(again).toMatchObject({ code: 0, stderr: 'Not logged in (profile default).\n' });
    const after = await runCli(['user', 'self'], { env });
    expect(after.code).toBe(2);
    expect(after.stderr).toContain(`not logged in to ${a.url}: run carapace login`);
    // The other profile is untouched.
    expect(parsed(await runCli(['--profile', 'lab', 'user', 'self'], { env })).data.login).toBe('root');
  });

  it('on a terminal, login asks for the password without echoing it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'carapace-cli-tty-'));
    try {
      // `script` gives the command a terminal; what it prints is what the terminal shows.
      const command = [process.execPath, CLI_BIN, '--url', a.url, '--login', 'root', 'login'].map((w) => `'${w}'`).join(' ');
      const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], { env: { ...process.env, XDG_CONFIG_HOME: dir }, stdio: ['pipe', 'pipe', 'pipe'] });
      let shown = '';
      const prompted = new Promise<void>((resolve) => {
        child.stdout.on('data', (d: Buffer) => {
          shown += d.toString();
          if (shown.includes('Password of root: ')) resolve();
        });
      });
      const ended = new Promise<number | null>((resolve) => child.on('close', resolve));
      await prompted;
      child.stdin.write(`${ROOT_PASSWORD}\r`);
      expect(await ended).toBe(0);
      child.stdin.end();
      expect(shown).toContain('Logged in to');
      expect(shown).not.toContain(ROOT_PASSWORD);
      expect(mode(join(dir, 'carapace', 'sessions', 'default.json'))).toBe(0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
