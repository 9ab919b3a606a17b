// The command line of the packaging scripts (package-debs.js, package-images.js): node's
// parseArgs with their options, a usage line for --help and for a bad option.
import { parseArgs } from 'node:util';

/**
 * The options given, or the process ends: with the usage on stdout for --help (status 0),
 * through `fail` with parseArgs's reason and the usage for a bad option.
 */
export function parseCommandLine(options, usage, fail) {
  let values;
  try {
    values = parseArgs({ options: { ...options, help: { type: 'boolean', short: 'h' } } }).values;
  } catch (e) {
    fail(`${e.message}\n${usage}`);
  }
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  return values;
}
