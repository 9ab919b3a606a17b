import { execFileSync } from 'node:child_process';
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ssh2 from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureKeyPair } from '../src/key-file.js';
import {
  ed25519PrivateKeyFromSeed,
  ed25519PublicKeyProblem,
  generateEd25519KeyPair,
  openSession,
  readEd25519PrivateKey,
  repairEd25519PrivateKey,
  type OpenSshKeyPair,
} from '../src/ssh/index.js';
import { defectiveSsh2Pair } from './support/ssh2-defective-key.js';
import { startSshd, type TestSshd } from './support/sshd.js';

const KEYS = 20_000;

let dir: string;
let sshd: TestSshd;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'carapace-key-pair-'));
  sshd = await startSshd();
});

afterAll(async () => {
  await sshd?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The raw 32-byte public key of a `ssh-ed25519 <blob>` line: the blob's second SSH string. */
function rawPublicKey(line: string): Buffer {
  const blob = Buffer.from(line.split(' ')[1] ?? '', 'base64');
  const typeLength = blob.readUInt32BE(0);
  return blob.subarray(4 + typeLength + 4);
}

/** What `ssh-keygen -y` (OpenSSH's own parser) derives from a private key file: `<type> <blob>`. */
function sshKeygenPublic(pair: OpenSshKeyPair, name: string): string {
  const file = join(dir, name);
  writeFileSync(file, pair.privateKey, { mode: 0o600 });
  return execFileSync('ssh-keygen', ['-y', '-f', file], { encoding: 'utf8' }).trim().split(/\s+/).slice(0, 2).join(' ');
}

/** `ssh-keygen -l -f` of a public key line: its fingerprint line, or a thrown error. */
function sshKeygenFingerprint(line: string, name: string): string {
  const file = join(dir, `${name}.pub`);
  writeFileSync(file, `${line}\n`);
  return execFileSync('ssh-keygen', ['-l', '-f', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

describe('runner SSH keys', () => {
  it(`generates ${KEYS.toLocaleString('en')} ed25519 keys that are all valid: 32-byte public keys that OpenSSH and ssh2 read back`, () => {
    const leadingZero: OpenSshKeyPair[] = [];
    const sample: OpenSshKeyPair[] = [];
    for (let i = 0; i < KEYS; i += 1) {
      const pair = generateEd25519KeyPair('carapace-runner');
      expect(ed25519PublicKeyProblem(pair.publicKey)).toBeUndefined();
      const raw = rawPublicKey(pair.publicKey);
      expect(raw.length).toBe(32);
      const parsed = ssh2.utils.parseKey(pair.privateKey);
      if (parsed instanceof Error || Array.isArray(parsed)) throw new Error(`ssh2 cannot read key ${i}: ${String(parsed)}`);
      expect(parsed.getPublicSSH().equals(Buffer.from(pair.publicKey.split(' ')[1] ?? '', 'base64'))).toBe(true);
      const stored = readEd25519PrivateKey(pair.privateKey);
      expect(stored?.storedPublicKey.equals(raw)).toBe(true);
      if (raw[0] === 0) leadingZero.push(pair);
      else if (i % 200 === 0) sample.push(pair);
    }
    // About one key in 256 starts with a zero byte: those are the ones ssh2 got wrong.
    expect(leadingZero.length).toBeGreaterThan(30);
    for (const [i, pair] of [...leadingZero, ...sample].entries()) {
      const line = pair.publicKey.split(' ').slice(0, 2).join(' ');
      expect(sshKeygenPublic(pair, `generated-${i}`)).toBe(line);
      expect(sshKeygenFingerprint(pair.publicKey, `generated-${i}`)).toMatch(/^256 SHA256:\S+ carapace-runner \(ED25519\)$/);
    }
  });

  it("repairs a key written by ssh2's defective generator: the same seed, a 32-byte public key OpenSSH accepts", () => {
    const defective = defectiveSsh2Pair();
    // The defect is real: OpenSSH refuses the public key line ssh2 wrote, and ssh2 its own private key.
    expect(ed25519PublicKeyProblem(defective.public)).toMatch(/31 bytes long/);
    expect(() => sshKeygenFingerprint(defective.public, 'defective')).toThrow();
    expect(ssh2.utils.parseKey(defective.private)).toBeInstanceOf(Error);

    const repaired = repairEd25519PrivateKey(defective.private);
    if (!repaired) throw new Error('the defective key was not repaired');
    const before = readEd25519PrivateKey(defective.private);
    const after = readEd25519PrivateKey(repaired.privateKey);
    expect(after?.seed.equals(before?.seed ?? Buffer.alloc(0))).toBe(true);
    expect(after?.comment).toBe('carapace-runner');
    const derived = Buffer.from(createPublicKey(ed25519PrivateKeyFromSeed(after?.seed ?? Buffer.alloc(32))).export({ format: 'jwk' }).x ?? '', 'base64url');
    expect(rawPublicKey(repaired.publicKey).equals(derived)).toBe(true);
    expect(derived[0]).toBe(0);
    expect(sshKeygenPublic(repaired, 'repaired')).toBe(repaired.publicKey.split(' ').slice(0, 2).join(' '));
    // A sound key needs no repair, and nothing else is touched.
    expect(repairEd25519PrivateKey(repaired.privateKey)).toBeUndefined();
    expect(repairEd25519PrivateKey('not a key')).toBeUndefined();
  });

  it('a runner that finds such a key at start re-encodes it in place, says so, and then logs in with it', async () => {
    const defective = defectiveSsh2Pair();
    const keyFile = join(dir, 'runner', 'id_ed25519');
    const first = ensureKeyPair(keyFile);
    expect(first.repaired).toBeUndefined();
    writeFileSync(keyFile, defective.private, { mode: 0o600 });
    writeFileSync(`${keyFile}.pub`, `${defective.public}\n`);

    const mended = ensureKeyPair(keyFile);
    expect(mended.repaired).toMatch(/older carapace-runner with a defect .* the same key, now valid/);
    expect(ed25519PublicKeyProblem(mended.publicKey)).toBeUndefined();
    expect(readFileSync(`${keyFile}.pub`, 'utf8')).toBe(`${mended.publicKey}\n`);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(ensureKeyPair(keyFile)).toEqual({ publicKey: mended.publicKey });

    sshd.authorize(mended.publicKey.split(' ').slice(0, 2).join(' '));
    const session = await openSession(
      { address: sshd.host, port: sshd.port, username: 'root', expectedHostKey: null },
      { privateKey: readFileSync(keyFile), timeoutMs: 10_000 },
    );
    try {
      expect((await session.exec('echo logged-in', { timeoutMs: 10_000, what: 'a login' })).stdout.trim()).toBe('logged-in');
    } finally {
      await session.close();
    }
  });

  it('rewrites a public key file that does not match a sound private key', () => {
    const keyFile = join(dir, 'stale', 'id_ed25519');
    const { publicKey } = ensureKeyPair(keyFile);
    writeFileSync(`${keyFile}.pub`, 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAH7Hu8ICiSI6HA8W+AdWRTcVQ+RzJgDribbsyxyHoCvA=\n');
    expect(ensureKeyPair(keyFile).publicKey.split(' ').slice(0, 2)).toEqual(publicKey.split(' ').slice(0, 2));
  });
});
