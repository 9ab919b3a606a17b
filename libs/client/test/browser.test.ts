import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as browser from '../src/tls.browser.js';
import * as node from '../src/tls.js';

const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
const defaults = { verify: true, certificateFile: null, caFile: null };

describe('the browser entry point of the TLS options', () => {
  it('maps #tls to a browser file under the browser condition, to the Node one otherwise', () => {
    const { imports } = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as { imports: Record<string, Record<string, unknown>> };
    expect(imports['#tls']).toEqual({
      '@carapace/source': { browser: './src/tls.browser.ts', default: './src/tls.ts' },
      browser: { types: './dist/tls.browser.d.ts', default: './dist/tls.browser.js' },
      types: './dist/tls.d.ts',
      default: './dist/tls.js',
    });
    for (const file of ['src/tls.browser.ts', 'src/tls.ts']) expect(existsSync(join(PACKAGE_DIR, file)), file).toBe(true);
  });

  it('exports what the Node module does, imports neither undici nor node:fs, and refuses the options that need them', async () => {
    expect(Object.keys(browser).sort()).toEqual(Object.keys(node).sort());
    const source = readFileSync(join(PACKAGE_DIR, 'src', 'tls.browser.ts'), 'utf8');
    expect(source).not.toMatch(/from '(undici|node:[a-z/]+)'|import\('(undici|node:[a-z/]+)'\)/);
    for (const tls of [defaults, { ...defaults, verify: false }, { ...defaults, caFile: '/ca.pem' }, { ...defaults, certificateFile: '/me.pem' }]) {
      expect(browser.needsDispatcher(tls)).toBe(node.needsDispatcher(tls));
    }
    await expect(browser.createDispatcher({ ...defaults, verify: false })).rejects.toThrow(/need Node/);
    await expect(browser.closeDispatcher(undefined)).resolves.toBeUndefined();
  });
});
