import { Client, normaliseBaseUrl, type ClientOptions } from '@carapace/client';
import { parseBoolean } from '@carapace/config';
import type { Command } from 'commander';
import { ask } from './prompt.js';
import { configDir, DEFAULT_PROFILE, isProfileName, SessionStore, type Profile, type Session } from './session.js';
import { renderTable, tableWidth } from './table.js';

/** Where the command reads and writes, and its environment. */
export interface CliIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The global options, as commander parsed them (environment variables included). */
export interface GlobalOptions {
  readonly url?: string;
  readonly login?: string;
  readonly password?: string;
  readonly profile?: string;
  /** Seconds. */
  readonly timeout?: number;
  readonly verify: boolean;
  readonly sslCertificate?: string;
  readonly output: 'json' | 'table';
}

/** A mistake in the command line: printed with a hint, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** No usable login (none stored, or the stored one expired or was refused): exit status 2. */
export class NotLoggedIn extends Error {
  override name = 'NotLoggedIn';
}

/** An execution that did not complete (`execution create --wait`): exit status 4. */
export class ExecutionFailed extends Error {
  override name = 'ExecutionFailed';
}

/**
 * The status of the clusters could not be read (`cluster status`): the API error or the
 * failure to reach it (`cause`) is reported as for any command, with exit status 3, so that
 * it is never taken for a cluster's health (1 warn, 2 critical).
 */
export class StatusUnknown extends Error {
  override name = 'StatusUnknown';
  constructor(override readonly cause: unknown) {
    super('the cluster status could not be read');
  }
}

/** The command that logs in to a profile, as the user types it. */
export function loginCommandFor(profile: string): string {
  return profile === DEFAULT_PROFILE ? 'carapace login' : `carapace --profile ${profile} login`;
}

/** What every command shares: the I/O, the client (made on first use) and the output format. */
export class Cli {
  private made: Client | null = null;
  /** Whether the client logged in by itself (with a password): it logs out at the end. */
  private ephemeral = false;
  /** The profile whose stored session the client uses, if any. */
  private sessionProfile: string | null = null;
  /** The exit status of a command that ends without an error (`cluster status` sets it from the health). */
  exitStatus = 0;

  constructor(readonly io: CliIo) {}

  /** The global options of the command line that `command` belongs to. */
  globals(command: Command): GlobalOptions {
    const options = command.optsWithGlobals<GlobalOptions>();
    // A negatable flag cannot take commander's env support (any value would disable checks).
    const noVerify = parseBoolean(this.io.env.CARAPACE_NO_VERIFY ?? '') === true;
    return { ...options, verify: options.verify && !noVerify };
  }

  /** The store of profiles and sessions. */
  get store(): SessionStore {
    return new SessionStore(configDir(this.io.env));
  }

  /** The profile the command runs under (`--profile`, `CARAPACE_PROFILE`, else `default`). */
  profileName(command: Command): string {
    const name = this.globals(command).profile ?? DEFAULT_PROFILE;
    if (!isProfileName(name)) throw new UsageError(`"${name}" is not a profile name: letters, digits, ".", "_" and "-"`);
    return name;
  }

  /** The profile's remembered URL and login, or null. */
  async profile(command: Command): Promise<Profile | null> {
    return this.store.profile(this.profileName(command));
  }

  /** The URL of the API: `--url` or `CARAPACE_URL`, else the profile's; a usage error without one. */
  async url(command: Command): Promise<string> {
    const url = this.globals(command).url ?? (await this.profile(command))?.url;
    if (!url) throw new UsageError('the API address is missing: give --url or set CARAPACE_URL (carapace login remembers it)');
    return url;
  }

  /** The client options every client of this command line shares (address, time limit, TLS). */
  async clientOptions(command: Command): Promise<Pick<ClientOptions, 'url' | 'timeout' | 'verify' | 'certificateFile'>> {
    const options = this.globals(command);
    return {
      url: await this.url(command),
      timeout: options.timeout === undefined ? null : Math.round(options.timeout * 1000),
      verify: options.verify,
      certificateFile: options.sslCertificate ?? null,
    };
  }

  /**
   * The client, made on first use from the global options. With `auth` (the default) it
   * authenticates: with the password when one is given (`--password`, `CARAPACE_PASSWORD`,
   * or asked for on a terminal), else with the profile's stored session.
   */
  async client(command: Command, { auth = true }: { auth?: boolean } = {}): Promise<Client> {
    if (this.made) return this.made;
    const base = await this.clientOptions(command);
    if (!auth) {
      this.made = new Client({ ...base, login: '' });
      return this.made;
    }
    const options = this.globals(command);
    const profileName = this.profileName(command);
    const profile = await this.store.profile(profileName);
    const login = options.login ?? profile?.login;
    if (options.password !== undefined) {
      if (!login) throw new UsageError('the login is missing: give --login or set CARAPACE_LOGIN');
      return this.passwordClient({ ...base, login, password: options.password });
    }
    const session = await this.store.session(profileName);
    if (session && normaliseBaseUrl(session.url) === normaliseBaseUrl(base.url) && (login === undefined || login === session.login)) {
      return this.sessionClient(base, profileName, session);
    }
    if (this.io.stdin.isTTY) {
      const who = login ?? (await ask(this, 'Login: '));
      const password = await ask(this, `Password of ${who}: `, { hidden: true });
      return this.passwordClient({ ...base, login: who, password });
    }
    throw new NotLoggedIn(
      `not logged in to ${normaliseBaseUrl(base.url)}: run ${loginCommandFor(profileName)}, or give the login and the password (--login and --password-stdin to login, or CARAPACE_LOGIN and CARAPACE_PASSWORD)`,
    );
  }

  private passwordClient(options: ClientOptions): Client {
    this.made = new Client(options);
    this.ephemeral = true;
    return this.made;
  }

  private sessionClient(base: Pick<ClientOptions, 'url'>, profile: string, session: Session): Client {
    if (session.expires_at <= Date.now() / 1000) throw new NotLoggedIn(`session expired: run ${loginCommandFor(profile)}`);
    this.made = new Client({ ...base, login: session.login, token: session.token });
    this.sessionProfile = profile;
    return this.made;
  }

  /**
   * When the server refused the stored session (401: expired early, or revoked), forgets it
   * and returns the message that says so; else null.
   */
  async refusedSession(status: number): Promise<string | null> {
    const profile = this.sessionProfile;
    if (status !== 401 || profile === null) return null;
    await this.store.removeSession(profile);
    return `the session was refused (expired or revoked): run ${loginCommandFor(profile)}`;
  }

  /** The width tables fit in. */
  get width(): number {
    return tableWidth(this.io.stdout, this.io.env);
  }

  /** Whether the answer is printed as a table (`-o table`). */
  tables(command: Command): boolean {
    return this.globals(command).output === 'table';
  }

  /** Prints an answer on stdout in the chosen format; `servers` names the servers in a table. */
  print(command: Command, value: unknown, { servers }: { servers?: ReadonlyMap<string, string> } = {}): void {
    const text = this.tables(command) ? renderTable(value, { width: this.width, ...(servers ? { servers } : {}) }) : `${JSON.stringify(value, null, 2)}\n`;
    this.io.stdout.write(text);
  }

  /** Writes a line on stderr. */
  note(text: string): void {
    this.io.stderr.write(`${text}\n`);
  }

  /** Reads stdin to its end. */
  async readStdin(): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of this.io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    return Buffer.concat(chunks).toString('utf8');
  }

  /**
   * Releases the client. A client that logged in by itself logs out (its token should not
   * outlive the command); a stored session stays.
   */
  async close(): Promise<void> {
    const client = this.made;
    const ephemeral = this.ephemeral;
    this.made = null;
    this.ephemeral = false;
    if (!client) return;
    if (ephemeral) {
      try {
        await client.logout({ timeout: 5000 });
      } catch {
        // The command's own outcome is what matters; a token left behind expires by itself.
      }
    }
    await client.close();
  }
}
