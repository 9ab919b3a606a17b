import { randomUUID } from 'node:crypto';
import type { RoleData, Token, UserData } from '@carapace/models';
import type { AuthRepository } from '../db/auth.repository.js';
import type { Stored } from '../db/versioned.repository.js';
import { tooManyRequests, unauthorized } from '../errors.js';
import { nowS, type Clock } from '../ports.js';
import { DUMMY_HASH, verifyPassword } from './passwords.js';
import { permissionSets, type Principal } from './principal.js';
import type { Throttle } from './throttle.js';
import type { TokenSigner } from './token-signer.js';
import type { UserService } from './user.service.js';

/** Login, logout and the authentication of each request (api-v1 §3). */
export class AuthService {
  constructor(
    private readonly repo: AuthRepository,
    private readonly users: UserService,
    private readonly signer: TokenSigner,
    private readonly clock: Clock,
    private readonly tokenTtlS: number,
    private readonly throttles: { perUser: Throttle; perAddress: Throttle },
  ) {}

  /** Checks login and password and issues a token model. Failures are throttled (429). */
  async login(username: string, password: string, address: string): Promise<Token> {
    const nowMs = this.clock.nowMs();
    const userKey = `login:${username.toLowerCase()}`;
    const addressKey = `login:${address}`;
    const wait = Math.max(this.throttles.perUser.retryAfterMs(userKey, nowMs), this.throttles.perAddress.retryAfterMs(addressKey, nowMs));
    if (wait > 0) throw tooManyRequests('Too many failed logins: try again later.', wait / 1000);

    const user = this.users.byLogin(username);
    const hash = (user && this.repo.passwordHash(user.id)) ?? (await DUMMY_HASH);
    const ok = await verifyPassword(password, hash);
    if (!user || !ok) {
      this.throttles.perUser.hit(userKey, nowMs);
      this.throttles.perAddress.hit(addressKey, nowMs);
      throw unauthorized('Invalid login or password.');
    }
    this.throttles.perUser.clear(userKey);

    const now = nowS(this.clock);
    const expiresAt = now + this.tokenTtlS;
    const jti = randomUUID();
    this.repo.addToken(jti, user.id, now, expiresAt);
    const token = await this.signer.sign({ jti, userId: user.id, expiresAt }, now);
    return {
      id: token,
      model: 'token',
      version: 1,
      time_updated: now,
      time_deleted: 0,
      initiator_id: user.id,
      data: { user: { ...user, model: 'user' }, expires_at: expiresAt },
    };
  }

  /**
   * The principal behind an `Authorization` header (`<token>` or `Bearer <token>`): signature,
   * expiry, revocation, and the user and role as stored now. Throws 401 otherwise.
   */
  async authenticate(header: string | undefined): Promise<Principal> {
    if (!header) throw unauthorized('This call needs a token: log in with POST /v1/auth/.');
    const token = header.startsWith('Bearer ') ? header.slice(7).trim() : header.trim();
    const now = nowS(this.clock);
    const claims = token.length < 4096 ? await this.signer.verify(token, now) : null;
    if (!claims) throw unauthorized('The token is invalid or expired.');
    const row = this.repo.session(claims.jti, now);
    if (!row || row.userDeleted !== 0 || row.userId !== claims.userId) throw unauthorized('The token is revoked or expired.');
    const user = JSON.parse(row.userRow) as Stored<UserData>;
    const role = row.roleData ? (JSON.parse(row.roleData) as RoleData) : undefined;
    const sets = permissionSets(role?.permissions);
    return { user, api: sets.api, playbook: sets.playbook, jti: claims.jti, expiresAt: claims.expiresAt };
  }

  /** Revokes the caller's token. */
  logout(principal: Principal): void {
    this.repo.revokeToken(principal.jti, nowS(this.clock));
  }
}
