/** `npm run docs:generate`: writes the generated references of docs/reference/ (test/docs/reference.ts). */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GENERATED, ROOT } from './reference.js';

for (const [path, render] of GENERATED) {
  const file = join(ROOT, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, render());
  process.stdout.write(`wrote ${path}\n`);
}
