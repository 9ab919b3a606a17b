import { ServiceApiError, ServiceError } from '@carapace/client';
import { CommanderError, type Command } from 'commander';
import { Cli, ExecutionFailed, NotLoggedIn, StatusUnknown, UsageError, type CliIo } from './context.js';
import { buildProgram } from './program.js';

async function report(cli: Cli, err: unknown): Promise<number> {
  if (err instanceof StatusUnknown) {
    await report(cli, err.cause);
    return 3;
  }
  if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
  if (err instanceof UsageError) {
    cli.note(`carapace: ${err.message}\n(add --help for usage)`);
    return 2;
  }
  if (err instanceof NotLoggedIn) {
    cli.note(`carapace: ${err.message}`);
    return 2;
  }
  if (err instanceof ServiceApiError) {
    const refused = await cli.refusedSession(err.code);
    if (refused !== null) {
      cli.note(`carapace: ${refused}`);
      return 2;
    }
    const body = typeof err.json === 'object' && err.json !== null ? err.json : { code: err.code, error: err.error, description: err.description };
    cli.note(JSON.stringify(body, null, 2));
    return 1;
  }
  if (err instanceof ServiceError) {
    cli.note(`carapace: ${err.message}`);
    return 3;
  }
  if (err instanceof ExecutionFailed) {
    cli.note(`carapace: ${err.message}`);
    return 4;
  }
  cli.note(`carapace: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  return 70;
}

/** The `carapace` command tree, built but not run: for reading its commands and help texts. */
export function createProgram(io: CliIo): Command {
  return buildProgram(new Cli(io));
}

/**
 * Runs the `carapace` command line with `argv` (without the node and script paths) and
 * returns the exit status. A run that logged in with a password logs out at the end, so
 * that its token does not outlive the command; a stored session (`carapace login`) stays.
 */
export async function main(argv: readonly string[], io: CliIo = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env }): Promise<number> {
  const cli = new Cli(io);
  try {
    await buildProgram(cli).parseAsync([...argv], { from: 'user' });
    return cli.exitStatus;
  } catch (err) {
    return await report(cli, err);
  } finally {
    await cli.close();
  }
}
