#!/usr/bin/env node
// Runs the carapace command from its compiled output. From a source checkout (TypeScript
// present), it first rebuilds the command and the libraries it uses when one of their
// source files is newer than their last build (scripts/build-if-stale.js, whose lock makes
// parallel runs, npm start's build included, build only once).
// The three programs (carapace-control-plane, carapace-runner, carapace) start the same way.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const NAME = 'carapace';
/** Exit status when the program cannot start: not built, or its build failed (EX_SOFTWARE). */
const EXIT_NOT_BUILT = 70;
const entry = new URL('../dist/main.js', import.meta.url);
const helper = new URL('../../../scripts/build-if-stale.js', import.meta.url);
const checkout = new URL('../../../tsconfig.build.json', import.meta.url);
const project = new URL('../tsconfig.json', import.meta.url);

if (process.env.CARAPACE_SKIP_BUILD !== '1' && existsSync(fileURLToPath(checkout)) && existsSync(fileURLToPath(helper))) {
  const { buildIfStale } = await import(helper.href);
  try {
    // The compiler's messages go to stderr: stdout is the command's answer.
    await buildIfStale(fileURLToPath(project), { output: 'stderr' });
  } catch {
    process.stderr.write(`${NAME}: building the command failed (see above).\n`);
    process.exit(EXIT_NOT_BUILT);
  }
}
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(`${NAME}: not built, and TypeScript is not installed to build it (run npm ci).\n`);
  process.exit(EXIT_NOT_BUILT);
}
process.stdout.on('error', (err) => {
  // The reader went away (`carapace execution log ID | head`): nothing more to say.
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
