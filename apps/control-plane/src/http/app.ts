import fastifySwagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type HTTPMethods } from 'fastify';
import { badRequest, invalidJson } from '../errors.js';
import { AccessLog, sameLogger } from './access-log.js';
import { registerAuthHook } from './auth.hook.js';
import type { AppServices } from '../app-services.js';
import { clientErrorHandler, errorHandler, methodNotAllowedHandler, notFoundHandler } from './errors.js';
import { docsSite, isApiPath, isDocsPath, registerDocs, registerUi, uiSite } from './ui.js';
import { validatorCompiler } from './validator.js';
import { accountsRoutes } from './routes/accounts.routes.js';
import { authRoutes } from './routes/auth.routes.js';
import { catalogRoutes } from './routes/catalog.routes.js';
import { infoRoutes } from './routes/info.routes.js';
import { passwordResetRoutes } from './routes/password-reset.routes.js';
import { infrastructureRoutes } from './routes/infrastructure.routes.js';
import { executionRoutes } from './routes/execution.routes.js';
import { cinderRoutes } from './routes/cinder.routes.js';
import { clusterStatusRoutes } from './routes/cluster-status.routes.js';
import { runnerRoutes } from './routes/runner.routes.js';
import { operationsRoutes } from './routes/operations.routes.js';

const METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * The most the request line and headers may hold (Node's default is 16 KiB): a list's
 * `filter` of 16,384 characters can take three times as much once URL-encoded. Beyond it
 * Node's parser answers 431, with the contract's body (`clientErrorHandler`).
 */
export const MAX_HEADER_BYTES = 64 * 1024;

/** What `buildApp` needs. */
export interface AppDeps {
  readonly services: AppServices;
  readonly logger: FastifyBaseLogger;
}

/**
 * Builds the HTTP API: a ready Fastify instance that does not listen (api-v1 §1 and §2:
 * trailing slash optional, bodies parsed as JSON whatever their type, exact
 * `application/json`, no-store caching, one error envelope, 404 and 405), and beside it the
 * documentation site (`ui.docsDir`) at `/docs/` and the web UI (`ui.dir`) at every other
 * path, when built.
 */
export async function buildApp({ services, logger }: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger,
    logController: new AccessLog(),
    childLoggerFactory: sameLogger,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 256 },
    bodyLimit: services.config.http.bodyLimitBytes,
    trustProxy: services.config.http.trustProxy,
    return503OnClosing: true,
    http: { maxHeaderSize: MAX_HEADER_BYTES },
    clientErrorHandler,
    frameworkErrors: (err, request, reply) => {
      void errorHandler(err, request, reply);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler(errorHandler);
  const ui = uiSite(services.config.ui.dir, logger);
  const docs = docsSite(services.config.ui.docsDir, logger);
  app.setNotFoundHandler(ui ? (request, reply) => ui.notFound(request, reply) : notFoundHandler);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch {
      done(invalidJson('The request body is not valid JSON.'), undefined);
    }
  });

  // A callback hook: only an answer of the documentation site costs a promise (its CSP may need a scan of the site).
  app.addHook('onSend', (request, reply, payload, done) => {
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('application/json')) reply.header('content-type', 'application/json');
    if (isDocsPath(request.url)) {
      docs.decorate(reply).then(
        () => done(null, payload),
        (err: unknown) => done(err as Error),
      );
      return;
    }
    if (ui && !isApiPath(request.url)) ui.decorate(reply);
    else reply.header('cache-control', 'private, no-store, no-cache');
    done(null, payload);
  });

  // No stored text may hold a NUL character (PostgreSQL's text and JSON cannot): refused in
  // the path, the query and the body alike, whichever database holds the tables. The path
  // and the query are parsed from the URL, where a NUL can only come as "%00" (Node's parser
  // refuses a raw one; an injected request may hold it raw): a URL holding neither is not
  // walked, so a GET pays one scan of its URL.
  app.addHook('preValidation', (request, _reply, done) => {
    const url = request.url;
    const urlMayHold = url.includes('%00') || url.includes('\u0000');
    if ((urlMayHold && (holdsNul(request.params) || holdsNul(request.query))) || (request.body !== undefined && holdsNul(request.body))) {
      done(badRequest('The request holds a NUL character (U+0000), which no field may hold.'));
      return;
    }
    done();
  });

  // Per route pattern, never per URL: the labels stay few whatever the paths asked for.
  const { metrics } = services.operations;
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    done();
  });

  const routes = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const known = routes.get(route.url) ?? new Set<string>();
    for (const m of methods) known.add(m);
    routes.set(route.url, known);
  });

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Carapace API', version: services.version, description: 'Deploys and operates Ceph clusters.' },
      components: { securitySchemes: { token: { type: 'apiKey', in: 'header', name: 'Authorization' } } },
      security: [{ token: [] }],
    },
  });
  registerAuthHook(app, services);
  const opts = { services };
  await app.register(infoRoutes, opts);
  await app.register(authRoutes, opts);
  await app.register(passwordResetRoutes, opts);
  await app.register(catalogRoutes, opts);
  await app.register(accountsRoutes, opts);
  await app.register(infrastructureRoutes, opts);
  await app.register(executionRoutes, opts);
  await app.register(cinderRoutes, opts);
  await app.register(clusterStatusRoutes, opts);
  await app.register(runnerRoutes, opts);
  await app.register(operationsRoutes, opts);
  app.get('/v1/openapi.json', { config: { auth: 'none' }, schema: { hide: true } }, () => app.swagger());

  for (const [url, known] of [...routes]) {
    const missing = METHODS.filter((m) => !known.has(m));
    if (missing.length) app.route({ method: missing, url, config: { auth: 'none' }, schema: { hide: true }, handler: methodNotAllowedHandler });
  }
  // After the 405 routes (a /docs path is no API route) and before the UI, whose fallback to its app must not take /docs.
  await registerDocs(app, docs);
  if (ui) await registerUi(app, ui);
  await app.ready();
  return app;
}

/** Whether a parsed request part holds a NUL character in any string or key (walked without recursion: bodies may nest deep). */
function holdsNul(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return true;
    } else if (Array.isArray(value)) {
      stack.push(...(value as unknown[]));
    } else if (typeof value === 'object' && value !== null) {
      for (const [k, v] of Object.entries(value)) {
        if (k.includes('\u0000')) return true;
        stack.push(v);
      }
    }
  }
  return false;
}
