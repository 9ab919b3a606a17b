import { Client } from '@carapace/client';
import type { Command } from 'commander';
import { renderTable } from './table.js';

/** Where the command reads and writes, and its environment. */
export interface CliIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The global options, as commander parsed them (environment variables included). */
export interface GlobalOptions {
  readonly url?: string;
  readonly login?: string;
  readonly password?: string;
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

/** An execution that did not complete (`execution create --wait`): exit status 4. */
export class ExecutionFailed extends Error {
  override name = 'ExecutionFailed';
}

const TRUE = /^(1|y|yes|t|true|on)$/i;

/** What every command shares: the I/O, the client (made on first use) and the output format. */
export class Cli {
  private made: Client | null = null;

  constructor(readonly io: CliIo) {}

  /** The global options of the command line that `command` belongs to. */
  globals(command: Command): GlobalOptions {
    const options = command.optsWithGlobals<GlobalOptions>();
    // A negatable flag cannot take commander's env support (any value would disable checks).
    const noVerify = TRUE.test(this.io.env.CARAPACE_NO_VERIFY ?? '');
    return { ...options, verify: options.verify && !noVerify };
  }

  /** The URL of the API (`--url` or `CARAPACE_URL`); a usage error without one. */
  url(command: Command): string {
    const url = this.globals(command).url;
    if (!url) throw new UsageError('the API address is missing: give --url or set CARAPACE_URL');
    return url;
  }

  /**
   * The client, made on first use from the global options. With `auth` (the default), the
   * login and password must be known: the client logs in at the first call.
   */
  client(command: Command, { auth = true }: { auth?: boolean } = {}): Client {
    const options = this.globals(command);
    const url = this.url(command);
    if (auth && (!options.login || !options.password)) {
      throw new UsageError('the login or the password is missing: give --login and --password, or set CARAPACE_LOGIN and CARAPACE_PASSWORD');
    }
    this.made ??= new Client({
      url,
      login: options.login ?? '',
      password: options.password ?? '',
      timeout: options.timeout === undefined ? null : Math.round(options.timeout * 1000),
      verify: options.verify,
      certificateFile: options.sslCertificate ?? null,
    });
    return this.made;
  }

  /** Prints an answer on stdout in the chosen format. */
  print(command: Command, value: unknown): void {
    const text = this.globals(command).output === 'table' ? renderTable(value) : `${JSON.stringify(value, null, 2)}\n`;
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

  /** Logs out (the token should not outlive the command) and releases the client. */
  async close(): Promise<void> {
    const client = this.made;
    this.made = null;
    if (!client) return;
    try {
      await client.logout({ timeout: 5000 });
    } catch {
      // The command's own outcome is what matters; a token left behind expires by itself.
    }
    await client.close();
  }
}
