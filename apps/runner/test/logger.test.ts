import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { REDACT } from '@carapace/logging';
import { createRunnerLogger } from '../src/logger.js';

describe('the runner logger', () => {
  function logAll(format: 'json' | 'pretty'): string {
    const chunks: string[] = [];
    const out = new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        chunks.push(String(chunk));
        done();
      },
    });
    const log = createRunnerLogger({ logLevel: 'info', logFormat: format, name: 'par1-a' }, out);
    // one entry per path of the control plane's list ('*' as any key)
    for (const [i, path] of REDACT.entries()) {
      const entry: Record<string, unknown> = {};
      const parts = path.split('.').map((p) => (p === '*' ? 'any' : p));
      parts.reduce<Record<string, unknown>>((node, part, j) => (node[part] = j === parts.length - 1 ? `leaked-${i}` : {}) as Record<string, unknown>, entry);
      log.info(entry, `entry ${i}`);
    }
    return chunks.join('');
  }

  for (const format of ['json', 'pretty'] as const) {
    it(`masks every path of the control plane's redaction list, named by the runner (${format})`, () => {
      const text = logAll(format);
      expect(REDACT).toEqual(expect.arrayContaining(['authorization', 'password', '*.password', 'token', 'secret', 'privateKey']));
      expect(text.trimEnd().split('\n')).toHaveLength(REDACT.length);
      expect(text).not.toMatch(/leaked-\d/);
      expect(text).toContain('par1-a');
    });
  }
});
