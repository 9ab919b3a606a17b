import { Client, normaliseBaseUrl, ServiceApiError } from '@carapace/client';
import type { Command } from 'commander';
import { UsageError, type Cli } from '../context.js';
import { ask, firstLine } from '../prompt.js';

/** A Unix time as `YYYY-MM-DD HH:MM:SS UTC`. */
function utc(seconds: number): string {
  return `${new Date(seconds * 1000).toISOString().replace('T', ' ').slice(0, 19)} UTC`;
}

/**
 * The password of `carapace login`: `--password`/`CARAPACE_PASSWORD`; else the first line of
 * stdin with `--password-stdin` or when stdin is not a terminal; else asked for without echo.
 */
async function loginPassword(cli: Cli, command: Command, login: string, fromStdin: boolean): Promise<string> {
  const given = cli.globals(command).password;
  if (given !== undefined) return given;
  if (fromStdin || !cli.io.stdin.isTTY) {
    const line = await firstLine(cli);
    if (!line) throw new UsageError('no password on stdin: pipe it in (--password-stdin), or run carapace login on a terminal to be asked for it');
    return line;
  }
  return ask(cli, `Password of ${login}: `, { hidden: true });
}

/** `carapace login` and `carapace logout`: the stored session of a profile. */
export function sessionCommands(program: Command, cli: Cli): void {
  program
    .command('login')
    .summary('Log in and keep the session for the commands that follow.')
    .description(
      'Log in and keep the token for the commands that follow, until it expires (a session per profile: --profile). ' +
        'The profile remembers the URL and the login. The password is asked for on a terminal, or read from stdin.',
    )
    .option('--password-stdin', 'read the password from the first line of stdin (the default when stdin is not a terminal)')
    .action(async (options: { passwordStdin?: boolean }, command: Command) => {
      const profileName = cli.profileName(command);
      const base = await cli.clientOptions(command);
      const url = normaliseBaseUrl(base.url);
      const login = cli.globals(command).login ?? (await cli.profile(command))?.login ?? (cli.io.stdin.isTTY && !options.passwordStdin ? await ask(cli, 'Login: ') : '');
      if (!login) throw new UsageError('the login is missing: give --login or set CARAPACE_LOGIN');
      const password = await loginPassword(cli, command, login, options.passwordStdin === true);
      const client = new Client({ ...base, login, password });
      try {
        const token = await client.login();
        await cli.store.save(profileName, { url, login, token: token.id, expires_at: token.data.expires_at });
        cli.note(`Logged in to ${url} as ${login} (profile ${profileName}) until ${utc(token.data.expires_at)}.`);
      } finally {
        await client.close();
      }
    });

  program
    .command('logout')
    .summary('Log out: revoke and remove the stored session.')
    .description("Log out: the service revokes the profile's stored token, and it is removed.")
    .action(async (_options: unknown, command: Command) => {
      const profileName = cli.profileName(command);
      const session = await cli.store.session(profileName);
      if (!session) {
        cli.note(`Not logged in (profile ${profileName}).`);
        return;
      }
      const base = await cli.clientOptions(command).catch(() => null);
      const client = new Client({ ...base, url: session.url, login: session.login, token: session.token });
      try {
        await client.logout();
      } catch (err) {
        if (err instanceof ServiceApiError) throw err;
        cli.note(`The token could not be revoked; it stays valid until ${utc(session.expires_at)}.`);
        throw err;
      } finally {
        await cli.store.removeSession(profileName);
        await client.close();
      }
      cli.note(`Logged out of ${session.url} (profile ${profileName}): the token is revoked.`);
    });
}
