import type { PermissionGroup, PlaybookDescriptor } from '@carapace/models';
import type { Command } from 'commander';
import type { Cli } from '../context.js';

/** `carapace info`: needs no login. */
export function infoCommand(program: Command, cli: Cli): void {
  program
    .command('info')
    .description('Show the version and time of the service (needs no login; a health check).')
    .action(async (_options: unknown, command: Command) => cli.print(command, await (await cli.client(command, { auth: false })).getInfo()));
}

/** A permission group as a table row: its names joined by spaces, so that they wrap. */
function permissionRow(group: PermissionGroup): Record<string, unknown> {
  return { name: group.name, permissions: group.permissions.join(' ') };
}

/** A playbook as a table row: its hints by id. */
function playbookRow(playbook: PlaybookDescriptor): Record<string, unknown> {
  return {
    id: playbook.id,
    name: playbook.name,
    servers: playbook.required_server_list ? 'required' : 'none',
    hints: playbook.hints.map((h) => h.id).join(' '),
    description: playbook.description,
  };
}

/** `carapace permission get-all`: the list of groups, as the other `get-all` print theirs. */
export function permissionCommands(program: Command, cli: Cli): void {
  program
    .command('permission')
    .description('Permissions of the system.')
    .command('get-all')
    .description('List every api and playbook permission, by group.')
    .action(async (_options: unknown, command: Command) => {
      const { items } = await (await cli.client(command)).getPermissions();
      cli.print(command, cli.tables(command) ? items.map(permissionRow) : items);
    });
}

/** `carapace playbook get-all`: the list of playbooks, as the other `get-all` print theirs. */
export function playbookCommands(program: Command, cli: Cli): void {
  program
    .command('playbook')
    .description('Playbooks.')
    .command('get-all')
    .description('List the playbooks with their hints.')
    .action(async (_options: unknown, command: Command) => {
      const { items } = await (await cli.client(command)).getPlaybooks();
      cli.print(command, cli.tables(command) ? items.map(playbookRow) : items);
    });
}
