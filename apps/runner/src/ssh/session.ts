import { Socket } from 'node:net';
import { hostProblem } from '@carapace/models';
import ssh2 from 'ssh2';
import type { ClientChannel, ConnectConfig } from 'ssh2';
import { describeHostKey, formatHostKey, hostKeyAlgorithms, hostKeyBlobsEqual, parseHostKey } from './host-key.js';
import { SshError, classifyConnectError } from './ssh-error.js';

/** A server to reach over SSH. */
export interface SshTarget {
  /** IP address or host name. */
  readonly address: string;
  /** Defaults to 22. */
  readonly port?: number;
  readonly username: string;
  /**
   * The host key recorded for the server (`<type> <base64>`, as in known_hosts). The server
   * must present exactly this key. Null on first contact: any key is accepted and returned
   * so that the caller can record it.
   */
  readonly expectedHostKey: string | null;
}

/** How to connect. */
export interface SshConnectOptions {
  /** The private key to log in with (OpenSSH or PEM, without passphrase). */
  readonly privateKey: Buffer | string;
  /**
   * Deadline of the connection: TCP connect, SSH handshake and authentication together.
   * Each remote command gets the same amount of time again.
   */
  readonly timeoutMs: number;
}

/** What a remote command did. */
export interface ExecResult {
  /** The exit status, or null when the command died of a signal or sent none. */
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link SshSession.exec}. */
export interface ExecOptions {
  /** Sent to the command's standard input, which is then closed. */
  readonly stdin?: string;
  readonly timeoutMs: number;
  /** What the command is called in a timeout message, e.g. `fact gathering`. */
  readonly what: string;
  /** Fail when stdout plus stderr grow beyond this; 16 MiB by default. */
  readonly maxOutputBytes?: number;
}

/** An authenticated SSH connection. */
export interface SshSession {
  /** The host key the server proved it holds (`<type> <base64>`). */
  readonly hostKey: string;
  /** The host as shown in messages. */
  readonly host: string;
  /**
   * Runs a command and collects its output. Rejects with an {@link SshError} (`timeout`,
   * `protocol`, `command`) when it cannot; a timeout closes the connection.
   */
  exec(command: string, options: ExecOptions): Promise<ExecResult>;
  /** Closes the connection; resolves once the socket is closed. Safe to call twice. */
  close(): Promise<void>;
}

/** The host as an operator reads it: the address, plus the port when it is not 22. */
export function hostLabel(target: Pick<SshTarget, 'address' | 'port'>): string {
  const port = target.port ?? 22;
  if (port === 22) return target.address;
  return target.address.includes(':') ? `[${target.address}]:${port}` : `${target.address}:${port}`;
}

const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
const CLOSE_GRACE_MS = 1000;

class Session implements SshSession {
  private readonly closed: Promise<void>;

  constructor(
    private readonly client: ssh2.Client,
    private readonly socket: Socket,
    readonly hostKey: string,
    readonly host: string,
  ) {
    this.closed = new Promise((resolve) => {
      if (socket.closed) resolve();
      else socket.once('close', () => resolve());
    });
  }

  exec(command: string, options: ExecOptions): Promise<ExecResult> {
    const { client, socket, host } = this;
    const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    return new Promise<ExecResult>((resolve, reject) => {
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      let size = 0;
      let code: number | null = null;
      let signal: string | null = null;
      let channel: ClientChannel | undefined;
      let settled = false;
      const settle = (error: SshError | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.off('close', onSocketClose);
        if (error) {
          // Abandoning a command mid-way: the connection is not reusable, close it.
          socket.destroy();
          reject(error);
          return;
        }
        resolve({ code, signal, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') });
      };
      const onSocketClose = (): void => settle(new SshError('protocol', host, `connection lost during ${options.what}`));
      const timer = setTimeout(() => settle(new SshError('timeout', host, `${options.what} timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
      if (socket.closed) {
        onSocketClose();
        return;
      }
      socket.once('close', onSocketClose);
      const collect = (into: Buffer[]) => (chunk: Buffer) => {
        size += chunk.length;
        if (size > limit) {
          settle(new SshError('command', host, `${options.what} printed more than ${limit} bytes`));
          return;
        }
        into.push(chunk);
      };
      try {
        client.exec(command, (err, stream) => {
          if (err) {
            settle(new SshError('command', host, `cannot start ${options.what}: ${err.message}`, { cause: err }));
            return;
          }
          channel = stream;
          if (settled) {
            channel.close();
            return;
          }
          stream.on('data', collect(stdout));
          stream.stderr.on('data', collect(stderr));
          stream.on('exit', (exitCode: number | null, exitSignal?: string) => {
            code = exitCode;
            signal = exitSignal ?? null;
          });
          stream.on('error', (e: Error) => settle(new SshError('protocol', host, `${options.what} failed: ${e.message}`, { cause: e })));
          stream.on('close', () => settle(null));
          stream.end(options.stdin ?? '');
        });
      } catch (err) {
        settle(new SshError('protocol', host, `cannot start ${options.what}: ${(err as Error).message}`, { cause: err }));
      }
    });
  }

  async close(): Promise<void> {
    if (!this.socket.closed) {
      this.client.end();
      const force = setTimeout(() => this.socket.destroy(), CLOSE_GRACE_MS);
      await this.closed;
      clearTimeout(force);
    }
  }
}

/**
 * Connects to a server, checks its host key during the handshake and logs in with the key.
 *
 * Host key: the offered host key algorithms are narrowed to the recorded key's type, so a
 * server holding several keys presents the recorded one; the presented blob is compared in
 * constant time. Every failure rejects with a classified {@link SshError}, the socket closed.
 * An address that is not an IP address or a DNS name (`hostProblem`) is refused as
 * `unreachable` before any connection is tried.
 */
export function openSession(target: SshTarget, options: SshConnectOptions): Promise<SshSession> {
  const host = hostLabel(target);
  const problem = hostProblem(target.address);
  if (problem !== null) return Promise.reject(new SshError('unreachable', JSON.stringify(target.address.slice(0, 64)), `not an IP address or a DNS name (${problem})`));
  let expected = null;
  let algorithms: ConnectConfig['algorithms'] | undefined;
  if (target.expectedHostKey !== null) {
    expected = parseHostKey(target.expectedHostKey);
    if (expected === null) return Promise.reject(new SshError('host-key-mismatch', host, 'the recorded host key is not a valid "<type> <base64>" key'));
    const serverHostKey = hostKeyAlgorithms(expected.type);
    if (serverHostKey === null) return Promise.reject(new SshError('host-key-mismatch', host, `the recorded host key type ${expected.type} is not supported`));
    algorithms = { serverHostKey };
  }
  const recorded = expected;

  return new Promise<SshSession>((resolve, reject) => {
    const socket = new Socket();
    const client = new ssh2.Client();
    let presented: Buffer | null = null;
    let keyRefused = false;
    let settled = false;

    const fail = (error: SshError): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    };
    const hostKeyDetails = () => ({
      expectedHostKey: target.expectedHostKey,
      presentedHostKey: presented === null ? null : formatHostKey(presented),
    });
    const classify = (err: unknown): SshError => {
      if (keyRefused && recorded !== null && presented !== null) {
        const got = parseHostKey(formatHostKey(presented));
        const gotText = got === null ? 'an unreadable key' : describeHostKey(got);
        return new SshError('host-key-mismatch', host, `host key changed (expected ${describeHostKey(recorded)}, got ${gotText})`, { cause: err, ...hostKeyDetails() });
      }
      if (recorded !== null && err instanceof Error && /no matching host key format/.test(err.message)) {
        return new SshError('host-key-mismatch', host, `host key changed (expected ${describeHostKey(recorded)}, the server offers no ${recorded.type} key)`, { cause: err, ...hostKeyDetails() });
      }
      return classifyConnectError(err, host, target.username);
    };

    const timer = setTimeout(() => fail(new SshError('timeout', host, `timed out after ${options.timeoutMs} ms`)), options.timeoutMs);
    // These listeners stay for the life of the connection: late errors are absorbed, never thrown.
    socket.on('error', (err) => fail(classify(err)));
    client.on('error', (err) => fail(classify(err)));
    socket.once('close', () => fail(new SshError('protocol', host, 'connection closed by the server before the SSH login completed')));
    client.once('ready', () => {
      if (settled || presented === null) {
        fail(new SshError('protocol', host, 'the SSH handshake completed without a host key'));
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve(new Session(client, socket, formatHostKey(presented), host));
    });

    socket.connect({ host: target.address, port: target.port ?? 22 }, () => {
      if (settled) return;
      socket.setNoDelay(true);
      try {
        client.connect({
          sock: socket,
          username: target.username,
          privateKey: options.privateKey,
          // The deadline above covers the handshake; ssh2's own timers are off.
          readyTimeout: 0,
          keepaliveInterval: 0,
          tryKeyboard: false,
          ...(algorithms ? { algorithms } : {}),
          hostVerifier: (key: Buffer): boolean => {
            presented = Buffer.from(key);
            if (recorded === null || hostKeyBlobsEqual(recorded.blob, key)) return true;
            keyRefused = true;
            return false;
          },
        });
      } catch (err) {
        fail(new SshError('auth', host, `cannot use the private key: ${(err as Error).message}`, { cause: err }));
      }
    });
  });
}
