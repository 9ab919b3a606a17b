import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { requestFields } from './access-log.js';

/** The name of a status in the error body: `Not Found` → `NotFound`. */
function statusName(status: number): string {
  return (STATUS_CODES[status] ?? 'Error').replace(/[^A-Za-z]/g, '');
}

// A serializer of its own keeps Fastify from appending a charset, also on the framework
// error path that skips the onSend hooks.
function send(reply: FastifyReply, status: number, error: string, description: string, headers: Record<string, string> = {}) {
  return reply
    .code(status)
    .headers(headers)
    .header('content-type', 'application/json')
    .serializer(JSON.stringify)
    .send({ code: status, error, description, message: description });
}

function describeValidation(err: FastifyError): string {
  const first = err.validation?.[0];
  const where = err.validationContext ?? 'request';
  if (!first) return `Invalid ${where}.`;
  const path = (first.instancePath || '').replace(/^\//, '').replace(/\//g, '.');
  return `Invalid ${where}${path ? ` at "${path}"` : ''}: ${first.message ?? 'invalid value'}.`;
}

/**
 * The one error handler (api-v1 §2): domain errors pass with their status and name,
 * validation errors become 400 (404 for a malformed id in the path), Fastify's own 4xx pass
 * with their text, and anything else is a bug: logged with the request, masked as a 500.
 */
export function errorHandler(err: FastifyError | ApiError, request: FastifyRequest, reply: FastifyReply) {
  if (err instanceof ApiError) return send(reply, err.statusCode, err.errorName, err.message, err.headers);
  if (err.validation) {
    if (err.validationContext === 'params') return send(reply, 404, 'NotFound', 'Not found.');
    const name = err.validationContext === 'body' ? 'InvalidJSONError' : 'BadRequest';
    return send(reply, 400, name, describeValidation(err));
  }
  switch (err.code) {
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return send(reply, 404, 'NotFound', 'Not found.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return send(reply, 413, 'PayloadTooLarge', 'The request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return send(reply, 400, 'BadRequest', err.message);
  }
  const status = typeof err.statusCode === 'number' ? err.statusCode : 500;
  if (status >= 400 && status < 500) return send(reply, status, statusName(status), err.message);
  request.log.error({ reqId: request.id, err, ...requestFields(request) }, 'request failed');
  return send(reply, 500, 'InternalServerError', 'Internal server error: the details are in the service log.');
}

/** 404 for any unknown route. */
export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return send(reply, 404, 'NotFound', `No such resource: ${request.method} ${request.url.split('?')[0]?.slice(0, 200) ?? ''}.`);
}

/** 405 for a known route with another method. */
export function methodNotAllowedHandler(request: FastifyRequest, reply: FastifyReply) {
  return send(reply, 405, 'MethodNotAllowed', `Method ${request.method} is not allowed here.`);
}

/** The error of Node's HTTP parser or server for a request Fastify never sees. */
function clientErrorStatus(code: string | undefined): { status: number; description: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, description: 'The request line and headers are too large (URL and query string included).' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return { status: 408, description: 'The request took too long to arrive.' };
    default:
      return { status: 400, description: 'The request is not valid HTTP.' };
  }
}

/**
 * Answers what Node's HTTP parser refuses before Fastify sees a request (headers or URL over
 * the size limit: 431; a malformed request: 400; a request too slow to arrive: 408) with
 * the contract's error body, exactly `application/json`, then closes the connection.
 * Installed as Fastify's `clientErrorHandler` (the server's `clientError` event).
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const { status, description } = clientErrorStatus(err.code);
  this.log.debug({ code: err.code, status }, 'client error');
  // Nothing more can be written once a response on this connection has begun.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const body = JSON.stringify({ code: status, error: statusName(status), description, message: description });
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
        'Content-Type: application/json\r\n' +
        'Cache-Control: private, no-store, no-cache\r\n' +
        'Connection: close\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
