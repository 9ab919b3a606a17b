import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { notFoundHandler } from './errors.js';

/** Hashed build output: a changed file gets a new name, so a copy never needs revalidating. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** index.html and other unhashed files: cached, but revalidated on every use (a new build shows at once). */
const REVALIDATE = 'no-cache';
/** Anything else under the UI's paths (an error answer). */
const NO_STORE = 'private, no-store, no-cache';

/**
 * The headers of every UI answer. Scripts, connections, fonts and images: this origin only.
 * Styles also allow inline `<style>` elements: Mantine writes its CSS variables into one at
 * run time (no script can be injected through them). No framing (clickjacking), no MIME
 * sniffing, and no Referer: the password reset page carries its token in the URL.
 */
export const UI_SECURITY_HEADERS: Readonly<Record<string, string>> = securityHeaders(["'self'"]);

/** The security headers of the UI's, with these sources of scripts. */
function securityHeaders(scriptSrc: readonly string[]): Record<string, string> {
  return {
    'content-security-policy': [
      "default-src 'self'",
      `script-src ${scriptSrc.join(' ')}`,
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "font-src 'self' data:",
      "connect-src 'self'",
      "object-src 'none'",
      "base-uri 'self'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ].join('; '),
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
  };
}

/** Whether a path belongs to the API (`/v1` and below), which never answers with the UI. */
export function isApiPath(url: string): boolean {
  return underPrefix(url, '/v1');
}

/** Whether a request URL's path is `prefix` or below it (its query aside), without splitting the URL: asked on every answer. */
function underPrefix(url: string, prefix: string): boolean {
  if (!url.startsWith(prefix)) return false;
  const next = url.charCodeAt(prefix.length);
  // the end, '/' or '?'
  return Number.isNaN(next) || next === 47 || next === 63;
}

/** The web UI as the HTTP layer serves it. */
export interface UiSite {
  readonly dir: string;
  /** Sets the security headers, and a cache policy where the answer has none, on an answer to a UI path. */
  decorate(reply: FastifyReply): void;
  /** The not-found handler: the SPA's index.html for a page path (client-side routes), JSON 404 otherwise. */
  notFound(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
}

/**
 * The UI in `dir` (`ui.dir`), or null when it is off (null) or not built (no index.html):
 * the log says which, and the control plane serves the API alone.
 */
export function uiSite(dir: string | null, log: FastifyBaseLogger): UiSite | null {
  if (dir === null) {
    log.info('web UI off (ui.dir is null): serving the API only');
    return null;
  }
  const index = join(dir, 'index.html');
  if (!existsSync(index)) {
    log.warn({ uiDir: dir }, `web UI off: ${index} does not exist (build it with npm run build -w @carapace/ui, or set ui.dir / CARAPACE_UI_DIR); serving the API only`);
    return null;
  }
  log.info({ uiDir: dir }, 'serving the web UI at /');
  return {
    dir,
    decorate(reply) {
      void reply.headers(UI_SECURITY_HEADERS);
      if (!reply.hasHeader('cache-control')) void reply.header('cache-control', NO_STORE);
    },
    async notFound(request, reply) {
      const path = request.url.split('?')[0] ?? '';
      // A missing asset stays a 404: an HTML page in place of a script only hides the error.
      // Nor is the documentation site's path a page of the app (its own handler answers there).
      if ((request.method !== 'GET' && request.method !== 'HEAD') || isApiPath(path) || isDocsPath(path) || path.startsWith('/assets/')) return notFoundHandler(request, reply);
      // Looked at on each request, so that a rebuilt UI is served without a restart; read only
      // when the browser's copy is not the current one.
      const info = await stat(index);
      const etag = `W/"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
      void reply.header('cache-control', REVALIDATE).header('etag', etag);
      if (request.headers['if-none-match'] === etag) return reply.code(304).send();
      return reply.code(200).type('text/html; charset=utf-8').send(await readFile(index));
    },
  };
}

/**
 * Serves the files of the UI (`GET`/`HEAD` of any path outside `/v1`): hashed `assets/`
 * immutable, the rest revalidated. A path with no file falls to the not-found handler
 * (`UiSite.notFound`). Registered after the API's routes, whose 405 answers it must not take.
 */
export async function registerUi(app: FastifyInstance, site: UiSite): Promise<void> {
  await app.register(fastifyStatic, {
    root: site.dir,
    prefix: '/',
    wildcard: true,
    index: false,
    redirect: false,
    serveDotFiles: false,
    dotfiles: 'ignore',
    cacheControl: false,
    // A directory (`/`, `/assets/`) is no file: the not-found handler answers (the app, or a 404).
    allowedPath: (pathName) => !isApiPath(pathName) && !isDocsPath(pathName) && !pathName.endsWith('/'),
    setHeaders: (res, path) => {
      const inAssets = relative(site.dir, path).startsWith(`assets${sep}`);
      res.setHeader('cache-control', inAssets ? IMMUTABLE : REVALIDATE);
    },
  });
}

/** Where the documentation site (`ui.docsDir`) is served. */
export const DOCS_PREFIX = '/docs';

/** Whether a path belongs to the documentation site (`/docs` and below), never a page of the app. */
export function isDocsPath(url: string): boolean {
  return underPrefix(url, DOCS_PREFIX);
}

/** The CSP `script-src` sources of every inline `<script>` of the HTML files under `dir`: `'sha256-…'`, sorted, each once. */
export async function inlineScriptHashes(dir: string): Promise<string[]> {
  const hashes = new Set<string>();
  const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.html'));
  for (const file of files) {
    let html: string;
    try {
      html = await readFile(join(dir, file), 'utf8');
    } catch {
      continue; // removed meanwhile (a build under way): the next change of index.html scans again
    }
    for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi)) {
      if (/\bsrc\s*=/i.test(m[1] ?? '')) continue;
      hashes.add(`'sha256-${createHash('sha256').update(m[2] ?? '', 'utf8').digest('base64')}'`);
    }
  }
  return [...hashes].sort();
}

/** The documentation site as the HTTP layer serves it at `/docs/`. */
export interface DocsSite {
  /** The built site (`ui.docsDir`), or null when it is off. */
  readonly dir: string | null;
  /** The directory the files are served from: `dir` when it was a directory at the start, else null (`/docs/` says to build it). */
  readonly root: string | null;
  /** Sets the security headers (the site's CSP) and a cache policy where the answer has none, on an answer to a `/docs` path. */
  decorate(reply: FastifyReply): Promise<void>;
  /** A path of the site with no file: the site's 404.html (404), or the page saying it is not built or off; JSON 404 for other methods and assets. */
  notFound(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
}

/** The page of `/docs/` when there is no site to serve: a 404 that says what to do. */
function noSitePage(off: boolean, restart: boolean): string {
  const text = off
    ? '<p>The documentation site is off on this control plane (<code>ui.docsDir</code> is null).</p>'
    : `<p>The documentation site is not built. Build it in the checkout with <code>npm run docs:build</code> (into <code>docs/.vitepress/dist</code>, or the directory <code>ui.docsDir</code> / <code>CARAPACE_DOCS_DIR</code> names), then ${restart ? 'restart the control plane (the directory did not exist when it started)' : 'reload this page'}. The guide is also readable as Markdown in <code>docs/</code>.</p>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Documentation not available</title></head><body><h1>Documentation not available</h1>${text}<p><a href="/">Back to Carapace</a></p></body></html>`;
}

/**
 * The documentation site in `dir` (`ui.docsDir`, the VitePress build of docs/). Served
 * whether or not it is built: `/docs/` says how to build it rather than fail. VitePress
 * writes inline scripts (the colour scheme, the site's data) into its pages, so its CSP
 * allows scripts of this origin and those inline scripts by hash, scanned from the built
 * HTML again whenever index.html changes (a rebuild); the UI's own CSP allows no inline script.
 */
export function docsSite(dir: string | null, log: FastifyBaseLogger): DocsSite {
  // Only a directory can be served (@fastify/static refuses a file, and warns of a missing one).
  const root = dir !== null && statSync(dir, { throwIfNoEntry: false })?.isDirectory() ? dir : null;
  if (dir === null) log.info('documentation site off (ui.docsDir is null)');
  // Info, not a warning: the site is optional (ui.docsDir may name another build, or none).
  else if (!existsSync(join(dir, 'index.html'))) log.info({ docsDir: dir }, `documentation site not built: ${join(dir, 'index.html')} does not exist (build it with npm run docs:build, or set ui.docsDir / CARAPACE_DOCS_DIR); /docs/ says so`);
  else log.info({ docsDir: dir }, 'serving the documentation site at /docs/');

  let scanned: { key: string; headers: Promise<Record<string, string>> } | null = null;
  const headers = async (): Promise<Record<string, string>> => {
    if (dir === null) return UI_SECURITY_HEADERS;
    const info = await stat(join(dir, 'index.html')).catch(() => null);
    if (!info) return UI_SECURITY_HEADERS;
    const key = `${info.size}-${info.mtimeMs}`;
    if (scanned?.key !== key) {
      const hashes = inlineScriptHashes(dir).catch((err: unknown) => {
        log.warn({ err, docsDir: dir }, 'documentation site: its inline scripts could not be read; its pages may not run');
        return [];
      });
      scanned = { key, headers: hashes.then((h) => securityHeaders(["'self'", ...h])) };
    }
    return scanned.headers;
  };

  const noSite = (reply: FastifyReply) => reply.code(404).type('text/html; charset=utf-8').header('cache-control', NO_STORE).send(noSitePage(dir === null, root === null));

  return {
    dir,
    root,
    async decorate(reply) {
      void reply.headers(await headers());
      if (!reply.hasHeader('cache-control')) void reply.header('cache-control', NO_STORE);
    },
    async notFound(request, reply) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return notFoundHandler(request, reply);
      if (dir === null) return noSite(reply);
      // A missing asset stays a JSON 404, as the UI's do.
      const path = request.url.split('?')[0] ?? '';
      if (path.startsWith(`${DOCS_PREFIX}/assets/`)) return notFoundHandler(request, reply);
      if (!existsSync(join(dir, 'index.html'))) return noSite(reply);
      const page = await readFile(join(dir, '404.html')).catch(() => null);
      if (page === null) return notFoundHandler(request, reply);
      return reply.code(404).type('text/html; charset=utf-8').header('cache-control', NO_STORE).send(page);
    },
  };
}

/**
 * Serves the documentation site at `/docs/`: `/docs` redirected to `/docs/` (its pages' links
 * are from there), clean URLs (`/docs/guide/install` is guide/install.html, `/docs/guide/`
 * guide/index.html), hashed `assets/` immutable, the rest revalidated; a path with no file
 * answers `DocsSite.notFound`. In a scope of its own, before the UI, so that the UI's
 * fallback to its app never answers a `/docs` path.
 */
export async function registerDocs(app: FastifyInstance, site: DocsSite): Promise<void> {
  const { root } = site;
  await app.register(
    async (scope) => {
      scope.setNotFoundHandler((request, reply) => site.notFound(request, reply));
      if (root !== null) {
        await scope.register(fastifyStatic, {
          root,
          prefix: '/',
          // The reply's sendFile of this scope (the UI's is the root's).
          decorateReply: true,
          wildcard: true,
          index: ['index.html'],
          extensions: ['html'],
          redirect: false,
          serveDotFiles: false,
          dotfiles: 'ignore',
          cacheControl: false,
          setHeaders: (res, path) => {
            const inAssets = relative(root, path).startsWith(`assets${sep}`);
            res.setHeader('cache-control', inAssets ? IMMUTABLE : REVALIDATE);
          },
        });
      } else {
        // Every path of the site (the UI's `/*` must not take them): the page that says why there is none.
        scope.get('/*', { schema: { hide: true } }, (request, reply) => site.notFound(request, reply));
      }
      // `/docs` and `/docs/` (the router ignores a trailing slash): the first is sent to the second.
      scope.get('/', { schema: { hide: true } }, async (request, reply) => {
        const [path = '', query] = request.url.split('?');
        if (!path.endsWith('/')) return reply.redirect(`${DOCS_PREFIX}/${query === undefined ? '' : `?${query}`}`, 301);
        if (root === null || !existsSync(join(root, 'index.html'))) return site.notFound(request, reply);
        return reply.sendFile('index.html');
      });
    },
    { prefix: DOCS_PREFIX },
  );
}
