import { SshError, lastOutputLine } from './ssh-error.js';
import { hostLabel, openSession, type SshConnectOptions, type SshTarget } from './session.js';

/** Options of {@link preflight}. */
export interface PreflightOptions extends SshConnectOptions {
  /** How many hosts are checked at the same time; 32 by default. */
  readonly concurrency?: number;
}

/** The outcome of the pre-flight check of one host. */
export interface PreflightResult {
  /** The target's address, as given. */
  readonly address: string;
  readonly ok: boolean;
  /**
   * The host key the server proved it holds (`<type> <base64>`), once it was accepted: the
   * recorded one, or on first contact (`expectedHostKey` null) the one to record. Null when
   * the handshake did not get that far or the key was refused.
   */
  readonly hostKey: string | null;
  /** Why the host is not ready, prefixed with the host: `10.0.0.5: connection refused`. Null when ok. */
  readonly reason: string | null;
  /** The class of the failure, null when ok. */
  readonly kind: SshError['kind'] | null;
}

const DEFAULT_CONCURRENCY = 32;

/**
 * The remote half of the check, run by `/bin/sh` from standard input (so the login shell's
 * syntax does not matter). Exit statuses 100 and up name the failed requirement.
 */
const PREFLIGHT_SCRIPT = `
if ! command -v python3 >/dev/null 2>&1; then exit 100; fi
if [ "$(id -u)" != 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then exit 101; fi
  sudo -n true </dev/null >/dev/null || exit 102
fi
echo carapace-preflight-ok
`;

function commandFailure(host: string, username: string, code: number | null, signal: string | null, stdout: string, stderr: string): SshError | null {
  if (code === 0 && stdout.includes('carapace-preflight-ok')) return null;
  switch (code) {
    case 100:
      return new SshError('command', host, 'python3 not found');
    case 101:
      return new SshError('command', host, `sudo not found (user ${username} is not root)`);
    case 102: {
      const why = lastOutputLine(stderr);
      return new SshError('command', host, `passwordless sudo failed for user ${username}${why ? `: ${why}` : ''}`);
    }
    default: {
      const status = code === null ? `signal ${signal ?? 'unknown'}` : `exit ${code}`;
      // A login shell that refuses to run anything (nologin) says why on stdout.
      const why = lastOutputLine(stderr) || lastOutputLine(stdout);
      return new SshError('command', host, `the check command failed (${status})${why ? `: ${why}` : ''}`);
    }
  }
}

async function checkOne(target: SshTarget, options: PreflightOptions): Promise<PreflightResult> {
  let hostKey: string | null = null;
  try {
    const session = await openSession(target, options);
    hostKey = session.hostKey;
    try {
      const r = await session.exec('/bin/sh -s', { stdin: PREFLIGHT_SCRIPT, timeoutMs: options.timeoutMs, what: 'the check command', maxOutputBytes: 64 * 1024 });
      const failure = commandFailure(session.host, target.username, r.code, r.signal, r.stdout, r.stderr);
      if (failure) throw failure;
    } finally {
      await session.close();
    }
    return { address: target.address, ok: true, hostKey, reason: null, kind: null };
  } catch (err) {
    const error = err instanceof SshError ? err : new SshError('protocol', hostLabel(target), (err as Error).message, { cause: err });
    return { address: target.address, ok: false, hostKey, reason: error.message, kind: error.kind };
  }
}

/**
 * Checks, before Ansible starts, that every target is ready for it: reachable over SSH with
 * the key, presenting the recorded host key (checked during the handshake), `python3`
 * present, and `sudo -n true` working unless the user is root.
 *
 * Hosts are checked in parallel (at most `concurrency` at a time); each gets `timeoutMs` to
 * connect and log in, and as much again for the check command. Never rejects: every target
 * gets a result, in the order of `targets`, with a short operator-facing reason on failure.
 */
export async function preflight(targets: readonly SshTarget[], options: PreflightOptions): Promise<PreflightResult[]> {
  const concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency must be a positive integer, got ${concurrency}`);
  if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) throw new RangeError(`timeoutMs must be positive, got ${options.timeoutMs}`);
  const results = new Array<PreflightResult>(targets.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < targets.length; i = next++) {
      results[i] = await checkOne(targets[i] as SshTarget, options);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, targets.length) }, worker));
  return results;
}
