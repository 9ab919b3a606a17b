import type { ServerFacts } from '@carapace/models';
import { FACTS_COMMAND, FACTS_SCRIPT } from './facts.script.js';
import { FactsParseError, parseFactsOutput } from './facts.parser.js';
import { SshError, lastOutputLine } from './ssh-error.js';
import { openSession, type SshConnectOptions, type SshTarget } from './session.js';

/** Options of {@link gatherFacts}. */
export interface GatherFactsOptions extends SshConnectOptions {
  /** How long the fact-gathering command may take; `timeoutMs` by default. */
  readonly commandTimeoutMs?: number;
  /** The clock for `gathered_at`, in milliseconds; `Date.now` by default. */
  readonly now?: () => number;
}

/** What {@link gatherFacts} found. */
export interface GatheredFacts {
  readonly facts: ServerFacts;
  /** The host key the server proved it holds (`<type> <base64>`): record it on first contact. */
  readonly hostKey: string;
}

/**
 * Gathers a server's facts (hostname, FQDN, OS, CPU, memory, interfaces and default route,
 * block devices) with one remote command, and validates them against `ServerFactsSchema`.
 * The host key is enforced as in `preflight`. Rejects with an {@link SshError}: the
 * connection's kinds, `command` when the script cannot run, `facts` when its output is not
 * valid facts (the message names the command at fault, e.g. `lsblk not found (exit 127)`).
 */
export async function gatherFacts(target: SshTarget, options: GatherFactsOptions): Promise<GatheredFacts> {
  if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) throw new RangeError(`timeoutMs must be positive, got ${options.timeoutMs}`);
  const session = await openSession(target, options);
  try {
    const result = await session.exec(FACTS_COMMAND, {
      stdin: FACTS_SCRIPT,
      timeoutMs: options.commandTimeoutMs ?? options.timeoutMs,
      what: 'fact gathering',
    });
    const gatheredAt = (options.now ?? Date.now)() / 1000;
    try {
      return { facts: parseFactsOutput(result.stdout, gatheredAt), hostKey: session.hostKey };
    } catch (err) {
      if (!(err instanceof FactsParseError)) throw err;
      const status = result.code === 0 ? '' : ` (the script exited with ${result.code ?? `signal ${result.signal ?? 'unknown'}`})`;
      const stderr = lastOutputLine(result.stderr);
      // Not one section: the script never ran, and the login shell (nologin, say) told why on stdout.
      const shellSaid = stderr === '' && !result.stdout.includes('@@carapace-facts ') ? lastOutputLine(result.stdout) : '';
      const why = stderr ? `; stderr: ${stderr}` : shellSaid ? `: ${shellSaid}` : '';
      throw new SshError('facts', session.host, `cannot gather facts: ${err.message}${status}${why}`, { cause: err });
    }
  } finally {
    await session.close();
  }
}
