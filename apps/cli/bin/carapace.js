#!/usr/bin/env node
// Runs the carapace command from its compiled output. From a source checkout (TypeScript
// present), it first rebuilds the command and the libraries it uses when one of their
// source files is newer than their last build (scripts/build-if-stale.js, whose lock makes
// parallel runs, npm start's build included, build only once).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const helper = new URL('../../../scripts/build-if-stale.js', import.meta.url);
const inCheckout = existsSync(fileURLToPath(new URL('../../../tsconfig.build.json', import.meta.url)));
if (process.env.CARAPACE_SKIP_BUILD !== '1' && inCheckout && existsSync(fileURLToPath(helper))) {
  const { buildIfStale } = await import(helper.href);
  try {
    // The compiler's messages go to stderr: stdout is the command's answer.
    await buildIfStale(fileURLToPath(new URL('../tsconfig.json', import.meta.url)), { output: 'stderr' });
  } catch {
    process.stderr.write('carapace: building the command failed (see above).\n');
    process.exit(70);
  }
}
if (!existsSync(entry)) {
  process.stderr.write('carapace: not built, and TypeScript is not installed to build it (run npm ci).\n');
  process.exit(70);
}
process.stdout.on('error', (err) => {
  // The reader went away (`carapace execution log ID | head`): nothing more to say.
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});
const { main } = await import(entry);
process.exitCode = await main(process.argv.slice(2));
