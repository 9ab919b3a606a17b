#!/usr/bin/env node
// Starts the control plane from its compiled output. From a source checkout it first builds,
// once and only when a source changed since the last build, every project of
// tsconfig.build.json: the control plane, the embedded runner it starts (which is told not to
// build again) and the carapace command. CARAPACE_SKIP_BUILD=1 starts what is built as is.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const parentPid = process.ppid;
const entry = new URL('../dist/main.js', import.meta.url);
const helper = new URL('../../../scripts/build-if-stale.js', import.meta.url);
const buildConfig = fileURLToPath(new URL('../../../tsconfig.build.json', import.meta.url));
if (process.env.CARAPACE_SKIP_BUILD !== '1' && existsSync(fileURLToPath(helper)) && existsSync(buildConfig)) {
  const { buildIfStale } = await import(helper.href);
  try {
    await buildIfStale(buildConfig, {
      onBuild: () => process.stderr.write('carapace-control-plane: building the TypeScript sources (changed since the last build)...\n'),
    });
  } catch {
    process.stderr.write('carapace-control-plane: building failed (see above).\n');
    process.exit(1);
  }
}
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('carapace-control-plane: not built, and TypeScript is not installed to build it (run npm ci).\n');
  process.exit(1);
}
const { main } = await import(entry.href);
// Under npm (npm start, npx) the control plane stops with npm, even when npm is killed
// without a chance to forward a signal.
await main(process.argv.slice(2), { parentPid: process.env.npm_lifecycle_event ? parentPid : undefined });
