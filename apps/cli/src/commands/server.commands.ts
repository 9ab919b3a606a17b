import type { Server } from '@carapace/models';
import type { Command } from 'commander';
import type { Cli } from '../context.js';
import { updatedModel, withModelOptions } from '../model-edit.js';
import { addDeleteCommand, addReadCommands } from './read.commands.js';

type Row = Record<string, unknown>;

function quote(value: unknown): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  return `"${text.replace(/"/g, '""')}"`;
}

/** `name=mac=ipv4=ipv6...` of each interface but loopback, sorted by name. */
function interfaces(facts: unknown): string[] {
  const list = (facts as { interfaces?: unknown } | null)?.interfaces;
  if (!Array.isArray(list)) return [];
  return (list as Row[])
    .filter((i) => i.name !== 'lo')
    .sort((a, b) => String(a.name).localeCompare(String(b.name)))
    .map((i) => {
      const addresses = Array.isArray(i.addresses) ? (i.addresses as Row[]) : [];
      const v4 = addresses.find((a) => a.family === 'inet')?.address ?? '';
      const v6 = addresses.filter((a) => a.family === 'inet6').map((a) => String(a.address));
      return [i.name, i.mac ?? '', v4, ...v6].map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join('=');
    });
}

/**
 * The compact view of servers (`--compact`): CSV with every field quoted, one server a line:
 * id, version, FQDN, SSH user, default IP, then one `name=mac=ipv4=ipv6` field per interface.
 */
export function compactServers(value: unknown): string {
  const items = (Array.isArray(value) ? value : Array.isArray((value as Row).items) ? (value as Row).items : [value]) as Row[];
  const lines = [['machine_id', 'version', 'fqdn', 'username', 'default_ip', 'interface=mac=ipv4=ipv6', '...'].map(quote).join(',')];
  for (const server of items) {
    const data = (server.data ?? {}) as Row;
    lines.push([server.id, server.version, data.fqdn, data.username, data.ip, ...interfaces(data.facts)].map(quote).join(','));
  }
  return `${lines.join('\n')}\n`;
}

/** `carapace server ...` */
export function serverCommands(program: Command, cli: Cli): void {
  const group = program.command('server').description('Servers (they normally register themselves: see cloud-config).');
  addReadCommands(
    group,
    cli,
    'server',
    {
      list: (c, p) => c.getServers(p),
      get: (c, id) => c.getServer(id),
      versions: (c, id, p) => c.getServerVersions(id, p),
      version: (c, id, v) => c.getServerVersion(id, v),
    },
    {
      extend: (command) => command.option('--compact', 'print CSV: id, version, FQDN, user, default IP, interfaces'),
      show: (command, value) => {
        if (command.opts<{ compact?: boolean }>().compact) cli.io.stdout.write(compactServers(value));
        else cli.print(command, value);
      },
    },
  );

  group
    .command('create')
    .description('Register a server by hand (servers normally register themselves at first boot).')
    .argument('<server-id>', "the host's hardware UUID")
    .argument('<host>', 'address the service reaches it at (IP or FQDN)')
    .argument('<username>', 'SSH user of the automation on the host')
    .action(async (id: string, host: string, username: string, _options: unknown, command: Command) => {
      cli.print(command, await (await cli.client(command)).createServer(id, host, username));
    });

  withModelOptions(group.command('update').description('Rename a server, or send the whole model.').argument('<server-id>').option('--name <name>', 'new name')).action(
    async (id: string, options: { name?: string }, command: Command) => {
      const client = await cli.client(command);
      const model = await updatedModel<Server>(cli, command, id, () => client.getServer(id), (m) => {
        if (options.name !== undefined) m.data.name = options.name;
        return options.name !== undefined;
      });
      if (model) cli.print(command, await client.putServer(model));
    },
  );

  addDeleteCommand(group, cli, 'server', (c, id) => c.deleteServer(id));
}
