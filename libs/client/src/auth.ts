import type { Token } from '@carapace/models';
import { NotLoggedInError } from './errors.js';

/**
 * Authenticates the requests of a client (contract, "Client library contract"): adds the
 * credentials to a request's headers, and hears when the server refused them.
 */
export interface AuthProvider {
  /**
   * Adds the credentials to `headers`, logging in first when needed.
   *
   * @returns The credential sent (to hand back to {@link AuthProvider.refused}), or null
   *   when none was sent.
   */
  authorize(headers: Headers): Promise<string | null>;
  /**
   * Tells that the server refused `credential` (HTTP 401).
   *
   * @returns True when the request may be sent once more with fresh credentials.
   */
  refused(credential: string): boolean;
  /** Forgets the known token, so that the next request logs in again. */
  reset(): void;
}

/** Logs in: posts the login and password to {@link TokenAuth.AUTH_PATH} and returns the token model. */
export type LoginFunction = () => Promise<Token>;

/**
 * The authentication provider of the API: stores the token model, sends the token as
 * `Authorization: <token>` with every request, and logs in transparently when it knows no
 * token. Concurrent requests share one login. When the server refuses the stored token
 * (expired or revoked), the token is forgotten and the request is sent once more, which logs
 * in again (still only once for all the requests that were refused together).
 *
 * Without a login function (a client given only a token from an earlier login), a refused
 * token is not retried: the call fails with the server's 401.
 */
export class TokenAuth implements AuthProvider {
  /** The authentication path: `POST` logs in, `DELETE` logs out. */
  static readonly AUTH_PATH = '/v1/auth/';

  private current: Token | null = null;
  private given: string | null;
  private pending: Promise<Token> | null = null;

  /**
   * @param doLogin - Performs the login request (without authentication), or null when the
   *   provider cannot log in (it then only uses `token`).
   * @param token - A token from an earlier login, used until the server refuses it.
   */
  constructor(
    private readonly doLogin: LoginFunction | null,
    token: string | null = null,
  ) {
    this.given = token;
  }

  /** The token in use, or null before the first login and after a reset. */
  get token(): string | null {
    return this.current?.id ?? this.given;
  }

  /** The token model of the last login, or null. */
  get tokenModel(): Token | null {
    return this.current;
  }

  /** Stores a token model (after an explicit login). */
  set(token: Token | null): void {
    this.current = token;
    this.given = null;
  }

  /** Logs in unless a login is under way already; every caller gets the same token. */
  login(): Promise<Token> {
    const doLogin = this.doLogin;
    if (!doLogin) return Promise.reject(new NotLoggedInError('not logged in, and no password to log in with'));
    this.pending ??= doLogin()
      .then((token) => {
        this.current = token;
        return token;
      })
      .finally(() => {
        this.pending = null;
      });
    return this.pending;
  }

  /** {@inheritDoc AuthProvider.authorize} */
  async authorize(headers: Headers): Promise<string | null> {
    const token = this.token ?? (await this.login()).id;
    headers.set('authorization', token);
    return token;
  }

  /** {@inheritDoc AuthProvider.refused} */
  refused(credential: string): boolean {
    if (this.current?.id === credential) this.current = null;
    if (this.given === credential) this.given = null;
    return this.doLogin !== null;
  }

  /** {@inheritDoc AuthProvider.reset} */
  reset(): void {
    this.current = null;
    this.given = null;
  }
}

/** The no-op authenticator: for the calls that need no login (information, password reset, login itself). */
export const noAuth: AuthProvider = {
  authorize: () => Promise.resolve(null),
  refused: () => false,
  reset: () => undefined,
};
