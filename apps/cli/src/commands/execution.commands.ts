import type { Client } from '@carapace/client';
import type { Execution, ExecutionPreview } from '@carapace/models';
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
    .description(
      'Run a playbook configuration at one of its versions. With --preview, run it in check mode: it changes nothing and `execution preview ID` shows what it would change. With --wait, show its progress until it ends (exit status 4 unless it completed).',
    )
    .argument('<playbook-configuration-id>')
    .argument('<playbook-configuration-version>', 'version of the configuration to run', positiveInt)
    .option('--preview', 'a preview: Ansible check mode with diffs, which changes nothing (Carapace extension)')
    .option('--wait', 'follow the execution until it ends, showing its steps on stderr')
    .option('--poll-interval <seconds>', 'seconds between two looks at the execution with --wait', seconds, 1)
    .action(async (configId: string, version: number, options: { preview?: boolean; wait?: boolean; pollInterval: number }, command: Command) => {
      const client = await cli.client(command);
      const execution = options.preview ? await client.createPreview(configId, version) : await client.createExecution(configId, version);
      await finishCommand(cli, command, client, execution, options);
    });

  group
    .command('relaunch')
    .description(
      'Relaunch a finished execution as a new one of the same configuration version: on every host, or with --failed only on the hosts that failed or were unreachable (unless its playbook must run whole: the answer says so). With --wait, as `create --wait`.',
    )
    .argument('<execution-id>')
    .option('--failed', 'only the failed and unreachable hosts (the execution must be failed or canceled)')
    .option('--wait', 'follow the new execution until it ends, showing its steps on stderr')
    .option('--poll-interval <seconds>', 'seconds between two looks at the execution with --wait', seconds, 1)
    .action(async (id: string, options: { failed?: boolean; wait?: boolean; pollInterval: number }, command: Command) => {
      const client = await cli.client(command);
      const execution = await client.relaunchExecution(id, options.failed ? 'failed' : 'all');
      const note = execution.data.relaunch?.note;
      if (note) cli.note(note);
      await finishCommand(cli, command, client, execution, options);
    });

  group
    .command('preview')
    .description('Show what a preview found, per host and task: would change (with the diff), unchanged, would fail, unknown in check mode.')
    .argument('<execution-id>')
    .action(async (id: string, _options: unknown, command: Command) => {
      const client = await cli.client(command);
      const result = await client.getExecutionPreview(id);
      if (!cli.tables(command)) {
        cli.print(command, result);
        return;
      }
      const servers = await serverLabels(client, result.hosts.flatMap((h) => (h.server_id ? [h.server_id] : [])));
      cli.io.stdout.write(renderPreview(result, servers));
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

/** Prints a new execution, or with `wait` follows it to its end first (exit status 4 unless it completed). */
async function finishCommand(cli: Cli, command: Command, client: Client, execution: Execution, options: { wait?: boolean; pollInterval: number }): Promise<void> {
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
}

const MARKS = { would_change: '~', unchanged: '=', would_fail: '!', unknown: '?' } as const;

/** A preview as text: per host its counts, then each task but the unchanged ones, with its diff or reason. */
export function renderPreview(result: ExecutionPreview, servers: ReadonlyMap<string, string>): string {
  const lines: string[] = [`preview ${result.execution_id} (${result.state})`];
  for (const host of result.hosts) {
    const name = host.server_id ? (servers.get(host.server_id) ?? host.server_id) : '(no server)';
    const c = host.counts;
    lines.push('', `${name}: ${c.would_change} would change, ${c.unchanged} unchanged, ${c.would_fail} would fail, ${c.unknown} unknown`);
    for (const task of host.tasks) {
      if (task.status === 'unchanged') continue;
      lines.push(`  ${MARKS[task.status]} ${task.role ? `${task.role}: ` : ''}${task.name}${task.why ? ` (${task.why})` : ''}`);
      if (task.diff) for (const line of task.diff.replace(/\n$/, '').split('\n')) lines.push(`      ${line}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
