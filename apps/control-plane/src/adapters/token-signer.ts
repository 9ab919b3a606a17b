import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';

/** What a valid token says. */
export interface TokenClaims {
  readonly jti: string;
  readonly userId: string;
  readonly expiresAt: number;
}

/**
 * Signs and verifies API tokens (JWT, HS256) with the service's own key. Repeated requests
 * with the same token do not come here: `AuthService` remembers their principal.
 */
export class TokenSigner {
  private readonly key: Uint8Array;

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
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: 'carapace',
        currentDate: new Date(nowS * 1000),
      });
      if (typeof payload.jti !== 'string' || typeof payload.sub !== 'string' || typeof payload.exp !== 'number') return null;
      return { jti: payload.jti, userId: payload.sub, expiresAt: payload.exp };
    } catch (e) {
      if (e instanceof joseErrors.JOSEError) return null;
      throw e;
    }
  }
}
