import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { UsageError, type Cli } from '../context.js';
import { positiveInt } from '../options.js';

interface CloudConfigFlags {
  username: string;
  discovery: boolean;
  caBundle?: string;
  retryDeadline?: number;
}

/**
 * The shortest discovery token the control plane accepts (`discoveryTokens` in its
 * configuration): user-data with a shorter one could never register.
 */
export const MIN_DISCOVERY_TOKEN_LENGTH = 16;

async function readText(cli: Cli, path: string, what: string): Promise<string> {
  try {
    return path === '-' ? await cli.readStdin() : await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read the ${what} ${path}: ${(err as Error).message}`);
  }
}

/** `carapace cloud-config`: the first-boot user-data with which new servers register themselves. */
export function cloudConfigCommand(program: Command, cli: Cli): void {
  program
    .command('cloud-config')
    .summary('Print the cloud-init user-data with which new servers register themselves.')
    .description(
      'Print the cloud-init user-data (#cloud-config) that prepares a new server and registers it with the service at every boot. ' +
        'The server posts to <--url>/v1/server/, so give the address the server reaches the service at; --timeout (seconds, default 20) ' +
        'is the time limit of each registration request. Needs no login.',
    )
    .argument('<server-discovery-token>', 'the discovery token of the service configuration')
    .argument('<public-key-file>', 'file of the SSH public key of the automation (e.g. the runner\'s data/runner/id_ed25519.pub), put in the authorized keys of the user; "-" reads it from stdin')
    .option('--username <name>', 'the user the automation logs in as', 'ansible')
    .option('--no-discovery', 'only the user and the packages: no registration')
    .option('--ca-bundle <file>', 'PEM file of the CA certificate(s) that verify the service, written to the server')
    .option('--retry-deadline <seconds>', 'seconds after which the server stops retrying a failing registration (default 1800)', positiveInt)
    .action(async (token: string, keyFile: string, options: CloudConfigFlags, command: Command) => {
      const url = await cli.url(command);
      const timeout = cli.globals(command).timeout;
      if (options.discovery && token.length < MIN_DISCOVERY_TOKEN_LENGTH) {
        throw new UsageError(
          `the discovery token is ${token.length} characters long: the service accepts only tokens of at least ${MIN_DISCOVERY_TOKEN_LENGTH} (its discoveryTokens setting), so servers could never register with it`,
        );
      }
      const publicKey = (await readText(cli, keyFile, 'public key file')).trim();
      const caBundle = options.caBundle === undefined ? undefined : await readText(cli, options.caBundle, 'CA bundle');
      const { generateCloudConfig } = await import('@carapace/cloud-init');
      let text: string;
      try {
        text = generateCloudConfig({
          url,
          serverDiscoveryToken: token,
          publicKey,
          username: options.username,
          timeout: timeout === undefined ? 20 : Math.max(1, Math.ceil(timeout)),
          noDiscovery: !options.discovery,
          ...(caBundle === undefined ? {} : { caBundle }),
          ...(options.retryDeadline === undefined ? {} : { retryDeadline: options.retryDeadline }),
        });
      } catch (err) {
        if (err instanceof TypeError) throw new UsageError(err.message);
        throw err;
      }
      cli.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
    });
}
