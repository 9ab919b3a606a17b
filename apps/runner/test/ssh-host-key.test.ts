import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatHostKey, hostKeyFingerprint, parseHostKey } from '../src/ssh/index.js';

const dir = mkdtempSync(join(tmpdir(), 'carapace-hostkey-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let serial = 0;
function generate(type: 'ed25519' | 'ecdsa' | 'rsa'): { publicKey: string; fingerprint: string } {
  const file = join(dir, `key-${type}-${++serial}`);
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', 'someone@somewhere', '-f', file]);
  const fingerprint = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${file}.pub`], { encoding: 'utf8' }).split(' ')[1] ?? '';
  return { publicKey: readFileSync(`${file}.pub`, 'utf8').trim(), fingerprint };
}

describe('host keys', () => {
  it.each(['ed25519', 'ecdsa', 'rsa'] as const)('round-trips an OpenSSH %s key and fingerprints it as ssh-keygen does', (type) => {
    const { publicKey, fingerprint } = generate(type);
    const parsed = parseHostKey(publicKey);
    expect(parsed).not.toBeNull();
    const [keyType, base64] = publicKey.split(' ');
    expect(parsed?.type).toBe(keyType);
    expect(formatHostKey(parsed?.blob ?? Buffer.alloc(0))).toBe(`${keyType} ${base64}`);
    expect(hostKeyFingerprint(parsed?.blob ?? Buffer.alloc(0))).toBe(fingerprint);
  });

  it('refuses malformed keys and a type that does not match the blob', () => {
    const { publicKey } = generate('ed25519');
    const base64 = publicKey.split(' ')[1] ?? '';
    expect(parseHostKey('')).toBeNull();
    expect(parseHostKey('ssh-ed25519')).toBeNull();
    expect(parseHostKey('ssh-ed25519 not*base64')).toBeNull();
    expect(parseHostKey(`ssh-ed25519 ${base64.slice(0, -4)}`)).toBeNull();
    expect(parseHostKey(`ssh-rsa ${base64}`)).toBeNull();
    expect(parseHostKey(`ssh-ed25519 ${Buffer.from('garbage').toString('base64')}`)).toBeNull();
  });
});
