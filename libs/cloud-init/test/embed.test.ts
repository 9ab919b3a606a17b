import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DISCOVERY_SCRIPT } from '@carapace/cloud-init';
import { PACKAGE_DIR, run } from './helpers.js';

describe('embedded discovery script', () => {
  it('is exactly src/discovery.py (else run: npm run embed -w @carapace/cloud-init)', () => {
    expect(DISCOVERY_SCRIPT).toBe(readFileSync(join(PACKAGE_DIR, 'src', 'discovery.py'), 'utf8'));
  });

  it('src/discovery-script.generated.ts is what scripts/embed.js generates', async () => {
    const result = await run(process.execPath, [join(PACKAGE_DIR, 'scripts', 'embed.js'), '--check']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('is valid python3 with a python3 shebang, importing only the standard library', async () => {
    expect(DISCOVERY_SCRIPT.startsWith('#!/usr/bin/env python3\n')).toBe(true);
    // Parses the script and lists the top-level modules it imports that are not in the
    // standard library (sys.stdlib_module_names: python 3.10+).
    const check = [
      'import ast, sys',
      'tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())',
      'names = set()',
      'for node in ast.walk(tree):',
      '    if isinstance(node, ast.Import): names.update(a.name.split(".")[0] for a in node.names)',
      '    elif isinstance(node, ast.ImportFrom): names.add((node.module or "").split(".")[0])',
      'print(" ".join(sorted(n for n in names if n not in sys.stdlib_module_names)))',
    ].join('\n');
    const result = await run('python3', ['-c', check, join(PACKAGE_DIR, 'src', 'discovery.py')]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('');
  });
});
