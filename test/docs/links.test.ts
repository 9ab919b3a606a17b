// The link checker of the documentation (issue 36): every relative link of every Markdown
// file git tracks (the READMEs, docs/, the changelog) leads to a file or folder of the
// checkout, and a link to a heading of a Markdown file leads to a heading that exists.
// Links to other sites are not followed: the tests send no traffic off the machine.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorOf, markdownLinks, ROOT, trackedMarkdown } from './markdown.js';

const DOCS = join(ROOT, 'docs');

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of text.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = anchorOf(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1] as string);
  return anchors;
}

/** Where a link of `from` leads, or undefined for a link off the checkout. */
function target(from: string, link: string): { path: string; anchor: string } | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link)) return undefined;
  const [rawPath = '', anchor = ''] = link.split('#');
  const path = decodeURIComponent(rawPath);
  if (path === '') return { path: from, anchor };
  // The site's links are from the root of docs/ and may leave out `.md`.
  const base = path.startsWith('/') ? join(DOCS, path) : resolve(dirname(from), path);
  for (const candidate of [base, `${base}.md`, join(base, 'index.md')]) {
    if (existsSync(candidate) && (statSync(candidate).isFile() || candidate === base)) return { path: candidate, anchor };
  }
  return { path: base, anchor };
}

describe('the documentation links', () => {
  it('finds links, leaves code alone, and makes anchors the way the renderers do', () => {
    expect(markdownLinks('see [a](b.md) and `[c](d.md)`\n```\n[e](f.md)\n```\n[g](h.md "t")')).toEqual(['b.md', 'h.md']);
    expect(anchorOf('Backups and secrets')).toBe('backups-and-secrets');
    expect(anchorOf('`upgrade_ceph`: a rolling upgrade (Pacific → Reef)')).toBe('upgrade_ceph-a-rolling-upgrade-pacific--reef');
  });

  it('every relative link of every tracked Markdown file leads to a file of the checkout, and to a heading that exists', () => {
    const files = trackedMarkdown();
    expect(files.length).toBeGreaterThan(20);
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      const from = join(ROOT, file);
      for (const link of markdownLinks(readFileSync(from, 'utf8'))) {
        const to = target(from, link);
        if (!to) continue;
        checked++;
        if (!existsSync(to.path)) {
          broken.push(`${file}: ${link} (no such file)`);
          continue;
        }
        if (to.anchor !== '' && to.path.endsWith('.md') && !anchorsOf(to.path).has(to.anchor)) broken.push(`${file}: ${link} (no such heading)`);
      }
    }
    expect(broken, broken.join('\n')).toEqual([]);
    expect(checked, 'relative links checked').toBeGreaterThan(100);
  });
});
