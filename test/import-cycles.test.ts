// The lint rule against import cycles (scripts/eslint-import-cycles.js) sees a cycle that only
// type-only imports close, which import-x/no-cycle lets through, and names its files.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, expect, it } from 'vitest';

const RULE = resolve(import.meta.dirname, '..', 'scripts', 'eslint-import-cycles.js');
const root = mkdtempSync(join(tmpdir(), 'carapace-import-cycles-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The rule's messages on `files`, written into a folder of their own. */
async function cycles(files: Record<string, string>): Promise<string[]> {
  const dir = mkdtempSync(join(root, 'case-'));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const { default: carapace } = (await import(pathToFileURL(RULE).href)) as { default: ESLint.Plugin };
  const eslint = new ESLint({
    cwd: dir,
    overrideConfigFile: true,
    overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser }, plugins: { carapace }, rules: { 'carapace/no-import-cycle': 'error' } }],
  });
  const results = await eslint.lintFiles(Object.keys(files).map((name) => join(dir, name)));
  return results.flatMap((r) => r.messages.map((m) => `${m.line}:${m.column} ${m.message}`));
}

describe('no-import-cycle', () => {
  it('reports a cycle closed by type-only imports, at the import on each side', async () => {
    const found = await cycles({
      'a.ts': "import type { B } from './b.js';\nexport interface A { b: B }\n",
      'b.ts': "import { type A } from './a.js';\nexport interface B { a?: A }\n",
    });
    expect(found).toEqual([
      expect.stringMatching(/^1:24 Import cycle: a\.ts -> b\.ts -> a\.ts/),
      expect.stringMatching(/^1:24 Import cycle: b\.ts -> a\.ts -> b\.ts/),
    ]);
  });

  it('follows re-exports through a third file, and passes a graph without a cycle', async () => {
    expect(
      await cycles({
        'x.ts': "export * as y from './y.js';\n",
        'y.ts': "export type { Z } from './z.js';\n",
        'z.ts': "export type Z = import('./x.js').y.Z | null;\n",
      }),
    ).toHaveLength(3);
    expect(
      await cycles({
        'x.ts': "export type X = 1;\n",
        'y.ts': "import type { X } from './x.js';\nexport type Y = X;\n",
        'z.ts': "export type Z = import('./y.js').Y;\n",
      }),
    ).toEqual([]);
  });
});
