import type { Command } from 'commander';
import type { Cli } from '../context.js';

/** `carapace info`: needs no login. */
export function infoCommand(program: Command, cli: Cli): void {
  program
    .command('info')
    .description('Show the version and time of the service (needs no login; a health check).')
    .action(async (_options: unknown, command: Command) => cli.print(command, await cli.client(command, { auth: false }).getInfo()));
}

/** `carapace permission get-all`. */
export function permissionCommands(program: Command, cli: Cli): void {
  program
    .command('permission')
    .description('Permissions of the system.')
    .command('get-all')
    .description('List every api and playbook permission.')
    .action(async (_options: unknown, command: Command) => cli.print(command, await cli.client(command).getPermissions()));
}

/** `carapace playbook get-all`. */
export function playbookCommands(program: Command, cli: Cli): void {
  program
    .command('playbook')
    .description('Playbooks.')
    .command('get-all')
    .description('List the playbooks with their hints.')
    .action(async (_options: unknown, command: Command) => cli.print(command, await cli.client(command).getPlaybooks()));
}
