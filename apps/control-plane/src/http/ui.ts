import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
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
export const UI_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
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

/** Whether a path belongs to the API (`/v1` and below), which never answers with the UI. */
export function isApiPath(url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return path === '/v1' || path.startsWith('/v1/');
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
      if ((request.method !== 'GET' && request.method !== 'HEAD') || isApiPath(path) || path.startsWith('/assets/')) return notFoundHandler(request, reply);
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
    allowedPath: (pathName) => !isApiPath(pathName) && !pathName.endsWith('/'),
    setHeaders: (res, path) => {
      const inAssets = relative(site.dir, path).startsWith(`assets${sep}`);
      res.setHeader('cache-control', inAssets ? IMMUTABLE : REVALIDATE);
    },
  });
}
