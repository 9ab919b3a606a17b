/** SSH to lab hosts: key pairs, the ssh options, running a command over SSH, and probing a TCP port (sshd's banner). */
import { chmod, mkdir, readFile, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import type { KeyPair } from './host-types.js';
import { exists, run } from './sys.js';
import type { RunResult } from './sys.js';

/** Generates (or reuses) an ed25519 key pair `dir/NAME` with no passphrase. */
export async function generateKeyPair(dir: string, name = 'id_ed25519'): Promise<KeyPair> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const privateKeyPath = join(dir, name);
  const publicKeyPath = `${privateKeyPath}.pub`;
  if (!(await exists(privateKeyPath)) || !(await exists(publicKeyPath))) {
    await rm(privateKeyPath, { force: true });
    await rm(publicKeyPath, { force: true });
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'carapace-lab', '-f', privateKeyPath]);
  }
  await chmod(privateKeyPath, 0o600);
  return { privateKeyPath, publicKeyPath, publicKey: (await readFile(publicKeyPath, 'utf8')).trim() };
}

/** ssh options for lab hosts: key only, no prompts, no host key checks. */
export function sshOptions(privateKeyPath: string): string[] {
  return [
    '-i',
    privateKeyPath,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'LogLevel=ERROR',
    '-o',
    'ConnectTimeout=10',
  ];
}

export interface SshOptions {
  user?: string;
  privateKeyPath: string;
  timeoutMs?: number;
  check?: boolean;
  input?: string;
}

/** Runs `command` on `host` over real SSH. */
export async function sshExec(host: { ip: string }, command: string, opts: SshOptions): Promise<RunResult> {
  return run('ssh', [...sshOptions(opts.privateKeyPath), `${opts.user ?? 'root'}@${host.ip}`, command], {
    timeoutMs: opts.timeoutMs ?? 60_000,
    check: opts.check ?? true,
    input: opts.input,
  });
}

/** Whether something accepts TCP connections on ip:port and (for SSH) sends `banner` first. */
export async function probeTcp(ip: string, port: number, banner: string | undefined, timeoutMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: ip, port });
    let got = '';
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      if (banner === undefined) done(true);
    });
    socket.on('data', (d: string) => {
      got += d;
      if (banner !== undefined && got.includes(banner)) done(true);
    });
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}
