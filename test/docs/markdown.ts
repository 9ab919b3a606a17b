// What the documentation tests read of Markdown: the files git tracks, their links, and the
// anchors of their headings (test/docs/links.test.ts, test/docs/screenshots.test.ts).
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/** The checkout's root. */
export const ROOT = resolve(import.meta.dirname, '../..');

/** The Markdown files git tracks (the READMEs, docs/, the changelog), relative to the root. */
export function trackedMarkdown(): string[] {
  return execFileSync('git', ['ls-files', '*.md'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '' && !f.includes('node_modules/'));
}

/** A Markdown text without its code blocks and code spans: what is rendered as prose. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The links of a Markdown text, outside code blocks and code spans (images' too: `![alt](src)`). */
export function markdownLinks(text: string): string[] {
  return [...prose(text).matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
}

/** The pictures a Markdown text shows (`![alt](src)` and `<img src>`), outside code blocks and code spans. */
export function markdownImages(text: string): string[] {
  const shown = prose(text);
  return [
    ...[...shown.matchAll(/!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string),
    ...[...shown.matchAll(/<img\s[^>]*\bsrc="([^"]+)"/gi)].map((m) => m[1] as string),
  ];
}

/** GitHub's and VitePress's anchor of a heading: lower case, punctuation dropped, spaces as dashes. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}
