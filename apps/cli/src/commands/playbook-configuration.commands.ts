import type { HintValue } from '@carapace/client';
import type { PlaybookConfigurationModel } from '@carapace/models';
import { InvalidArgumentError, type Command } from 'commander';
import type { Cli } from '../context.js';
import { updatedModel, withModelOptions } from '../model-edit.js';
import { json, jsonObject } from '../options.js';
import { addDeleteCommand, addReadCommands } from './read.commands.js';

/** Parses `--hints`: a JSON list of `{id, value}`, or an object of id → value. */
function hints(value: string): HintValue[] {
  const parsed = json(value);
  if (Array.isArray(parsed)) return parsed as HintValue[];
  if (typeof parsed === 'object' && parsed !== null) return Object.entries(parsed).map(([id, v]) => ({ id, value: v as unknown }));
  throw new InvalidArgumentError('a JSON list of {"id", "value"} or an object of hint id → value is expected.');
}

/** `carapace playbook-configuration ...` */
export function playbookConfigurationCommands(program: Command, cli: Cli): void {
  const group = program.command('playbook-configuration').description('Playbook configurations: a playbook, a cluster, servers and the inventory built for them.');
  addReadCommands(group, cli, 'playbook configuration', {
    list: (c, p) => c.getPlaybookConfigurations(p),
    get: (c, id) => c.getPlaybookConfiguration(id),
    versions: (c, id, p) => c.getPlaybookConfigurationVersions(id, p),
    version: (c, id, v) => c.getPlaybookConfigurationVersion(id, v),
  });

  group
    .command('create')
    .description('Create a playbook configuration; the playbook builds its inventory and variables.')
    .argument('<name>')
    .argument('<playbook>', 'playbook id (see "playbook get-all")')
    .argument('<cluster-id>')
    .argument('[server-ids...]', 'the servers to run on')
    .option('--hints <json>', 'hint values: [{"id": "dmcrypt", "value": true}] or {"dmcrypt": true}', hints)
    .action(async (name: string, playbook: string, clusterId: string, serverIds: string[], options: { hints?: HintValue[] }, command: Command) => {
      cli.print(command, await (await cli.client(command)).createPlaybookConfiguration(name, clusterId, playbook, serverIds, options.hints ?? []));
    });

  interface Fields {
    name?: string;
    globalVars?: Record<string, unknown>;
    inventory?: Record<string, unknown>;
  }
  withModelOptions(
    group
      .command('update')
      .description('Update a playbook configuration before running it: its name, variables or inventory, or the whole model.')
      .argument('<playbook-configuration-id>')
      .option('--name <name>', 'new name')
      .option('--global-vars <json>', 'new global variables (a JSON object)', jsonObject)
      .option('--inventory <json>', 'new inventory (a JSON object)', jsonObject),
  ).action(async (id: string, options: Fields, command: Command) => {
    const client = await cli.client(command);
    const model = await updatedModel<PlaybookConfigurationModel>(cli, command, id, () => client.getPlaybookConfiguration(id), (m) => {
      if (options.name !== undefined) m.data.name = options.name;
      if (options.globalVars !== undefined) m.data.configuration.global_vars = options.globalVars;
      if (options.inventory !== undefined) m.data.configuration.inventory = options.inventory;
      return options.name !== undefined || options.globalVars !== undefined || options.inventory !== undefined;
    });
    if (model) cli.print(command, await client.updatePlaybookConfiguration(model));
  });

  addDeleteCommand(group, cli, 'playbook configuration', (c, id) => c.deletePlaybookConfiguration(id));
}
