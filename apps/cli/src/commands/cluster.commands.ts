import type { Cluster } from '@carapace/models';
import type { Command } from 'commander';
import type { Cli } from '../context.js';
import { updatedModel, withModelOptions } from '../model-edit.js';
import { clusterStatusCommand } from './cluster-status.commands.js';
import { addDeleteCommand, addReadCommands } from './read.commands.js';

/** `carapace cluster ...` */
export function clusterCommands(program: Command, cli: Cli): void {
  const group = program.command('cluster').description('Ceph clusters.');
  addReadCommands(group, cli, 'cluster', {
    list: (c, p) => c.getClusters(p),
    get: (c, id) => c.getCluster(id),
    versions: (c, id, p) => c.getClusterVersions(id, p),
    version: (c, id, v) => c.getClusterVersion(id, v),
  });

  group
    .command('create')
    .description('Create a cluster (servers join it by running cluster_deploy or add_osd).')
    .argument('<name>')
    .action(async (name: string, _options: unknown, command: Command) => cli.print(command, await (await cli.client(command)).createCluster(name)));

  withModelOptions(group.command('update').description('Rename a cluster, or send the whole model.').argument('<cluster-id>').option('--name <name>', 'new name')).action(
    async (id: string, options: { name?: string }, command: Command) => {
      const client = await cli.client(command);
      const model = await updatedModel<Cluster>(cli, command, id, () => client.getCluster(id), (m) => {
        if (options.name !== undefined) m.data.name = options.name;
        return options.name !== undefined;
      });
      if (model) cli.print(command, await client.updateCluster(model));
    },
  );

  addDeleteCommand(group, cli, 'cluster', (c, id) => c.deleteCluster(id));

  clusterStatusCommand(group, cli);

  group
    .command('cinder-integration')
    .description('Show the files an OpenStack Cinder, Glance or Nova host needs to use the cluster: path → content.')
    .argument('<cluster-id>')
    .option('--root <dir>', 'directory the files go to on that host', '/etc/ceph')
    .action(async (id: string, options: { root: string }, command: Command) => {
      cli.print(command, await (await cli.client(command)).getCinderIntegration(id, options.root));
    });
}
