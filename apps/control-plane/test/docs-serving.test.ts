// The documentation site at /docs/ beside the web UI: a small fake VitePress build in a real
// directory, its clean URLs, the cache policy, a CSP that allows exactly the site's inline
// scripts (by hash, scanned again after a rebuild), its 404 page, the page that says to build
// it, and a web UI whose fallback to its app never answers a /docs path.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, loadConfig } from '../src/index.js';
import { isApiPath, isDocsPath } from '../src/http/ui.js';
import { Harness } from '@carapace/test-support/harness';

const UI_INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-Ab12Cd34.js"></script></head><body><div id="root"></div></body></html>';
const INLINE = 'document.documentElement.classList.add("dark")';
const PAGE_INLINE = 'window.__VP_SITE_DATA__={"base":"/docs/"}';
const DOCS_INDEX = `<!doctype html><html><head><script type="module" src="/docs/assets/app.Xy12.js"></script><script id="check-dark-mode">${INLINE}</script></head><body>Carapace documentation</body></html>`;
const PAGE = `<!doctype html><html><head><script>${PAGE_INLINE}</script></head><body>Troubleshooting</body></html>`;
const NOT_FOUND = '<!doctype html><html><head></head><body>PAGE NOT FOUND</body></html>';
const ASSET = 'console.log("carapace docs");';

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
/** The script-src sources of a CSP. */
const scriptSrc = (csp: unknown) => (/script-src ([^;]*)/.exec(String(csp))?.[1] ?? '').split(' ');

describe('the documentation site at /docs/', () => {
  let ui: string;
  let docs: string;
  let h: Harness;

  beforeAll(async () => {
    ui = mkdtempSync(join(tmpdir(), 'carapace-ui-'));
    mkdirSync(join(ui, 'assets'));
    writeFileSync(join(ui, 'index.html'), UI_INDEX);
    docs = mkdtempSync(join(tmpdir(), 'carapace-docs-'));
    mkdirSync(join(docs, 'assets'));
    mkdirSync(join(docs, 'guide'));
    writeFileSync(join(docs, 'index.html'), DOCS_INDEX);
    writeFileSync(join(docs, 'guide', 'index.html'), '<!doctype html><html><body>The guide</body></html>');
    writeFileSync(join(docs, 'guide', 'troubleshooting.html'), PAGE);
    writeFileSync(join(docs, 'assets', 'app.Xy12.js'), ASSET);
    writeFileSync(join(docs, '404.html'), NOT_FOUND);
    writeFileSync(join(docs, '.secret'), 'not served');
    h = await Harness.start({ CARAPACE_UI_DIR: ui, CARAPACE_DOCS_DIR: docs });
  });

  afterAll(async () => {
    await h.stop();
    rmSync(ui, { recursive: true, force: true });
    rmSync(docs, { recursive: true, force: true });
  });

  it('sends /docs to /docs/ (its query kept)', async () => {
    for (const [path, location] of [
      ['/docs', '/docs/'],
      ['/docs?q=ceph', '/docs/?q=ceph'],
    ] as const) {
      const res = await h.request('GET', path);
      expect(res.status, path).toBe(301);
      expect(res.headers.location, path).toBe(location);
    }
  });

  it('serves index.html at /docs/, revalidated, with a CSP that allows its inline scripts by hash and nothing else inline', async () => {
    const res = await h.request('GET', '/docs/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toBe(DOCS_INDEX);
    expect(res.headers['cache-control']).toBe('no-cache');
    const csp = String(res.headers['content-security-policy']);
    expect(scriptSrc(csp).sort()).toEqual(["'self'", sha256(INLINE), sha256(PAGE_INLINE)].sort());
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'self'");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    const again = await h.request('GET', '/docs/', { headers: { 'if-none-match': String(res.headers.etag) } });
    expect(again.status).toBe(304);
  });

  it('serves clean URLs: /docs/guide/troubleshooting is guide/troubleshooting.html, /docs/guide/ guide/index.html', async () => {
    const page = await h.request('GET', '/docs/guide/troubleshooting');
    expect(page.status).toBe(200);
    expect(page.body).toBe(PAGE);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(scriptSrc(page.headers['content-security-policy'])).toContain(sha256(PAGE_INLINE));
    expect((await h.request('GET', '/docs/guide/troubleshooting.html')).body).toBe(PAGE);
    for (const path of ['/docs/guide/', '/docs/guide']) {
      const res = await h.request('GET', path);
      expect(res.status, path).toBe(200);
      expect(res.body, path).toContain('The guide');
    }
  });

  it('serves hashed assets as immutable, with their type; a missing one is a JSON 404', async () => {
    const res = await h.request('GET', '/docs/assets/app.Xy12.js');
    expect(res.status).toBe(200);
    expect(res.body).toBe(ASSET);
    expect(res.headers['content-type']).toMatch(/^text\/javascript|^application\/javascript/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const missing = await h.request('GET', '/docs/assets/app.gone.js');
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ code: 404, error: 'NotFound' });
  });

  it("answers a missing page with the site's 404.html and status 404, never the web UI's app", async () => {
    for (const path of ['/docs/guide/no-such-page', '/docs/no/such/page.html', '/docs/.secret', '/docs/index.md']) {
      const res = await h.request('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body, path).toBe(NOT_FOUND);
      expect(res.headers['content-type'], path).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control'], path).toBe('private, no-store, no-cache');
      expect(res.headers['content-security-policy'], path).toContain("frame-ancestors 'none'");
    }
    const post = await h.request('POST', '/docs/guide/', { body: {} });
    expect(post.status).toBe(404);
    expect(post.json).toMatchObject({ code: 404, error: 'NotFound' });
  });

  it('scans the inline scripts again when the site is rebuilt (index.html changed)', async () => {
    const rebuilt = 'document.documentElement.classList.toggle("mac", false)';
    writeFileSync(join(docs, 'index.html'), DOCS_INDEX.replace(INLINE, rebuilt));
    const later = new Date(Date.now() + 5_000);
    utimesSync(join(docs, 'index.html'), later, later);
    const res = await h.request('GET', '/docs/');
    const sources = scriptSrc(res.headers['content-security-policy']);
    expect(sources).toContain(sha256(rebuilt));
    expect(sources).not.toContain(sha256(INLINE));
    writeFileSync(join(docs, 'index.html'), DOCS_INDEX);
  });

  it("leaves the web UI as it was: its pages, its own CSP with no inline script, /v1's JSON", async () => {
    for (const path of ['/', '/executions/0b5c1a62-1f1e-4c55-9d44-1e6b5f0a3c11', '/docsx', '/documentation']) {
      const res = await h.request('GET', path);
      expect(res.status, path).toBe(200);
      expect(res.body, path).toBe(UI_INDEX);
      expect(scriptSrc(res.headers['content-security-policy']), path).toEqual(["'self'"]);
    }
    const info = await h.request('GET', '/v1/info/');
    expect(info.status).toBe(200);
    expect(info.headers['content-security-policy']).toBeUndefined();
  });
});

describe('the documentation site when it is not there', () => {
  it('answers /docs/ with a 404 page that says to run npm run docs:build, whether its directory is empty or missing, never the app', async () => {
    const ui = mkdtempSync(join(tmpdir(), 'carapace-ui-'));
    writeFileSync(join(ui, 'index.html'), UI_INDEX);
    const empty = mkdtempSync(join(tmpdir(), 'carapace-docs-empty-'));
    try {
      for (const [dir, restart] of [
        [empty, false],
        [join(empty, 'missing'), true],
      ] as const) {
        const h = await Harness.start({ CARAPACE_UI_DIR: ui, CARAPACE_DOCS_DIR: dir });
        try {
          for (const path of ['/docs/', '/docs/guide/install']) {
            const res = await h.request('GET', path);
            expect(res.status, path).toBe(404);
            expect(res.headers['content-type'], path).toBe('text/html; charset=utf-8');
            expect(res.body, path).toContain('npm run docs:build');
            expect(res.body.includes('restart the control plane'), path).toBe(restart);
            expect(res.body, path).not.toContain(empty);
            expect(res.headers['content-security-policy'], path).toContain("script-src 'self'");
          }
          expect((await h.request('GET', '/docs')).status).toBe(301);
          expect((await h.request('GET', '/')).body).toBe(UI_INDEX);
        } finally {
          await h.stop();
        }
      }
    } finally {
      rmSync(ui, { recursive: true, force: true });
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('the documentation setting', () => {
  it('defaults to the docs/.vitepress/dist of the checkout; CARAPACE_DOCS_DIR sets it, resolved; null turns the site off', () => {
    expect(DEFAULT_CONFIG.ui.docsDir).toBe(join(import.meta.dirname, '..', '..', '..', 'docs', '.vitepress', 'dist'));
    expect(loadConfig({ env: {} }).ui.docsDir).toBe(DEFAULT_CONFIG.ui.docsDir);
    expect(loadConfig({ env: { CARAPACE_DOCS_DIR: 'some/site' } }).ui.docsDir).toBe(join(process.cwd(), 'some/site'));
    const dir = mkdtempSync(join(tmpdir(), 'carapace-docs-config-'));
    try {
      writeFileSync(join(dir, 'off.yaml'), 'ui:\n  docsDir: null\n');
      expect(loadConfig({ file: join(dir, 'off.yaml'), env: {} }).ui.docsDir).toBeNull();
      writeFileSync(join(dir, 'bad.yaml'), 'ui:\n  docsDir: 3\n');
      expect(() => loadConfig({ file: join(dir, 'bad.yaml'), env: {} })).toThrow(/docsDir/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('off (null): /docs/ says so in a 404 page, never the app', async () => {
    const ui = mkdtempSync(join(tmpdir(), 'carapace-ui-'));
    writeFileSync(join(ui, 'index.html'), UI_INDEX);
    const dir = mkdtempSync(join(tmpdir(), 'carapace-docs-off-'));
    writeFileSync(join(dir, 'off.yaml'), 'ui:\n  docsDir: null\n');
    const h = await Harness.start({ CARAPACE_CONFIG: join(dir, 'off.yaml'), CARAPACE_UI_DIR: ui });
    try {
      const res = await h.request('GET', '/docs/guide/');
      expect(res.status).toBe(404);
      expect(res.body).toContain('ui.docsDir</code> is null');
    } finally {
      await h.stop();
      rmSync(ui, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('which paths are the API, which the documentation site', () => {
  it('takes the prefix itself, below it and with a query; never a longer name', () => {
    for (const url of ['/v1', '/v1/', '/v1/user/', '/v1?x=1']) expect(isApiPath(url), url).toBe(true);
    for (const url of ['/v10', '/v', '/', '/docs/v1/', '/assets/v1']) expect(isApiPath(url), url).toBe(false);
    for (const url of ['/docs', '/docs/', '/docs/guide/install', '/docs?x=1']) expect(isDocsPath(url), url).toBe(true);
    for (const url of ['/docsx', '/doc', '/', '/v1/docs/']) expect(isDocsPath(url), url).toBe(false);
  });
});
