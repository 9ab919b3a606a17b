import type { User } from '@carapace/models';
import type { Command } from 'commander';
import type { Cli } from '../context.js';
import { updatedModel, withModelOptions } from '../model-edit.js';
import { addDeleteCommand, addReadCommands } from './read.commands.js';

/** `carapace user ...` */
export function userCommands(program: Command, cli: Cli): void {
  const group = program.command('user').description('Users: people who log in.');
  addReadCommands(group, cli, 'user', {
    list: (c, p) => c.getUsers(p),
    get: (c, id) => c.getUser(id),
    versions: (c, id, p) => c.getUserVersions(id, p),
    version: (c, id, v) => c.getUserVersion(id, v),
  });

  group
    .command('self')
    .description('Show the user you are logged in as.')
    .action(async (_options: unknown, command: Command) => cli.print(command, await (await cli.client(command)).getUserSelf()));

  group
    .command('create')
    .description('Create a user; the service e-mails them a generated password.')
    .argument('<login>')
    .argument('<email>')
    .argument('[full-name]', 'full name', '')
    .argument('[role-id]', 'id of the role')
    .action(async (login: string, email: string, fullName: string, roleId: string | undefined, _options: unknown, command: Command) => {
      cli.print(command, await (await cli.client(command)).createUser(login, email, fullName, roleId ?? null));
    });

  interface Fields {
    login?: string;
    email?: string;
    fullName?: string;
    roleId?: string;
  }
  withModelOptions(
    group
      .command('update')
      .description('Update a user: the given fields, or the whole model.')
      .argument('<user-id>')
      .option('--login <login>', 'new login')
      .option('--email <email>', 'new e-mail address')
      .option('--full-name <name>', 'new full name')
      .option('--role-id <id>', 'new role ("" for none)'),
  ).action(async (id: string, options: Fields, command: Command) => {
    const client = await cli.client(command);
    const model = await updatedModel<User>(cli, command, id, () => client.getUser(id), (m) => {
      if (options.login !== undefined) m.data.login = options.login;
      if (options.email !== undefined) m.data.email = options.email;
      if (options.fullName !== undefined) m.data.full_name = options.fullName;
      if (options.roleId !== undefined) m.data.role_id = options.roleId || null;
      return [options.login, options.email, options.fullName, options.roleId].some((v) => v !== undefined);
    });
    if (model) cli.print(command, await client.updateUser(model));
  });

  addDeleteCommand(group, cli, 'user', (c, id) => c.deleteUser(id));
}
