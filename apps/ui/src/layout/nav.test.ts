// The links to the documentation site: the Help menu's pages exist in docs/, and a playbook's
// link leads to its section of the generated playbook reference (docs/reference/playbooks.md).
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docsAnchor, DOCS_BASE, HELP_LINKS, playbookDocsHref } from './nav.ts';

const DOCS = resolve(import.meta.dirname, '../../../../docs');
const REFERENCE = readFileSync(join(DOCS, 'reference', 'playbooks.md'), 'utf8');

/** The playbooks of the reference: its headings "NAME (`ID`)", and their text as the site renders it (code spans as their text). */
const HEADINGS = [...REFERENCE.matchAll(/^## ((.+) \(`([a-z0-9_]+)`\))$/gm)].map((m) => ({ text: (m[1] as string).replace(/`/g, ''), name: m[2] as string, id: m[3] as string }));

/** GitHub's anchor of a heading's text (the site makes the same: docs/.vitepress/config.js): ASCII words here. */
function headingAnchor(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-');
}

/**
 * The anchor of each playbook's heading as the reference's own table links to it (written by
 * test/docs/reference.ts, checked against the headings by test/docs/links.test.ts).
 */
const TABLE_ANCHORS = new Map([...REFERENCE.matchAll(/^\| \[[^\]]+\]\(#([^)]+)\) \| `([a-z0-9_]+)` \|/gm)].map((m) => [m[2] as string, m[1] as string]));

describe('the links to the documentation site', () => {
  it('the Help menu links to pages of docs/', () => {
    expect(HELP_LINKS.map((l) => l.label)).toEqual(['Operator guide', 'First cluster', 'Playbook reference', 'Troubleshooting', 'CLI reference']);
    for (const { href } of HELP_LINKS) {
      expect(href.startsWith(DOCS_BASE), href).toBe(true);
      const page = href.slice(DOCS_BASE.length);
      const file = page.endsWith('/') ? join(DOCS, page, 'index.md') : join(DOCS, `${page}.md`);
      expect(existsSync(file), `${href}: ${file}`).toBe(true);
    }
  });

  it("makes the site's anchors: lower case, punctuation dropped, spaces as dashes", () => {
    expect(docsAnchor('OpenStack integration (Cinder, Glance, Nova) (cinder_integration)')).toBe('openstack-integration-cinder-glance-nova-cinder_integration');
    expect(docsAnchor('Add OSD host (add_osd)')).toBe('add-osd-host-add_osd');
  });

  it('links every playbook to the anchor of its heading in the generated reference', () => {
    expect(HEADINGS.length).toBeGreaterThan(10);
    expect(new Set(TABLE_ANCHORS.keys())).toEqual(new Set(HEADINGS.map((h) => h.id)));
    for (const { text, name, id } of HEADINGS) {
      const href = playbookDocsHref({ id, name });
      expect(href, id).toBe(`${DOCS_BASE}reference/playbooks#${headingAnchor(text)}`);
      expect(href, id).toBe(`${DOCS_BASE}reference/playbooks#${TABLE_ANCHORS.get(id)}`);
    }
  });
});
