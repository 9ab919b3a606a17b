import type { PermissionGroup, Role } from '@carapace/models';
import { Argument, type Command } from 'commander';
import type { Cli } from '../context.js';
import { updatedModel, withModelOptions } from '../model-edit.js';
import { csv } from '../options.js';
import { addDeleteCommand, addReadCommands } from './read.commands.js';

type GroupName = 'api' | 'playbook';

/** The permissions of a role with `change` applied to the names of one group. */
function changeGroup(permissions: PermissionGroup[], group: GroupName, change: (names: Set<string>) => void): PermissionGroup[] {
  const names = new Set(permissions.find((g) => g.name === group)?.permissions ?? []);
  change(names);
  const others = permissions.filter((g) => g.name !== group);
  return [...others, { name: group, permissions: [...names].sort() }].sort((a, b) => a.name.localeCompare(b.name));
}

/** `carapace role ...` */
export function roleCommands(program: Command, cli: Cli): void {
  const group = program.command('role').description('Roles: the api and playbook permissions of users.');
  addReadCommands(group, cli, 'role', {
    list: (c, p) => c.getRoles(p),
    get: (c, id) => c.getRole(id),
    versions: (c, id, p) => c.getRoleVersions(id, p),
    version: (c, id, v) => c.getRoleVersion(id, v),
  });

  group
    .command('self')
    .description('Show your own role.')
    .action(async (_options: unknown, command: Command) => cli.print(command, await (await cli.client(command)).getRoleSelf()));

  group
    .command('create')
    .description('Create a role.')
    .argument('<name>')
    .option('--api-permissions <names>', 'comma-separated api permissions', csv, [])
    .option('--playbook-permissions <names>', 'comma-separated playbook permissions', csv, [])
    .action(async (name: string, options: { apiPermissions: string[]; playbookPermissions: string[] }, command: Command) => {
      cli.print(command, await (await cli.client(command)).createRole(name, { api: options.apiPermissions, playbook: options.playbookPermissions }));
    });

  interface Fields {
    name?: string;
    apiPermissions?: string[];
    playbookPermissions?: string[];
  }
  withModelOptions(
    group
      .command('update')
      .description('Update a role: its name or permissions (a given group replaces the old one), or the whole model.')
      .argument('<role-id>')
      .option('--name <name>', 'new name')
      .option('--api-permissions <names>', 'comma-separated api permissions (replace the current ones)', csv)
      .option('--playbook-permissions <names>', 'comma-separated playbook permissions (replace the current ones)', csv),
  ).action(async (id: string, options: Fields, command: Command) => {
    const client = await cli.client(command);
    const model = await updatedModel<Role>(cli, command, id, () => client.getRole(id), (m) => {
      if (options.name !== undefined) m.data.name = options.name;
      const replace = (group: GroupName, names: string[]) => {
        m.data.permissions = changeGroup(m.data.permissions, group, (set) => {
          set.clear();
          for (const n of names) set.add(n);
        });
      };
      if (options.apiPermissions) replace('api', options.apiPermissions);
      if (options.playbookPermissions) replace('playbook', options.playbookPermissions);
      return options.name !== undefined || options.apiPermissions !== undefined || options.playbookPermissions !== undefined;
    });
    if (model) cli.print(command, await client.updateRole(model));
  });

  const groupArgument = () => new Argument('<permission-type>', 'the permission group').choices(['api', 'playbook']);
  group
    .command('add-permission')
    .description('Add permissions to a role.')
    .argument('<role-id>')
    .addArgument(groupArgument())
    .argument('<permission...>')
    .action(async (id: string, type: GroupName, names: string[], _options: unknown, command: Command) => {
      const client = await cli.client(command);
      const role = await client.getRole(id);
      role.data.permissions = changeGroup(role.data.permissions, type, (set) => names.forEach((n) => set.add(n)));
      cli.print(command, await client.updateRole(role));
    });

  group
    .command('remove-permission')
    .description('Remove permissions from a role; with no permission named, all of the group.')
    .argument('<role-id>')
    .addArgument(groupArgument())
    .argument('[permission...]')
    .action(async (id: string, type: GroupName, names: string[], _options: unknown, command: Command) => {
      const client = await cli.client(command);
      const role = await client.getRole(id);
      role.data.permissions = changeGroup(role.data.permissions, type, (set) => {
        if (names.length === 0) set.clear();
        for (const n of names) set.delete(n);
      });
      cli.print(command, await client.updateRole(role));
    });

  addDeleteCommand(group, cli, 'role', (c, id) => c.deleteRole(id));
}
