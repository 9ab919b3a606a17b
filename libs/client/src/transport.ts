import type { AuthProvider } from './auth.js';
import { ServiceApiError, ServiceError } from './errors.js';

/** The `fetch` the client uses: the global one by default. */
export type FetchFunction = (url: string, init: RequestInit) => Promise<Response>;

/** Headers as `fetch` takes them: a `Headers`, an object or a list of pairs. */
export type HeadersLike = ConstructorParameters<typeof Headers>[0];

/** A value of a query parameter; `undefined` and `null` leave the parameter out. */
export type QueryValue = string | number | boolean | null | undefined;

/**
 * Extra options of every call, passed to the underlying `fetch`: headers (merged over the
 * client's), an `AbortSignal`, any other `RequestInit` field (`keepalive`, `dispatcher`, ...),
 * a `timeout` in milliseconds for this call (null: none) and extra query parameters.
 */
export interface RequestOptions extends Omit<RequestInit, 'method' | 'body' | 'headers' | 'signal'> {
  /** Headers added to the request; they win over the client's own. */
  headers?: HeadersLike;
  /** Aborts the call; the call then fails with a {@link ServiceError} whose cause is the abort reason. */
  signal?: AbortSignal | null;
  /** Time limit of this call in milliseconds (null: none); defaults to the client's `timeout`. */
  timeout?: number | null;
  /** Extra query parameters. */
  query?: Record<string, QueryValue>;
}

/** What the transport needs to know of a call. */
export interface CallSpec {
  /** The HTTP method. */
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path under the base URL, starting with `/v1/`. */
  readonly path: string;
  /** Query parameters of the call (the caller's `options.query` is added to them). */
  readonly query?: Record<string, QueryValue> | undefined;
  /** The body, sent as JSON. */
  readonly body?: unknown;
  /** Who authenticates the call: the token provider or the no-op one. */
  readonly auth: AuthProvider;
  /** Whether a refused credential may be renewed and the call sent again (not for logout). */
  readonly retry?: boolean;
  /** The caller's extra options. */
  readonly options?: RequestOptions | undefined;
}

/** How the transport is set up. */
export interface TransportSettings {
  /** Base URL without `/v1`. */
  readonly url: string;
  /** Default time limit in milliseconds, or null. */
  readonly timeout: number | null;
  /** The `fetch` to send with. */
  readonly fetch: FetchFunction;
  /** Resolves the dispatcher carrying the TLS options (Node only), or undefined. */
  readonly dispatcher: () => Promise<unknown>;
}

/** Turns a base URL into `scheme://host[:port][/prefix]` without a trailing slash. */
export function normaliseBaseUrl(url: string): string {
  let base = url.trim().replace(/\/+$/, '');
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(base)) base = `http://${base}`;
  return base.replace(/\/v1$/, '');
}

/** The codes of an error, its causes' included. */
function errorCodes(err: unknown): string[] {
  const codes: string[] = [];
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
  }
  return codes;
}

/**
 * A plain answer to what OpenSSL says in its own words: an `https://` address whose server
 * speaks plain HTTP ("wrong version number").
 */
function plainHttpHint(err: unknown, baseUrl: string): string | null {
  const codes = errorCodes(err);
  if (!baseUrl.startsWith('https://') || !(codes.includes('ERR_SSL_WRONG_VERSION_NUMBER') || codes.includes('ERR_SSL_PACKET_LENGTH_TOO_LONG'))) return null;
  return `the server at ${baseUrl} does not speak TLS: use ${baseUrl.replace(/^https:/, 'http:')}`;
}

function timeoutError(ms: number): Error {
  return new DOMException(`The call took longer than ${ms} ms.`, 'TimeoutError');
}

/** A call under way: its signal, and how to stop its timer and detach from the caller's signal. */
class Deadline {
  readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onAbort: () => void;

  constructor(
    readonly timeout: number | null,
    private readonly external: AbortSignal | null | undefined,
    private readonly baseUrl: string,
  ) {
    this.onAbort = () => this.controller.abort(external?.reason);
    if (external?.aborted) this.controller.abort(external.reason);
    else external?.addEventListener('abort', this.onAbort, { once: true });
    if (timeout !== null) this.timer = setTimeout(() => this.controller.abort(timeoutError(timeout)), timeout);
  }

  /** Stops the timer (the call is answered, or its body is to be streamed without limit). */
  stopTimer(): void {
    clearTimeout(this.timer);
  }

  /** Stops the timer and detaches from the caller's signal. */
  done(): void {
    this.stopTimer();
    this.external?.removeEventListener('abort', this.onAbort);
  }

  /** The error to raise for `err`, which happened while the call was under way. */
  wrap(err: unknown, what: string): ServiceError {
    if (err instanceof ServiceError) return err;
    const signal = this.controller.signal;
    if (signal.aborted) {
      const reason: unknown = signal.reason;
      if (reason instanceof DOMException && reason.name === 'TimeoutError') {
        return new ServiceError(`${what} timed out after ${this.timeout} ms`, { cause: reason });
      }
      return new ServiceError(`${what} was aborted`, { cause: reason });
    }
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    const detail = plainHttpHint(err, this.baseUrl) ?? (cause instanceof Error ? cause.message : String(cause));
    return new ServiceError(`${what} failed: ${detail}`, { cause: err });
  }
}

/**
 * Sends calls to the API with `fetch`: builds the URL, injects the credentials, applies the
 * time limit, parses the answer, and raises {@link ServiceError} or {@link ServiceApiError}.
 */
export class Transport {
  /** The base URL, normalised (see {@link normaliseBaseUrl}). */
  readonly baseUrl: string;

  /** @param settings - See {@link TransportSettings}. */
  constructor(private readonly settings: TransportSettings) {
    this.baseUrl = normaliseBaseUrl(settings.url);
  }

  /** The full URL of a path with its query. */
  url(path: string, query?: Record<string, QueryValue>): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) params.append(key, String(value));
    }
    const search = params.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ''}`;
  }

  /** Sends a call and returns its answer parsed as JSON. */
  async json<T>(spec: CallSpec): Promise<T> {
    const text = await this.text(spec, 'application/json');
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new ServiceError(`the answer of ${spec.method} ${spec.path} is not JSON: ${JSON.stringify(text.slice(0, 80))}`, { cause: err });
    }
  }

  /** Sends a call and returns the text of its answer. */
  async text(spec: CallSpec, accept = 'text/plain'): Promise<string> {
    const deadline = new Deadline(this.timeoutOf(spec), spec.options?.signal, this.baseUrl);
    const what = `${spec.method} ${spec.path}`;
    try {
      const response = await this.send(spec, accept, deadline);
      return await response.text();
    } catch (err) {
      throw deadline.wrap(err, what);
    } finally {
      deadline.done();
    }
  }

  /**
   * Sends a call and returns the response once its headers arrived, its body unread: the
   * time limit covers only the wait for the headers.
   */
  async stream(spec: CallSpec, accept = 'text/plain'): Promise<{ response: Response; done: () => void; wrap: (err: unknown) => ServiceError }> {
    const deadline = new Deadline(this.timeoutOf(spec), spec.options?.signal, this.baseUrl);
    const what = `${spec.method} ${spec.path}`;
    try {
      const response = await this.send(spec, accept, deadline);
      deadline.stopTimer();
      return { response, done: () => deadline.done(), wrap: (err) => deadline.wrap(err, what) };
    } catch (err) {
      deadline.done();
      throw deadline.wrap(err, what);
    }
  }

  private timeoutOf(spec: CallSpec): number | null {
    const own = spec.options?.timeout;
    return own === undefined ? this.settings.timeout : own;
  }

  /** Sends the request (twice at most, when a stored token was refused); raises on error answers. */
  private async send(spec: CallSpec, accept: string, deadline: Deadline): Promise<Response> {
    const { headers: extraHeaders, signal: _signal, timeout: _timeout, query, ...init } = spec.options ?? {};
    const url = this.url(spec.path, { ...spec.query, ...query });
    const dispatcher = await this.settings.dispatcher();
    for (let attempt = 0; ; attempt++) {
      const headers = new Headers({ accept });
      if (spec.body !== undefined) headers.set('content-type', 'application/json');
      const credential = await spec.auth.authorize(headers);
      new Headers(extraHeaders).forEach((value, key) => headers.set(key, value));
      const request: RequestInit = {
        ...init,
        method: spec.method,
        headers,
        signal: deadline.controller.signal,
        ...(spec.body !== undefined ? { body: JSON.stringify(spec.body) } : {}),
      };
      if (dispatcher !== undefined) (request as { dispatcher?: unknown }).dispatcher = dispatcher;
      const response = await this.settings.fetch(url, request);
      if (response.ok) return response;
      const body = await response.text();
      if (response.status === 401 && credential !== null && attempt === 0 && spec.retry !== false && spec.auth.refused(credential)) continue;
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {
        // Not JSON (a proxy's page, say): the error keeps the text.
      }
      throw new ServiceApiError(response, body, json);
    }
  }
}
