import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';

/** What a valid token says. */
export interface TokenClaims {
  readonly jti: string;
  readonly userId: string;
  readonly expiresAt: number;
}

/** How many verified tokens `verify` remembers. */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * Signs and verifies API tokens (JWT, HS256) with the service's own key.
 *
 * `verify` remembers the claims of the last tokens whose signature it checked: the key never
 * changes while the service runs, so the same string verifies the same way every time, and
 * checking an HS256 signature through WebCrypto (key import, an asynchronous job) cost about
 * a third of the CPU of a small authenticated request. Expiry is still checked on every
 * call, and revocation is the session lookup's, after this.
 */
export class TokenSigner {
  private readonly key: Uint8Array;
  private readonly verified = new Map<string, TokenClaims>();

  constructor(secret: Buffer) {
    this.key = new Uint8Array(secret);
  }

  /** A signed token for `userId`, valid until `expiresAt` (unix seconds). */
  sign(claims: TokenClaims, issuedAt: number): Promise<string> {
    return new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.userId)
      .setJti(claims.jti)
      .setIssuedAt(issuedAt)
      .setExpirationTime(claims.expiresAt)
      .setIssuer('carapace')
      .sign(this.key);
  }

  /** The claims of a token whose signature and expiry are good, else null. */
  async verify(token: string, nowS: number): Promise<TokenClaims | null> {
    const known = this.verified.get(token);
    if (known) return known.expiresAt > nowS ? known : null;
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: 'carapace',
        currentDate: new Date(nowS * 1000),
      });
      if (typeof payload.jti !== 'string' || typeof payload.sub !== 'string' || typeof payload.exp !== 'number') return null;
      const claims: TokenClaims = { jti: payload.jti, userId: payload.sub, expiresAt: payload.exp };
      if (this.verified.size >= VERIFIED_CACHE_SIZE) {
        const oldest = this.verified.keys().next();
        if (!oldest.done) this.verified.delete(oldest.value);
      }
      this.verified.set(token, claims);
      return claims;
    } catch (e) {
      if (e instanceof joseErrors.JOSEError) return null;
      throw e;
    }
  }
}
