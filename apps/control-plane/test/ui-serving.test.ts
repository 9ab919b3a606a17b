// The web UI beside /v1: the built files of a real directory, the SPA fallback for client-side
// routes, the cache policy, the security headers, and an API that keeps answering JSON.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, createContainer, DEFAULT_CONFIG, loadConfig, openDatabase } from '../src/index.js';
import { Harness, keptLogger } from '@carapace/test-support/harness';

const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-Ab12Cd34.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = 'console.log("carapace ui");';

describe('the web UI', () => {
  let dir: string;
  let h: Harness;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'carapace-ui-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets', 'index-Ab12Cd34.js'), SCRIPT);
    writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    writeFileSync(join(dir, '.secret'), 'not served');
    h = await Harness.start({ CARAPACE_UI_DIR: dir });
  });

  afterAll(async () => {
    await h.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves index.html at / with no-cache and the security headers', async () => {
    const res = await h.request('GET', '/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toBe(INDEX);
    expect(res.headers['cache-control']).toBe('no-cache');
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-frame-options']).toBe('DENY');
  });

  it('answers the SPA for client-side routes (the e-mailed reset link, an execution), revalidated by ETag', async () => {
    for (const path of ['/password_reset/abcDEF0123-_/', '/executions/0b5c1a62-1f1e-4c55-9d44-1e6b5f0a3c11', '/servers?page=2', '/index.html']) {
      const res = await h.request('GET', path);
      expect(res.status, path).toBe(200);
      expect(res.body, path).toBe(INDEX);
      expect(res.headers['cache-control'], path).toBe('no-cache');
      expect(res.headers['content-security-policy'], path).toContain("frame-ancestors 'none'");
    }
    const first = await h.request('GET', '/clusters');
    const again = await h.request('GET', '/clusters', { headers: { 'if-none-match': String(first.headers.etag) } });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    const head = await h.app.inject({ method: 'HEAD', url: '/dashboard' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['cache-control']).toBe('no-cache');
  });

  it('serves hashed assets as immutable, with their type', async () => {
    const res = await h.request('GET', '/assets/index-Ab12Cd34.js');
    expect(res.status).toBe(200);
    expect(res.body).toBe(SCRIPT);
    expect(res.headers['content-type']).toMatch(/^text\/javascript|^application\/javascript/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const icon = await h.request('GET', '/favicon.svg');
    expect(icon.status).toBe(200);
    expect(icon.headers['cache-control']).toBe('no-cache');
  });

  it('answers a JSON 404 for a missing asset, never the page; never serves a dot file', async () => {
    const res = await h.request('GET', '/assets/index-gone.js');
    expect(res.status).toBe(404);
    expect(res.json).toMatchObject({ code: 404, error: 'NotFound' });
    expect(res.headers['cache-control']).toBe('private, no-store, no-cache');
    const dot = await h.request('GET', '/.secret');
    expect(dot.body).toBe(INDEX);
  });

  it('keeps /v1 JSON: unknown API paths answer a JSON 404, known ones their JSON, never the HTML page', async () => {
    for (const path of ['/v1', '/v1/', '/v1/nope/', '/v1/index.html', '/v1/assets/index-Ab12Cd34.js']) {
      const res = await h.request('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.headers['content-type'], path).toBe('application/json');
      expect(res.json, path).toMatchObject({ code: 404, error: 'NotFound' });
      expect(res.headers['cache-control'], path).toBe('private, no-store, no-cache');
    }
    const info = await h.request('GET', '/v1/info/');
    expect(info.status).toBe(200);
    expect(info.headers['content-type']).toBe('application/json');
    expect(info.headers['cache-control']).toBe('private, no-store, no-cache');
    expect(info.headers['content-security-policy']).toBeUndefined();
    const post = await h.request('POST', '/v1/nope/', { body: {} });
    expect(post.status).toBe(404);
    expect(post.json).toMatchObject({ error: 'NotFound' });
    const method = await h.request('DELETE', '/v1/info/');
    expect(method.status).toBe(405);
  });

  it('answers other methods on UI paths with a JSON 404', async () => {
    const res = await h.request('POST', '/password_reset/abc/', { body: {} });
    expect(res.status).toBe(404);
    expect(res.json).toMatchObject({ code: 404, error: 'NotFound' });
  });
});

describe('the UI setting', () => {
  it('defaults to the apps/ui/dist of the install; CARAPACE_UI_DIR sets it, resolved', () => {
    expect(DEFAULT_CONFIG.ui.dir).toBe(join(import.meta.dirname, '..', '..', 'ui', 'dist'));
    expect(loadConfig({ env: {} }).ui.dir).toBe(DEFAULT_CONFIG.ui.dir);
    expect(loadConfig({ env: { CARAPACE_UI_DIR: 'some/dir' } }).ui.dir).toBe(join(process.cwd(), 'some/dir'));
  });

  it('is off, with a clear log line, when the directory has no index.html: / is a JSON 404', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'carapace-ui-empty-'));
    const lines: string[] = [];
    const config = loadConfig({ env: { CARAPACE_DATA_DIR: empty, CARAPACE_UI_DIR: join(empty, 'dist'), CARAPACE_ADMIN_PASSWORD: 'password-of-root' } });
    const logger = keptLogger(lines);
    const container = await createContainer(config, await openDatabase(':memory:'), logger);
    const app = await buildApp({ services: container.services, logger });
    try {
      expect(lines.join('')).toContain(`web UI off: ${join(empty, 'dist', 'index.html')} does not exist`);
      const res = await app.inject({ method: 'GET', url: '/' });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ code: 404, error: 'NotFound' });
      expect(res.headers['cache-control']).toBe('private, no-store, no-cache');
    } finally {
      await app.close();
      await container.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
