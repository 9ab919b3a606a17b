import type { Command } from 'commander';
import { UsageError, type Cli } from '../context.js';
import { ask, firstLine } from '../prompt.js';

/** The new password: the argument, else asked twice on a terminal, else the first line of stdin. */
async function newPassword(cli: Cli, given: string | undefined): Promise<string> {
  if (given !== undefined) return given;
  if (cli.io.stdin.isTTY) {
    const first = await ask(cli, 'New password: ', { hidden: true });
    const second = await ask(cli, 'New password again: ', { hidden: true });
    if (first !== second) throw new UsageError('the two passwords differ');
    return first;
  }
  const line = await firstLine(cli);
  if (!line) throw new UsageError('no new password: give it as an argument or on stdin');
  return line;
}

/** `carapace password-reset ...`: the reset flow; needs no login. */
export function passwordResetCommands(program: Command, cli: Cli): void {
  const group = program.command('password-reset').description('Reset a forgotten password (needs no login).');
  group
    .command('reset')
    .description('Ask for a password reset: the user gets an e-mail with a reset token.')
    .argument('<login>')
    .action(async (login: string, _options: unknown, command: Command) => {
      cli.print(command, await (await cli.client(command, { auth: false })).requestPasswordReset(login));
    });
  group
    .command('peek')
    .description('Check that a reset token is still valid, without using it.')
    .argument('<reset-token>')
    .action(async (token: string, _options: unknown, command: Command) => {
      cli.print(command, await (await cli.client(command, { auth: false })).peekPasswordReset(token));
    });
  group
    .command('new')
    .description('Set a new password with a reset token. Without the password argument it is asked for (terminal) or read from stdin.')
    .argument('<reset-token>')
    .argument('[new-password]')
    .action(async (token: string, password: string | undefined, _options: unknown, command: Command) => {
      const client = await cli.client(command, { auth: false });
      cli.print(command, await client.resetPassword(token, await newPassword(cli, password)));
    });
}
