#!/usr/bin/env node
// Starts the runner from its compiled output. From a source checkout it first builds the runner
// and the libraries it uses when a source changed since their last build. The control plane
// starts its embedded runner with CARAPACE_SKIP_BUILD=1: it has built everything already.
// The three programs (carapace-control-plane, carapace-runner, carapace) start the same way.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const NAME = 'carapace-runner';
/** Exit status when the program cannot start: not built, or its build failed (EX_SOFTWARE). */
const EXIT_NOT_BUILT = 70;
const entry = new URL('../dist/main.js', import.meta.url);
const helper = new URL('../../../scripts/build-if-stale.js', import.meta.url);
const checkout = new URL('../../../tsconfig.build.json', import.meta.url);
const project = new URL('../tsconfig.json', import.meta.url);

if (process.env.CARAPACE_SKIP_BUILD !== '1' && existsSync(fileURLToPath(checkout)) && existsSync(fileURLToPath(helper))) {
  const { buildIfStale } = await import(helper.href);
  try {
    await buildIfStale(fileURLToPath(project), {
      onBuild: () => process.stderr.write(`${NAME}: building the TypeScript sources (changed since the last build)...\n`),
    });
  } catch {
    process.stderr.write(`${NAME}: building failed (see above).\n`);
    process.exit(EXIT_NOT_BUILT);
  }
}
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(`${NAME}: not built, and TypeScript is not installed to build it (run npm ci).\n`);
  process.exit(EXIT_NOT_BUILT);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
