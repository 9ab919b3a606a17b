import type { Command } from 'commander';
import { ExecutionFailed, type Cli } from '../context.js';
import { listParams, positiveInt, seconds, withListOptions } from '../options.js';
import { ProgressDisplay } from '../progress.js';
import { serverLabels } from '../server-labels.js';
import { addReadCommands, showList } from './read.commands.js';

/** `carapace execution ...` */
export function executionCommands(program: Command, cli: Cli): void {
  const group = program.command('execution').description('Executions: runs of a playbook configuration, their steps and log.');
  addReadCommands(group, cli, 'execution', {
    list: (c, p) => c.getExecutions(p),
    get: (c, id) => c.getExecution(id),
    versions: (c, id, p) => c.getExecutionVersions(id, p),
    version: (c, id, v) => c.getExecutionVersion(id, v),
  });

  group
    .command('create')
    .description('Run a playbook configuration at one of its versions. With --wait, show its progress until it ends (exit status 4 unless it completed).')
    .argument('<playbook-configuration-id>')
    .argument('<playbook-configuration-version>', 'version of the configuration to run', positiveInt)
    .option('--wait', 'follow the execution until it ends, showing its steps on stderr')
    .option('--poll-interval <seconds>', 'seconds between two looks at the execution with --wait', seconds, 1)
    .action(async (configId: string, version: number, options: { wait?: boolean; pollInterval: number }, command: Command) => {
      const client = await cli.client(command);
      const execution = await client.createExecution(configId, version);
      if (!options.wait) {
        cli.print(command, execution);
        return;
      }
      // Once for the whole run: the steps name their server by id.
      const display = new ProgressDisplay(cli.io.stderr, await serverLabels(client, execution.data.server_ids));
      display.start();
      let last = execution;
      try {
        for await (const progress of client.watchExecution(execution.id, { intervalMs: Math.round(options.pollInterval * 1000) })) {
          display.update(progress);
          last = progress.execution;
        }
      } finally {
        display.stop();
      }
      cli.print(command, last);
      if (last.data.state !== 'completed') throw new ExecutionFailed(`execution ${last.id} ended ${last.data.state}`);
    });

  group
    .command('cancel')
    .description('Cancel an execution: a queued one at once, a running one once its runner has stopped it.')
    .argument('<execution-id>')
    .action(async (id: string, _options: unknown, command: Command) => cli.print(command, await (await cli.client(command)).cancelExecution(id)));

  withListOptions(group.command('steps').description('List the steps of an execution, by finish time.').argument('<execution-id>'), { states: false }).action(
    async (id: string, _options: unknown, command: Command) => {
      const { params, paged } = listParams(command);
      const client = await cli.client(command);
      const page = await client.getExecutionSteps(id, params);
      if (!cli.tables(command)) return showList(cli, command, page, paged);
      const servers = await serverLabels(client, page.items.flatMap((step) => (step.data.server_id ? [step.data.server_id] : [])));
      showList(cli, command, page, paged, (c, value) => cli.print(c, value, { servers }));
    },
  );

  group
    .command('log')
    .description('Print the Ansible log of an execution; with --follow, keep printing as it grows until the execution ends.')
    .argument('<execution-id>')
    .option('-f, --follow', 'follow the log as it grows')
    .action(async (id: string, options: { follow?: boolean }, command: Command) => {
      const client = await cli.client(command);
      if (!options.follow) {
        cli.io.stdout.write(await client.getExecutionLog(id));
        return;
      }
      for await (const text of client.followExecutionLog(id)) cli.io.stdout.write(text);
    });
}
