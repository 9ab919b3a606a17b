import type { Info, Token } from '@carapace/models';
import { noAuth, TokenAuth, type AuthProvider } from './auth.js';
import { NotLoggedInError, ServiceApiError } from './errors.js';
import { closeDispatcher, createDispatcher, needsDispatcher, type TlsSettings } from '#tls';
import { Transport, type CallSpec, type QueryValue, type RequestOptions } from './transport.js';
import { listQuery, type ClientOptions, type IterParams, type ListParams, type Message, type Page } from './types.js';

/** Path segment of an id, escaped. */
export function segment(value: string | number): string {
  return encodeURIComponent(String(value));
}

/**
 * The base of {@link Client}: construction, the transport and the authentication provider,
 * login and logout, and the calls that need no login (information, password reset).
 */
export class ClientCore {
  /** The authentication provider: holds the token and logs in when needed. */
  readonly auth: TokenAuth;
  /** The no-op authenticator, for calls that need no login. */
  readonly noAuth: AuthProvider = noAuth;
  /** Sends the calls. */
  protected readonly transport: Transport;
  private readonly credentials: { login: string; password: string | null };
  private readonly tls: TlsSettings;
  private dispatcher: Promise<unknown> | null = null;

  /**
   * Makes a client. Construction does not log in: the first call that needs a token does,
   * once for all the calls made at the same time.
   *
   * @param options - See {@link ClientOptions}.
   */
  constructor(options: ClientOptions) {
    this.credentials = { login: options.login, password: options.password ?? null };
    this.tls = { verify: options.verify ?? true, certificateFile: options.certificateFile ?? null, caFile: options.caFile ?? null };
    const fetchFn = options.fetch ?? ((url: string, init: RequestInit) => globalThis.fetch(url, init));
    this.transport = new Transport({
      url: options.url,
      timeout: options.timeout ?? null,
      fetch: fetchFn,
      dispatcher: () => this.getDispatcher(),
    });
    this.auth = new TokenAuth(options.password === undefined ? null : () => this.requestToken(), options.token ?? null);
  }

  /** The base URL in use (without `/v1`). */
  get url(): string {
    return this.transport.baseUrl;
  }

  /** The token in use, or null when not logged in. */
  get token(): string | null {
    return this.auth.token;
  }

  /**
   * Logs in now (`POST /v1/auth/`) and keeps the token for the calls that follow. Not needed
   * before other calls: they log in by themselves.
   *
   * @returns The token model; its `id` is the token, `data.expires_at` its expiry.
   * @throws ServiceApiError 401 on a wrong login or password, 429 after too many failures.
   */
  async login(options?: RequestOptions): Promise<Token> {
    const token = await this.requestToken(options);
    this.auth.set(token);
    return token;
  }

  /**
   * Logs out (`DELETE /v1/auth/`): the server revokes the token and the client forgets it
   * (also when the call fails). Without a token, does nothing. A token the server already
   * refuses counts as logged out. A later call logs in again.
   *
   * @returns `{}`.
   */
  async logout(options?: RequestOptions): Promise<Record<string, never>> {
    const token = this.auth.token;
    if (token === null) return {};
    try {
      return await this.transport.json<Record<string, never>>({ method: 'DELETE', path: TokenAuth.AUTH_PATH, auth: this.auth, retry: false, options });
    } catch (err) {
      if (err instanceof ServiceApiError && err.code === 401) return {};
      throw err;
    } finally {
      this.auth.refused(token);
    }
  }

  /** The service information (`GET /v1/info/`): version and time. Needs no login; the health check. */
  getInfo(options?: RequestOptions): Promise<Info> {
    return this.call('GET', '/v1/info/', { auth: this.noAuth, options });
  }

  /**
   * Asks for a password reset (`POST /v1/password_reset/`): the user gets an e-mail with a
   * reset token. The answer is the same whether or not the login exists. Needs no login.
   */
  requestPasswordReset(login: string, options?: RequestOptions): Promise<Message> {
    return this.call('POST', '/v1/password_reset/', { body: { login }, auth: this.noAuth, options });
  }

  /** Checks a reset token without using it (`GET /v1/password_reset/{token}/`); 404 when unknown or expired. */
  peekPasswordReset(resetToken: string, options?: RequestOptions): Promise<Message> {
    return this.call('GET', `/v1/password_reset/${segment(resetToken)}/`, { auth: this.noAuth, options });
  }

  /** Sets a new password with a reset token (`POST /v1/password_reset/{token}/`); the token works once. */
  resetPassword(resetToken: string, newPassword: string, options?: RequestOptions): Promise<Message> {
    return this.call('POST', `/v1/password_reset/${segment(resetToken)}/`, { body: { password: newPassword }, auth: this.noAuth, options });
  }

  /** Releases what the client holds open (the TLS dispatcher). The client stays usable. */
  async close(): Promise<void> {
    const dispatcher = this.dispatcher;
    this.dispatcher = null;
    if (dispatcher) await closeDispatcher(await dispatcher.catch(() => null));
  }

  /** Sends a call that answers JSON; authenticated with the token unless `auth` says otherwise. */
  protected call<T>(
    method: CallSpec['method'],
    path: string,
    spec: { body?: unknown; query?: Record<string, QueryValue>; auth?: AuthProvider; options?: RequestOptions | undefined } = {},
  ): Promise<T> {
    return this.transport.json<T>({ method, path, auth: this.auth, ...spec });
  }

  /** Sends a list call. */
  protected list<T>(path: string, params: ListParams | undefined, options: RequestOptions | undefined): Promise<Page<T>> {
    return this.call('GET', path, { query: listQuery(params), options });
  }

  /** Iterates over every model of a list, page by page (100 a page unless `perPage` says otherwise). */
  protected async *iterate<T>(path: string, params: IterParams = {}, options?: RequestOptions): AsyncGenerator<T, void, undefined> {
    const perPage = params.perPage ?? 100;
    for (let page = 1; ; page++) {
      const result = await this.list<T>(path, { ...params, page, perPage }, options);
      yield* result.items;
      if (result.items.length === 0 || page * result.per_page >= result.total) return;
    }
  }

  private requestToken(options?: RequestOptions): Promise<Token> {
    if (this.credentials.password === null) return Promise.reject(new NotLoggedInError('no password to log in with'));
    return this.transport.json<Token>({
      method: 'POST',
      path: TokenAuth.AUTH_PATH,
      body: { username: this.credentials.login, password: this.credentials.password },
      auth: this.noAuth,
      options,
    });
  }

  private getDispatcher(): Promise<unknown> {
    if (!needsDispatcher(this.tls)) return Promise.resolve(undefined);
    this.dispatcher ??= createDispatcher(this.tls);
    const pending = this.dispatcher;
    // A failure (an unreadable certificate file) is reported by this call and retried by the next.
    pending.catch(() => {
      if (this.dispatcher === pending) this.dispatcher = null;
    });
    return pending;
  }
}
