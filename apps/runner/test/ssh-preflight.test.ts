import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preflight, type PreflightOptions, type SshTarget } from '../src/ssh/index.js';
import { freePort, generateClientKey, sshKeygen, startSilentServer, startSshd, type SilentServer, type TestSshd } from './support/sshd.js';

/** sshd logs one of these per remote command it starts. */
const COMMAND_STARTED = /Starting session: command for \S+ from 127\.0\.0\.1/g;
const LOGGED_IN = /Accepted publickey for /g;

let sshd: TestSshd;
let silent: SilentServer;
let keys: string;

beforeAll(async () => {
  sshd = await startSshd();
  silent = await startSilentServer();
  keys = mkdtempSync(join(tmpdir(), 'carapace-preflight-keys-'));
});

afterAll(async () => {
  await sshd?.stop();
  await silent?.stop();
  if (keys) rmSync(keys, { recursive: true, force: true });
});

function target(overrides: Partial<SshTarget> = {}): SshTarget {
  return { address: sshd.host, port: sshd.port, username: 'root', expectedHostKey: null, ...overrides };
}

function options(overrides: Partial<PreflightOptions> = {}): PreflightOptions {
  return { privateKey: sshd.clientKey.privateKey, timeoutMs: 10_000, ...overrides };
}

function count(pattern: RegExp, text: string): number {
  return [...text.matchAll(pattern)].length;
}

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await run();
  return { value, ms: performance.now() - start };
}

describe('preflight against a real sshd', () => {
  it('records the host key on first contact, then passes with the recorded key', async () => {
    const mark = sshd.mark();
    const [first] = await preflight([target()], options());
    expect(first).toEqual({ address: sshd.host, ok: true, hostKey: sshd.hostKey, reason: null, kind: null });
    // The check command really ran on the server.
    await sshd.waitForLog(COMMAND_STARTED, mark);

    const again = await preflight([target({ expectedHostKey: first?.hostKey ?? null })], options());
    expect(again).toEqual([{ address: sshd.host, ok: true, hostKey: sshd.hostKey, reason: null, kind: null }]);
  });

  it('accepts the recorded key with a trailing comment, as known_hosts lines carry', async () => {
    const [result] = await preflight([target({ expectedHostKey: `${sshd.hostKey} root@somewhere` })], options());
    expect(result).toMatchObject({ ok: true, hostKey: sshd.hostKey, reason: null });
  });

  it('refuses a server whose host key changed, before logging in or running anything', async () => {
    const other = sshKeygen(keys, 'other-ed25519', 'ed25519');
    const mark = sshd.mark();
    const [result] = await preflight([target({ expectedHostKey: other.publicKey })], options());
    expect(result?.ok).toBe(false);
    expect(result?.kind).toBe('host-key-mismatch');
    expect(result?.hostKey).toBeNull();
    expect(result?.reason).toMatch(new RegExp(`^127\\.0\\.0\\.1:${sshd.port}: host key changed \\(expected ssh-ed25519 SHA256:\\S+, got ssh-ed25519 SHA256:\\S+\\)$`));
    // The server saw the connection and dropped it before authentication: nothing ran.
    const log = await sshd.waitForLog(/(Connection closed|Disconnected from|Received disconnect|disconnected by|Connection reset).*\[preauth\]/, mark);
    expect(count(LOGGED_IN, log)).toBe(0);
    expect(count(COMMAND_STARTED, log)).toBe(0);
  });

  it('names the server key type it lacks when the recorded key is of another type', async () => {
    const ecdsa = sshKeygen(keys, 'other-ecdsa', 'ecdsa');
    const mark = sshd.mark();
    const [result] = await preflight([target({ expectedHostKey: ecdsa.publicKey })], options());
    expect(result).toMatchObject({ ok: false, kind: 'host-key-mismatch', hostKey: null });
    expect(result?.reason).toMatch(/: host key changed \(expected ecdsa-sha2-nistp256 SHA256:\S+, the server offers no ecdsa-sha2-nistp256 key\)$/);
    await sshd.waitForLog(/no matching host key type found.*\[preauth\]/, mark);
    expect(count(LOGGED_IN, sshd.logSince(mark))).toBe(0);
    expect(count(COMMAND_STARTED, sshd.logSince(mark))).toBe(0);
  });

  it('makes a server holding several host keys present the recorded one', async () => {
    const multi = await startSshd({ hostKeyTypes: ['ed25519', 'ecdsa', 'rsa'] });
    try {
      const at = (expectedHostKey: string | null): SshTarget => ({ address: multi.host, port: multi.port, username: 'root', expectedHostKey });
      const opts = options({ privateKey: multi.clientKey.privateKey });
      const [first] = await preflight([at(null)], opts);
      expect(first?.ok).toBe(true);
      expect(multi.hostKeys).toContain(first?.hostKey);
      // Whichever key was recorded, the server must prove it holds that one.
      const results = await preflight(multi.hostKeys.map(at), opts);
      expect(results.map((r) => [r.ok, r.hostKey, r.reason])).toEqual(multi.hostKeys.map((k) => [true, k, null]));
      // Another key of a type the server holds is still a changed key.
      const rsa = sshKeygen(keys, 'other-rsa', 'rsa');
      const [changed] = await preflight([at(rsa.publicKey)], opts);
      expect(changed).toMatchObject({ ok: false, kind: 'host-key-mismatch', hostKey: null });
      expect(changed?.reason).toMatch(/: host key changed \(expected ssh-rsa SHA256:\S+, got ssh-rsa SHA256:\S+\)$/);
    } finally {
      await multi.stop();
    }
  });

  it('treats an empty recorded host key as invalid, not as first contact', async () => {
    const mark = sshd.mark();
    // Only null means "nothing recorded yet": an empty string does not turn the check off.
    const [empty] = await preflight([target({ expectedHostKey: '' })], options());
    expect(empty).toMatchObject({ ok: false, kind: 'host-key-mismatch', hostKey: null });
    expect(sshd.logSince(mark)).not.toMatch(/Connection from/);
  });

  it('refuses a recorded host key that is not a key, without connecting', async () => {
    const mark = sshd.mark();
    const [result] = await preflight([target({ expectedHostKey: 'ssh-ed25519 not-a-key' })], options());
    expect(result).toMatchObject({ ok: false, kind: 'host-key-mismatch', hostKey: null });
    expect(result?.reason).toBe(`127.0.0.1:${sshd.port}: the recorded host key is not a valid "<type> <base64>" key`);
    expect(sshd.logSince(mark)).not.toMatch(/Connection from/);
  });

  it('reports a closed port as connection refused, at once', async () => {
    const port = await freePort();
    const { value, ms } = await timed(() => preflight([{ address: '127.0.0.1', port, username: 'root', expectedHostKey: null }], options()));
    expect(value).toEqual([{ address: '127.0.0.1', ok: false, hostKey: null, reason: `127.0.0.1:${port}: connection refused`, kind: 'refused' }]);
    expect(ms).toBeLessThan(2000);
  });

  it('shows an IPv6 address with its port in brackets', async () => {
    const port = await freePort();
    const [result] = await preflight([{ address: '::1', port, username: 'root', expectedHostKey: null }], options({ timeoutMs: 3000 }));
    expect(result).toMatchObject({ address: '::1', ok: false, hostKey: null });
    expect(result?.reason).toMatch(new RegExp(`^\\[::1\\]:${port}: `));
  });

  it('omits the port from the reason when it is 22', async () => {
    // Nothing listens on port 22 here (no system sshd runs), so this is refused too.
    const [result] = await preflight([{ address: '127.0.0.1', username: 'root', expectedHostKey: null }], options({ timeoutMs: 3000 }));
    expect(result?.reason).toBe('127.0.0.1: connection refused');
  });

  it('reports a key the server does not authorize as an authentication failure', async () => {
    const stranger = generateClientKey();
    const mark = sshd.mark();
    const [result] = await preflight([target()], options({ privateKey: stranger.privateKey }));
    expect(result).toEqual({
      address: sshd.host,
      ok: false,
      hostKey: null,
      reason: `127.0.0.1:${sshd.port}: authentication failed for user root`,
      kind: 'auth',
    });
    await sshd.waitForLog(/Failed publickey for root [\s\S]*\[preauth\]/, mark);
    expect(count(LOGGED_IN, sshd.logSince(mark))).toBe(0);
    expect(count(COMMAND_STARTED, sshd.logSince(mark))).toBe(0);
  });

  it('reports an unusable private key as an authentication failure', async () => {
    const [result] = await preflight([target()], options({ privateKey: 'not a private key' }));
    expect(result).toMatchObject({ ok: false, kind: 'auth', hostKey: null });
    expect(result?.reason).toMatch(new RegExp(`^127\\.0\\.0\\.1:${sshd.port}: cannot use the private key: `));
  });

  it('reports a failing check command with its exit status and what it said', async () => {
    // nobody's login shell is nologin: it logs in with the key and cannot run anything.
    const [result] = await preflight([target({ username: 'nobody' })], options());
    expect(result).toMatchObject({ ok: false, kind: 'command', hostKey: sshd.hostKey });
    expect(result?.reason).toMatch(new RegExp(`^127\\.0\\.0\\.1:${sshd.port}: the check command failed \\(exit 1\\): This account is currently not available\\.$`));
  });

  it('reports a server without python3', async () => {
    // This key's sessions run the command with a PATH where nothing is found.
    const key = generateClientKey();
    sshd.authorize(key.publicKey, 'command="PATH=/nonexistent exec /bin/sh -c \\"$SSH_ORIGINAL_COMMAND\\""');
    const [result] = await preflight([target()], options({ privateKey: key.privateKey }));
    expect(result).toEqual({ address: sshd.host, ok: false, hostKey: sshd.hostKey, reason: `127.0.0.1:${sshd.port}: python3 not found`, kind: 'command' });
  });

  it('gives up on a server that accepts and never speaks, within timeoutMs', async () => {
    const before = silent.connections();
    const { value, ms } = await timed(() =>
      preflight([{ address: '127.0.0.1', port: silent.port, username: 'root', expectedHostKey: null }], options({ timeoutMs: 700 })),
    );
    expect(value).toEqual([{ address: '127.0.0.1', ok: false, hostKey: null, reason: `127.0.0.1:${silent.port}: timed out after 700 ms`, kind: 'timeout' }]);
    expect(silent.connections()).toBe(before + 1);
    expect(ms).toBeGreaterThanOrEqual(650);
    expect(ms).toBeLessThan(700 + 1500); // bounded by the timeout, with room for a loaded machine
  });

  it('checks several targets in parallel: the total time is the slowest one, not the sum', async () => {
    const closed = await freePort();
    const others = await Promise.all([startSilentServer('127.0.0.2'), startSilentServer('127.0.0.3')]);
    try {
      const silentTarget = (s: SilentServer): SshTarget => ({ address: s.host, port: s.port, username: 'root', expectedHostKey: null });
      const targets: SshTarget[] = [
        target(),
        silentTarget(silent),
        { address: '127.0.0.1', port: closed, username: 'root', expectedHostKey: null },
        silentTarget(others[0]),
        target({ expectedHostKey: sshd.hostKey }),
        silentTarget(others[1]),
      ];
      // Long enough for the real sshd's logins on a machine busy with other test files.
      const timeoutMs = 5000;
      const { value, ms } = await timed(() => preflight(targets, options({ timeoutMs })));
      expect(value.map((r) => [r.address, r.ok, r.kind])).toEqual([
        ['127.0.0.1', true, null],
        ['127.0.0.1', false, 'timeout'],
        ['127.0.0.1', false, 'refused'],
        ['127.0.0.2', false, 'timeout'],
        ['127.0.0.1', true, null],
        ['127.0.0.3', false, 'timeout'],
      ]);
      expect(value[0]?.hostKey).toBe(sshd.hostKey);
      expect(value[2]?.reason).toBe(`127.0.0.1:${closed}: connection refused`);
      expect(value[3]?.reason).toBe(`127.0.0.2:${others[0].port}: timed out after ${timeoutMs} ms`);
      expect(value[5]?.reason).toBe(`127.0.0.3:${others[1].port}: timed out after ${timeoutMs} ms`);
      // Three targets time out: one after the other, that would take 15 s.
      expect(ms).toBeGreaterThanOrEqual(timeoutMs - 50);
      expect(ms).toBeLessThan(timeoutMs * 2.5); // one after the other: 3 × timeoutMs
    } finally {
      await Promise.all(others.map((s) => s.stop()));
    }
  });

  it('checks at most `concurrency` targets at a time', async () => {
    const silentTarget: SshTarget = { address: '127.0.0.1', port: silent.port, username: 'root', expectedHostKey: null };
    const { value, ms } = await timed(() => preflight([silentTarget, silentTarget, silentTarget], options({ timeoutMs: 400, concurrency: 1 })));
    expect(value.every((r) => r.kind === 'timeout')).toBe(true);
    expect(ms).toBeGreaterThanOrEqual(3 * 400 - 50);
  });

  it('returns an empty list for no targets and rejects nonsensical options', async () => {
    await expect(preflight([], options())).resolves.toEqual([]);
    await expect(preflight([target()], options({ timeoutMs: 0 }))).rejects.toThrow(RangeError);
    await expect(preflight([target()], options({ concurrency: 0 }))).rejects.toThrow(RangeError);
  });
});
