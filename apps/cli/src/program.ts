import { createRequire } from 'node:module';
import { Argument, Command, Option } from 'commander';
import { cloudConfigCommand } from './commands/cloud-config.commands.js';
import { infoCommand, permissionCommands, playbookCommands } from './commands/catalog.commands.js';
import { clusterCommands } from './commands/cluster.commands.js';
import { executionCommands } from './commands/execution.commands.js';
import { passwordResetCommands } from './commands/password-reset.commands.js';
import { playbookConfigurationCommands } from './commands/playbook-configuration.commands.js';
import { roleCommands } from './commands/role.commands.js';
import { runnerCommands } from './commands/runner.commands.js';
import { serverCommands } from './commands/server.commands.js';
import { sessionCommands } from './commands/session.commands.js';
import { userCommands } from './commands/user.commands.js';
import { completionScript, SHELLS, type Shell } from './completion.js';
import type { Cli } from './context.js';
import { seconds } from './options.js';

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

const FOOTER = `
"carapace login" keeps a session (under $XDG_CONFIG_HOME/carapace, else ~/.config/carapace)
that later commands use until it expires; --profile names one per control plane, and
remembers its URL and login. A command given a password logs in for itself instead.

Environment variables stand in for the global options: CARAPACE_URL, CARAPACE_LOGIN,
CARAPACE_PASSWORD, CARAPACE_PROFILE, CARAPACE_TIMEOUT, CARAPACE_NO_VERIFY=1,
CARAPACE_SSL_CERTIFICATE, CARAPACE_OUTPUT. List commands print every item unless --page or
--per-page is given. Tables fit the terminal (COLUMNS, else 100 columns off a terminal).

Exit status: 0 done; 1 the API answered with an error (printed as JSON on stderr);
2 wrong usage; 3 the API could not be reached or answered nonsense; 4 an execution
followed with --wait did not complete. "cluster status" says the clusters' health: 0 all
HEALTH_OK, 1 a HEALTH_WARN, 2 a HEALTH_ERR, unreachable or pending, 3 unknown (see its help).`;

/** The `carapace` command line: global options and every command group. */
export function buildProgram(cli: Cli): Command {
  const program = new Command('carapace');
  program
    .description('Manage Carapace from the shell: users, roles, clusters, servers, playbook configurations, executions and runners.')
    .version(version, '-V, --version')
    .addOption(new Option('-u, --url <url>', 'base address of the API, without /v1').env('CARAPACE_URL'))
    .addOption(new Option('-l, --login <login>', 'login of your user').env('CARAPACE_LOGIN'))
    .addOption(new Option('-p, --password <password>', 'your password, for scripts (else: carapace login)').env('CARAPACE_PASSWORD'))
    .addOption(new Option('-P, --profile <name>', 'the profile (control plane and login) whose session to use (default: "default")').env('CARAPACE_PROFILE'))
    .addOption(new Option('-t, --timeout <seconds>', 'time limit of each request (default: none)').env('CARAPACE_TIMEOUT').argParser(seconds))
    .addOption(new Option('-k, --no-verify', 'do not check the TLS certificate of the service (env: CARAPACE_NO_VERIFY=1)'))
    .addOption(new Option('-s, --ssl-certificate <file>', 'TLS client certificate: a PEM file with the certificate and its key').env('CARAPACE_SSL_CERTIFICATE'))
    .addOption(new Option('-o, --output <format>', 'output format').choices(['json', 'table']).default('json').env('CARAPACE_OUTPUT'))
    .addHelpText('after', FOOTER)
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => cli.io.stdout.write(text),
      writeErr: (text) => cli.io.stderr.write(text),
    });

  cloudConfigCommand(program, cli);
  clusterCommands(program, cli);
  program
    .command('completion')
    .summary('Print the completion script for bash, zsh or fish.')
    .description(
      'Print the completion script of carapace for bash, zsh or fish, made from its commands. ' +
        'Load it with "source <(carapace completion bash)" (or zsh), or "carapace completion fish > ~/.config/fish/completions/carapace.fish".',
    )
    .addArgument(new Argument('<shell>', 'the shell').choices(SHELLS))
    .action((shell: Shell) => {
      cli.io.stdout.write(completionScript(program, shell));
    });
  executionCommands(program, cli);
  infoCommand(program, cli);
  sessionCommands(program, cli);
  passwordResetCommands(program, cli);
  permissionCommands(program, cli);
  playbookCommands(program, cli);
  playbookConfigurationCommands(program, cli);
  roleCommands(program, cli);
  runnerCommands(program, cli);
  serverCommands(program, cli);
  userCommands(program, cli);
  // Only the top level lists its commands by name: their arguments are in their own help.
  program.configureHelp({ subcommandTerm: (command) => command.name() });
  return program;
}
