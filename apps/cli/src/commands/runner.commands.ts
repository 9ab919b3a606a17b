import { RunnerCreateSchema, type Runner } from '@carapace/models';
import { InvalidArgumentError, type Command } from 'commander';
import type { Cli } from '../context.js';

/** Parses one `--label key=value` and adds it to the labels given so far (repeatable option). */
export function label(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const at = value.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError('key=value is expected, e.g. site=lab.');
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) };
}

const RUNNER_NAME = new RegExp((RunnerCreateSchema.properties.name as { pattern?: string }).pattern ?? '');

/**
 * Parses `--name`: the API's rule for runner names, checked here so that a bad name is a
 * usage error that says the rule, not the API's schema error.
 */
export function runnerName(value: string): string {
  if (!RUNNER_NAME.test(value)) {
    throw new InvalidArgumentError('a runner name is 1 to 63 lower-case letters, digits, ".", "_" and "-", starting with a letter or a digit (e.g. par1-a).');
  }
  return value;
}

/** A Unix time as `YYYY-MM-DD HH:MM:SS` (UTC), or empty. */
function time(value: number | null): string {
  return value === null || value <= 0 ? '' : new Date(value * 1000).toISOString().replace('T', ' ').slice(0, 19);
}

/** The columns of `runner get-all -o table`: one line per runner, without the SSH key. */
function tableRow(runner: Runner): Record<string, unknown> {
  return {
    name: runner.name,
    state: runner.state,
    labels: Object.entries(runner.labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    version: runner.version,
    slots: runner.slots,
    free_slots: runner.free_slots,
    executions: runner.executions.length,
    last_heartbeat: time(runner.last_heartbeat),
    peer: runner.peer,
  };
}

/** `carapace runner ...`: runner agents and their tokens (Carapace extension of the API). */
export function runnerCommands(program: Command, cli: Cli): void {
  const group = program
    .command('runner')
    .description('Runners: the agents that run the playbooks, and their tokens (a Carapace extension).');

  group
    .command('get-all')
    .description('List the runners with their state (connected, draining or disconnected), labels, slots, last heartbeat and executions.')
    .action(async (_options: unknown, command: Command) => {
      const { items } = await (await cli.client(command)).getRunners();
      cli.print(command, cli.tables(command) ? items.map(tableRow) : items);
    });

  group
    .command('create')
    .description('Issue the token of a new runner and print it: the token is shown this once. A taken name is refused (delete the runner first).')
    .requiredOption('--name <name>', 'the runner name: lower-case letters, digits, ".", "_" and "-"', runnerName)
    .option('--label <key=value>', 'a label of the runner (repeatable)', label)
    .action(async (options: { name: string; label?: Record<string, string> }, command: Command) => {
      cli.print(command, await (await cli.client(command)).createRunner(options.name, options.label ?? {}));
      cli.note('Keep the token: it is shown only this once (give it to the runner as CARAPACE_RUNNER_TOKEN or CARAPACE_RUNNER_TOKEN_FILE).');
    });

  group
    .command('delete')
    .description('Revoke a runner token: the runner is removed and its stream closed (prints nothing on stdout).')
    .argument('<name>')
    .action(async (name: string, _options: unknown, command: Command) => {
      await (await cli.client(command)).deleteRunner(name);
      cli.note(`Runner ${name} deleted: its token is revoked.`);
    });
}
