/**
 * A key pair from ssh2's own generator whose public key lost its leading zero byte (about one
 * in 256; mscdex/ssh2's defect that older runners wrote). Made in a child process with a time
 * limit, tried again if it does not answer: finding one takes hundreds of synchronous key
 * generations, and in Node 20 a process making many of those can deadlock in the garbage
 * collector (seen in this project's tests: the worker asleep on a mutex for good, the run
 * stopped by CI's time limit). One pair per test process.
 */
import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Ssh2KeyPair {
  readonly private: string;
  readonly public: string;
}

const SCRIPT = `
const ssh2 = require('ssh2');
for (let i = 0; i < 20000; i += 1) {
  const pair = ssh2.utils.generateKeyPairSync('ed25519', { comment: 'carapace-runner' });
  if (Buffer.from(pair.public.split(' ')[1] || '', 'base64').length < 51) {
    process.stdout.write(JSON.stringify({ private: pair.private, public: pair.public }));
    process.exit(0);
  }
}
process.exit(3);
`;

let made: Ssh2KeyPair | undefined;

export function defectiveSsh2Pair(): Ssh2KeyPair {
  if (made) return made;
  const errors: string[] = [];
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      const out = execFileSync(process.execPath, ['-e', SCRIPT], { cwd: dirname(fileURLToPath(import.meta.url)), encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] });
      made = JSON.parse(out) as Ssh2KeyPair;
      return made;
    } catch (err) {
      const e = err as { status?: number | null; signal?: string | null; message: string };
      if (e.status === 3) throw new Error('ssh2 made no defective key in 20,000: its generator was fixed, and the repair tests have nothing left to repair');
      errors.push(e.signal ? `killed (${e.signal}) after 60 s` : e.message.split('\n')[0] ?? 'failed');
    }
  }
  throw new Error(`no defective ssh2 key pair in three tries: ${errors.join('; ')}`);
}
