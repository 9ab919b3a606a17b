#!/usr/bin/env node
// Starts the control plane from its compiled output. From a source checkout it first builds,
// once and only when a source changed since the last build, every project of
// tsconfig.build.json: the control plane, the embedded runner it starts (which is told not to
// build again) and the carapace command; then the web UI it serves (apps/ui, with Vite).
// CARAPACE_SKIP_BUILD=1 starts what is built as is.
// The three programs (carapace-control-plane, carapace-runner, carapace) start the same way.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const NAME = 'carapace-control-plane';
/** Exit status when the program cannot start: not built, or its build failed (EX_SOFTWARE). */
const EXIT_NOT_BUILT = 70;
const entry = new URL('../dist/main.js', import.meta.url);
const helper = new URL('../../../scripts/build-if-stale.js', import.meta.url);
const checkout = new URL('../../../tsconfig.build.json', import.meta.url);
const project = checkout;
const parentPid = process.ppid;

if (process.env.CARAPACE_SKIP_BUILD !== '1' && existsSync(fileURLToPath(checkout)) && existsSync(fileURLToPath(helper))) {
  const { buildIfStale, buildUiIfStale } = await import(helper.href);
  try {
    await buildIfStale(fileURLToPath(project), {
      onBuild: () => process.stderr.write(`${NAME}: building the TypeScript sources (changed since the last build)...\n`),
    });
  } catch {
    process.stderr.write(`${NAME}: building failed (see above).\n`);
    process.exit(EXIT_NOT_BUILT);
  }
  // The web UI served at /: the API works without it, so a failed UI build does not stop the start.
  try {
    await buildUiIfStale({ onBuild: () => process.stderr.write(`${NAME}: building the web UI (changed since the last build)...\n`) });
  } catch {
    process.stderr.write(`${NAME}: building the web UI failed (see above); starting with the UI as it was built before, if at all.\n`);
  }
}
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(`${NAME}: not built, and TypeScript is not installed to build it (run npm ci).\n`);
  process.exit(EXIT_NOT_BUILT);
}
const { main } = await import(entry.href);
// Under npm (npm start, npx) the control plane stops with npm, even when npm is killed
// without a chance to forward a signal.
process.exitCode = await main(process.argv.slice(2), { parentPid: process.env.npm_lifecycle_event ? parentPid : undefined });
