#!/usr/bin/env node
// Starts the runner from its compiled output. From a source checkout it first builds the runner
// and the libraries it uses when a source changed since their last build. The control plane
// starts its embedded runner with CARAPACE_SKIP_BUILD=1: it has built everything already.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/main.js', import.meta.url);
const helper = new URL('../../../scripts/build-if-stale.js', import.meta.url);
const buildConfig = fileURLToPath(new URL('../tsconfig.json', import.meta.url));
const inCheckout = existsSync(fileURLToPath(new URL('../../../tsconfig.build.json', import.meta.url)));
if (process.env.CARAPACE_SKIP_BUILD !== '1' && inCheckout && existsSync(fileURLToPath(helper))) {
  const { buildIfStale } = await import(helper.href);
  try {
    await buildIfStale(buildConfig, {
      onBuild: () => process.stderr.write('carapace-runner: building the TypeScript sources (changed since the last build)...\n'),
    });
  } catch {
    process.stderr.write('carapace-runner: building failed (see above).\n');
    process.exit(1);
  }
}
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('carapace-runner: not built, and TypeScript is not installed to build it (run npm ci).\n');
  process.exit(1);
}
const { main } = await import(entry.href);
await main(process.argv.slice(2));
