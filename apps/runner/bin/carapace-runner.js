#!/usr/bin/env node
// Starts the runner from its compiled output, building it and the libraries it uses first when it
// runs from a source checkout (TypeScript present) so that no separate build step is needed.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/main.js', import.meta.url);
const buildConfig = fileURLToPath(new URL('../tsconfig.json', import.meta.url));
const inCheckout = existsSync(fileURLToPath(new URL('../../../tsconfig.build.json', import.meta.url)));
if (inCheckout) {
  let tsc = null;
  try {
    tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  } catch {
    // A production install without TypeScript runs what is already built.
  }
  if (tsc) execFileSync(process.execPath, [tsc, '-b', buildConfig], { stdio: 'inherit' });
}
if (!existsSync(entry)) {
  process.stderr.write('carapace-runner: not built, and TypeScript is not installed to build it (run npm ci).\n');
  process.exit(1);
}
const { main } = await import(entry.href);
await main(process.argv.slice(2));
