import { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * How the HTTP server logs requests: one access line per request, written when the response
 * is done ("request completed", at info, with `reqId`, `method`, `url`, `remoteAddress`,
 * `statusCode`, `responseTime` in ms and the authenticated `userId`), instead of Fastify's
 * two lines ("incoming request" and "request completed"). The fields are flat: Fastify's
 * `req` and `res` serializers would log the URL as it came.
 *
 * Requests get no child logger of their own (`request.log` is the service logger: a child
 * per request costs more than the request's own log line when the level is above info);
 * instead every line this writes about a request carries its `reqId`, as does the error
 * handler's.
 *
 * The URL of a route whose config has `logUrl: false` (the password reset routes: the
 * secret token is in the path) is logged as the route's pattern.
 */
export class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const log = request.log;
    if (error) {
      log.error({ reqId: request.id, ...requestFields(request), statusCode: reply.statusCode, err: error, responseTime: reply.elapsedTime }, 'request errored');
      return;
    }
    if (!infoEnabled(log)) return;
    log.info(
      {
        reqId: request.id,
        ...requestFields(request),
        statusCode: reply.statusCode,
        responseTime: Math.round(reply.elapsedTime * 100) / 100,
        userId: request.principal?.user.id,
      },
      'request completed',
    );
  }

  override defaultErrorLog(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    if (reply.statusCode >= 500) request.log.error({ reqId: request.id, ...requestFields(request), statusCode: reply.statusCode, err: error }, error.message);
    else request.log.info({ reqId: request.id, statusCode: reply.statusCode, err: error }, error.message);
  }

  override streamError(error: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply): void {
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE') request.log.info({ reqId: request.id, statusCode: reply.statusCode }, 'stream closed prematurely');
    else request.log.warn({ reqId: request.id, err: error }, 'response terminated with an error with headers already sent');
  }

  override routeNotFound(request: FastifyRequest): void {
    request.log.info({ reqId: request.id, ...requestFields(request) }, 'route not found');
  }

  override writeHeadError(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    request.log.warn({ reqId: request.id, ...requestFields(request), statusCode: reply.statusCode, err: error }, error.message);
  }

  override serializerError(error: Error, request: FastifyRequest, _reply: FastifyReply, metadata: { statusCode: number }): void {
    request.log.error({ reqId: request.id, err: error, statusCode: metadata.statusCode }, 'The serializer for the given status code failed');
  }

  override serviceUnavailable(logger: FastifyBaseLogger, _server: FastifyInstance): void {
    logger.info({ statusCode: 503 }, 'request aborted - refusing to accept new requests as server is closing');
  }
}

/** Whether the logger writes info lines (pino's check; assumed when the logger has none). */
function infoEnabled(log: FastifyBaseLogger): boolean {
  const check = (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
  return check ? check.call(log, 'info') : true;
}

/** What a log line says of a request: method, URL (the route's pattern when `logUrl: false`) and client address. */
export function requestFields(request: FastifyRequest): { method: string; url: string; remoteAddress: string } {
  const route = request.routeOptions;
  const url = route.config.logUrl === false && route.url ? route.url : request.url;
  return { method: request.method, url, remoteAddress: request.ip };
}

/** The child logger of each request: none, the service logger itself (see `AccessLog`). */
export function sameLogger(logger: FastifyBaseLogger): FastifyBaseLogger {
  return logger;
}
