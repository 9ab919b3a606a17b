import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsesAsCertificate as inBrowser } from '../src/x509.browser.js';
import { parsesAsCertificate as inNode } from '../src/x509.js';
import { GOLDEN_CA, PACKAGE_DIR } from './helpers.js';

const pem = (base64: string) => `-----BEGIN CERTIFICATE-----\n${base64}\n-----END CERTIFICATE-----\n`;
const der = (block: string) => Buffer.from(block.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, ''), 'base64');

describe('the browser entry point', () => {
  it('maps #x509 to a browser file under the browser condition, to the Node one otherwise', () => {
    const { imports } = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as { imports: Record<string, Record<string, unknown>> };
    expect(imports['#x509']).toEqual({
      '@carapace/source': { browser: './src/x509.browser.ts', default: './src/x509.ts' },
      browser: { types: './dist/x509.browser.d.ts', default: './dist/x509.browser.js' },
      types: './dist/x509.d.ts',
      default: './dist/x509.js',
    });
    for (const file of ['src/x509.browser.ts', 'src/x509.ts']) expect(existsSync(join(PACKAGE_DIR, file)), file).toBe(true);
  });

  it("checks a certificate's DER outline as Node's parser does for whole and broken blocks", () => {
    const whole = der(GOLDEN_CA);
    const cases: [string, boolean][] = [
      [GOLDEN_CA, true],
      [pem('bm90IGEgY2VydA=='), false],
      [pem(whole.subarray(0, whole.length - 10).toString('base64')), false],
      [pem(Buffer.concat([whole, Buffer.from([0])]).toString('base64')), false],
      [pem(Buffer.from([0x30, 0x80, 0, 0]).toString('base64')), false],
      [pem('!!!not base64!!!'), false],
    ];
    for (const [block, valid] of cases) {
      expect(inBrowser(block), block).toBe(valid);
      expect(inNode(block), block).toBe(valid);
    }
  });
});
