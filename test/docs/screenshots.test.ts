// The screenshots of the docs never go stale (issue 36): the docs show only the pictures the
// browser tests take and publish (DOC_SCREENSHOTS of test/e2e/browser.ts, copied to
// docs/screenshots/ by publishScreenshot with CARAPACE_UPDATE_SCREENSHOTS=1); each is
// committed, shown by a page of the guide, and published by a browser test.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOC_SCREENSHOTS } from '../e2e/browser.js';
import { markdownImages, ROOT, trackedMarkdown } from './markdown.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Every picture a tracked Markdown file shows, as a path from the root (undefined for another site's). */
function shown(): { file: string; picture: string | undefined; src: string }[] {
  return trackedMarkdown().flatMap((file) =>
    markdownImages(readFileSync(join(ROOT, file), 'utf8')).map((src) => ({
      file,
      src,
      picture: /^[a-z][a-z0-9+.-]*:/i.test(src) ? undefined : relative(ROOT, src.startsWith('/') ? join(ROOT, 'docs', src) : resolve(dirname(join(ROOT, file)), src.split('#')[0] as string)),
    })),
  );
}

/** The files git tracks under docs/screenshots/. */
function committed(): string[] {
  return execFileSync('git', ['ls-files', 'docs/screenshots'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '');
}

describe('the screenshots of the docs', () => {
  it('finds the pictures of a Markdown text, not those of its code', () => {
    expect(markdownImages('![a](x.png) [b](y.md) `![c](z.png)`\n```\n![d](w.png)\n```\n<img alt="e" src="v.png">')).toEqual(['x.png', 'v.png']);
  });

  it('the docs show only the screenshots the browser tests take (DOC_SCREENSHOTS), none from elsewhere', () => {
    const pictures = shown();
    expect(pictures.length).toBeGreaterThan(0);
    const strays = pictures
      .filter(({ picture }) => picture === undefined || dirname(picture) !== 'docs/screenshots' || !(DOC_SCREENSHOTS as readonly string[]).includes(basename(picture, '.png')) || !picture.endsWith('.png'))
      .map(({ file, src }) => `${file}: ${src}`);
    expect(strays, `not a screenshot of DOC_SCREENSHOTS (test/e2e/browser.ts):\n${strays.join('\n')}`).toEqual([]);
    const unlisted = committed().filter((f) => !(DOC_SCREENSHOTS as readonly string[]).includes(basename(f, '.png')) || !f.endsWith('.png'));
    expect(unlisted, 'committed under docs/screenshots but not taken by a browser test (DOC_SCREENSHOTS): remove them or list them').toEqual([]);
  });

  for (const name of DOC_SCREENSHOTS) {
    it(`${name}: committed as docs/screenshots/${name}.png, shown by a page of docs/, published by a browser test`, () => {
      const file = `docs/screenshots/${name}.png`;
      expect(committed(), `${file} is not committed: run the browser test that publishes it with CARAPACE_UPDATE_SCREENSHOTS=1 (docs/development/testing.md) and commit it`).toContain(file);
      expect(readFileSync(join(ROOT, file)).subarray(0, 8).equals(PNG_SIGNATURE), `${file} is not a PNG`).toBe(true);
      const pages = shown().filter(({ file: page, picture }) => page.startsWith('docs/') && picture === file);
      expect(pages.length, `no page of docs/ shows ${file}`).toBeGreaterThan(0);
      const publishers = readdirSync(join(ROOT, 'test', 'e2e')).filter((f) => f.endsWith('.e2e.test.ts') && readFileSync(join(ROOT, 'test', 'e2e', f), 'utf8').includes(`publishScreenshot('${name}')`));
      expect(publishers, `no browser test (test/e2e/*.e2e.test.ts) calls publishScreenshot('${name}')`).not.toEqual([]);
    });
  }
});
