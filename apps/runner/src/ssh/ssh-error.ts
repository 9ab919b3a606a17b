/**
 * Why an SSH operation against a server failed, in the words an operator reads.
 *
 * - `refused`: nothing listens on the SSH port (TCP connection refused).
 * - `unreachable`: no route to the host, or its name does not resolve.
 * - `timeout`: the connection, the handshake, authentication or a command took too long.
 * - `host-key-mismatch`: the server presented another host key than the one recorded.
 * - `auth`: the server refused the key for the user, or the local private key is unusable.
 * - `protocol`: the peer does not speak SSH properly or closed the connection early.
 * - `command`: a remote command failed (missing `python3`, no passwordless sudo, exit status).
 * - `facts`: the fact-gathering command answered something that is not valid facts.
 */
export type SshErrorKind = 'refused' | 'unreachable' | 'timeout' | 'host-key-mismatch' | 'auth' | 'protocol' | 'command' | 'facts';

/** Details attached to an {@link SshError}. */
export interface SshErrorDetails {
  /** The underlying error. */
  readonly cause?: unknown;
  /** The recorded host key (`type base64`) the server was checked against. */
  readonly expectedHostKey?: string | null;
  /** The host key the server presented (`type base64`), when the handshake got that far. */
  readonly presentedHostKey?: string | null;
}

/**
 * A classified failure of an SSH operation. `message` is `"<host>: <reason>"`, short enough
 * for an execution's failure reason or a server's `facts_error`
 * (for example `10.0.0.5: connection refused`).
 */
export class SshError extends Error {
  override readonly name = 'SshError';
  /** What went wrong. */
  readonly kind: SshErrorKind;
  /** The host as shown in the message: the address, with the port when it is not 22. */
  readonly host: string;
  /** The reason without the host prefix. */
  readonly reason: string;
  /** See {@link SshErrorDetails.expectedHostKey}. */
  readonly expectedHostKey: string | null;
  /** See {@link SshErrorDetails.presentedHostKey}. */
  readonly presentedHostKey: string | null;

  constructor(kind: SshErrorKind, host: string, reason: string, details: SshErrorDetails = {}) {
    super(`${host}: ${reason}`, details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = kind;
    this.host = host;
    this.reason = reason;
    this.expectedHostKey = details.expectedHostKey ?? null;
    this.presentedHostKey = details.presentedHostKey ?? null;
  }
}

/**
 * What sshd itself writes on a session's stderr before the command starts (a missing home
 * directory is common for service accounts such as `nobody`): never the command's own words.
 */
const SSHD_SESSION_NOTICE = /^Could not chdir to home directory /;

/**
 * The last non-empty line of a remote command's output, where a failing command says why,
 * with sshd's own notices left out; at most 200 characters, empty when there is none.
 */
export function lastOutputLine(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !SSHD_SESSION_NOTICE.test(l));
  return (lines[lines.length - 1] ?? '').slice(0, 200);
}

interface ErrorLike {
  message: string;
  code?: unknown;
  level?: unknown;
}

function errorLike(err: unknown): ErrorLike {
  if (err instanceof Error) return err;
  return { message: String(err) };
}

const SOCKET_CODES: Readonly<Record<string, [SshErrorKind, string]>> = {
  ECONNREFUSED: ['refused', 'connection refused'],
  EHOSTUNREACH: ['unreachable', 'host unreachable'],
  ENETUNREACH: ['unreachable', 'network unreachable'],
  EHOSTDOWN: ['unreachable', 'host is down'],
  ENOTFOUND: ['unreachable', 'name does not resolve'],
  EAI_AGAIN: ['unreachable', 'name resolution failed temporarily'],
  ETIMEDOUT: ['timeout', 'connection timed out'],
  ECONNRESET: ['protocol', 'connection reset by the server'],
  EPIPE: ['protocol', 'connection closed by the server'],
  EADDRNOTAVAIL: ['unreachable', 'address not available'],
};

/**
 * Classifies an error of the TCP socket or of ssh2's client before the session is ready.
 * Host-key refusals are recognised by the caller (it knows it refused the key), not here.
 */
export function classifyConnectError(err: unknown, host: string, username: string): SshError {
  const e = errorLike(err);
  const code = typeof e.code === 'string' ? e.code : undefined;
  const known = code === undefined ? undefined : SOCKET_CODES[code];
  if (known) return new SshError(known[0], host, known[1], { cause: err });
  if (e.level === 'client-authentication') return new SshError('auth', host, `authentication failed for user ${username}`, { cause: err });
  if (e.level === 'client-timeout') return new SshError('timeout', host, e.message, { cause: err });
  if (e.level === 'protocol' || e.level === 'handshake') return new SshError('protocol', host, `SSH handshake failed: ${e.message}`, { cause: err });
  if (code !== undefined) return new SshError('unreachable', host, `${code}: ${e.message}`, { cause: err });
  return new SshError('protocol', host, e.message, { cause: err });
}
