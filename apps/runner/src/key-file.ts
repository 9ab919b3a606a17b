import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import ssh2 from 'ssh2';
import { RunnerConfigError } from './config.js';
import { ed25519PublicKeyProblem, generateEd25519KeyPair, repairEd25519PrivateKey } from './ssh/index.js';

/** Writes `content` to `file` through a temporary file renamed over it, with `mode`. */
export function writeAtomically(file: string, content: string, mode: number): void {
  const temporary = `${file}.tmp-${process.pid}`;
  writeFileSync(temporary, content, { mode });
  chmodSync(temporary, mode);
  renameSync(temporary, file);
}

/** The runner's public key line, and what {@link ensureKeyPair} had to mend to give it. */
export interface RunnerKey {
  readonly publicKey: string;
  /** Set when a key written by an older version was re-encoded in place: say so at start. */
  readonly repaired?: string;
}

/**
 * Reads the SSH key pair, generating an ed25519 one the first time (Node's crypto, encoded by
 * `ssh/key-pair.ts`, never ssh2's generator: see there). A key that an older runner wrote with
 * a 31-byte public key is re-encoded in place, the same key, and the answer says so.
 */
export function ensureKeyPair(privateKeyFile: string): RunnerKey {
  const publicFile = `${privateKeyFile}.pub`;
  if (!existsSync(privateKeyFile)) {
    mkdirSync(dirname(privateKeyFile), { recursive: true, mode: 0o700 });
    const pair = generateEd25519KeyPair('carapace-runner');
    writeAtomically(privateKeyFile, pair.privateKey, 0o600);
    writeAtomically(publicFile, `${pair.publicKey}\n`, 0o644);
    return { publicKey: pair.publicKey };
  }
  const privateText = readFileSync(privateKeyFile, 'utf8');
  const repaired = repairEd25519PrivateKey(privateText);
  if (repaired) {
    writeAtomically(privateKeyFile, repaired.privateKey, 0o600);
    writeAtomically(publicFile, `${repaired.publicKey}\n`, 0o644);
    return {
      publicKey: repaired.publicKey,
      repaired:
        `the SSH key ${privateKeyFile} was written by an older carapace-runner with a defect (its public key lacked a leading zero byte, ` +
        'ssh2 #1390), so no server could accept it; it is re-encoded in place: the same key, now valid. ' +
        'Servers that were given the old public key line never accepted it: give them this one (carapace cloud-config prints it)',
    };
  }
  if (existsSync(publicFile)) {
    const line = readFileSync(publicFile, 'utf8').trim();
    if (ed25519PublicKeyProblem(line) === undefined) return { publicKey: line };
  }
  const key = ssh2.utils.parseKey(privateText);
  if (key instanceof Error) throw new RunnerConfigError(`cannot read the SSH key ${privateKeyFile}: ${key.message}`);
  const publicKey = `${key.type} ${key.getPublicSSH().toString('base64')}`;
  const problem = ed25519PublicKeyProblem(publicKey);
  if (problem !== undefined) throw new RunnerConfigError(`the SSH key ${privateKeyFile} is not usable: ${problem}; move it and ${publicFile} away and start again for a new key`);
  return { publicKey };
}
