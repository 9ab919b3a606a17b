import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RoleData, Token, UserData } from '@carapace/models';
import type { AuthRepository } from '../db/auth.repository.js';
import type { Stored } from '../domain/list-types.js';
import { tooManyRequests, unauthorized } from '../errors.js';
import { nowS, type Clock, type PasswordHasher } from '../ports.js';
import { credentialOf } from './authorization-header.js';
import { permissionSets, type Principal } from './principal.js';
import type { Backoff, Limiter } from './throttle.js';
import type { TokenSigner } from '../adapters/token-signer.js';
import type { UserService } from './user.service.js';

/** How many authenticated principals `AuthService` remembers. */
const PRINCIPAL_CACHE_SIZE = 10_000;

/**
 * How failed logins are throttled. Each failure counts against its login *and* the address
 * it came from, so that an attacker cannot lock a named account out for everyone:
 * `perLoginAndAddress` refuses (429) a login from an address that failed it too often,
 * `perAddress` an address that failed too often whatever the logins, and `perLogin` holds
 * every attempt at a login that failed from anywhere for a delay growing with its failures
 * and capped at a few seconds: a delay, never a refusal.
 */
export interface LoginThrottles {
  readonly perLoginAndAddress: Limiter;
  readonly perAddress: Limiter;
  readonly perLogin: Backoff;
}

/** A principal remembered for an `Authorization` header, until `expiresAt` (unix seconds). */
interface CachedPrincipal {
  readonly principal: Principal;
  readonly expiresAt: number;
}

/**
 * Login, logout and the authentication of each request (api-v1 §3).
 *
 * The principal of a header (its session, user and role permissions) is remembered, so that
 * a client calling again with the same token costs no signature check, session query nor
 * parse: only the read of `AuthRepository.sessionsVersion` (in memory on SQLite, one small
 * query on PostgreSQL). The cache is exact: it holds while `sessionsVersion` stays, which
 * every write that can change a stored session changes (logout, revocation, password reset,
 * user or role change or deletion, through any replica on PostgreSQL), and a change empties
 * it before its next use. A principal is kept under the version taken *before* its session
 * was read, so what it holds is never older than that version (a write between the two makes
 * the version differ at the next use: a needless refill, never a stale answer); what is read
 * inside a transaction is not kept (it may be rolled back). A login only adds a token, which
 * changes no session read before, so it leaves the cache be. So a role change applies to the
 * next request, a revoked token is refused at once, and the expiry of the token is checked
 * on every request, cached or not. Cached principals are shared by requests: they are frozen.
 */
export class AuthService {
  private readonly principals = new Map<string, CachedPrincipal>();
  /** The `sessionsVersion` the cached principals were read at. */
  private principalsAt = -1;

  constructor(
    private readonly repo: AuthRepository,
    private readonly users: UserService,
    private readonly signer: TokenSigner,
    private readonly clock: Clock,
    private readonly tokenTtlS: number,
    private readonly throttles: LoginThrottles,
    private readonly passwords: PasswordHasher,
  ) {}

  /**
   * Checks login and password and issues a token model. Failures are throttled (see
   * `LoginThrottles`): 429 with `Retry-After`, or a delay; 503 when too many passwords are
   * being checked at once.
   */
  async login(username: string, password: string, address: string): Promise<Token> {
    const login = username.toLowerCase();
    const pairKey = `${address} ${login}`;
    let nowMs = this.clock.nowMs();
    const wait = Math.max(await this.throttles.perLoginAndAddress.retryAfterMs(pairKey, nowMs), await this.throttles.perAddress.retryAfterMs(address, nowMs));
    if (wait > 0) throw tooManyRequests('Too many failed logins from this address: try again later.', wait / 1000);
    const delayMs = await this.throttles.perLogin.delayMs(login, nowMs);
    if (delayMs > 0) {
      await sleep(delayMs);
      nowMs = this.clock.nowMs();
    }

    const user = await this.users.byLogin(username);
    const hash = (user && (await this.repo.passwordHash(user.id))) ?? this.passwords.dummy;
    const ok = await this.passwords.verify(password, hash);
    if (!user || !ok) {
      await this.throttles.perLoginAndAddress.hit(pairKey, nowMs);
      await this.throttles.perAddress.hit(address, nowMs);
      await this.throttles.perLogin.hit(login, nowMs);
      throw unauthorized('Invalid login or password.');
    }
    await this.throttles.perLoginAndAddress.clear(pairKey);

    const now = nowS(this.clock);
    const expiresAt = now + this.tokenTtlS;
    const jti = randomUUID();
    await this.repo.addToken(jti, user.id, now, expiresAt);
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
   * The principal behind an `Authorization` header (`<token>` or `Bearer <token>`, the
   * scheme in any case): signature,
   * expiry, revocation, and the user and role as stored now. Throws 401 otherwise.
   */
  async authenticate(header: string | undefined): Promise<Principal> {
    return (await this.cached(header)) ?? this.lookup(header);
  }

  /**
   * The principal of a header authenticated before, if nothing it derives from changed since
   * and its token has not expired; else undefined (then `authenticate` decides).
   */
  async cached(header: string | undefined): Promise<Principal | undefined> {
    if (header === undefined || this.principals.size === 0) return undefined;
    const version = await this.repo.sessionsVersion();
    // From here on, synchronous: the version and the entries are compared as they are now.
    if (this.principalsAt !== version) {
      this.principals.clear();
      return undefined;
    }
    const entry = this.principals.get(header);
    if (!entry) return undefined;
    if (entry.expiresAt > nowS(this.clock)) return entry.principal;
    this.principals.delete(header);
    return undefined;
  }

  private async lookup(header: string | undefined): Promise<Principal> {
    if (!header) throw unauthorized('This call needs a token: log in with POST /v1/auth/.');
    const token = credentialOf(header);
    const claims = token.length < 4096 ? await this.signer.verify(token, nowS(this.clock)) : null;
    if (!claims) throw unauthorized('The token is invalid or expired.');
    const now = nowS(this.clock);
    if (claims.expiresAt <= now) throw unauthorized('The token is revoked or expired.');
    // The version is taken before the session is read: a write after it, even one that
    // commits before the read, changes the version, so the principal is never kept under a
    // version it is older than.
    const version = await this.repo.sessionsVersion();
    const row = await this.repo.session(claims.jti, now);
    if (!row || row.userDeleted !== 0 || row.userId !== claims.userId) throw unauthorized('The token is revoked or expired.');
    const user = JSON.parse(row.userRow) as Stored<UserData>;
    Object.freeze(user.data);
    Object.freeze(user);
    const role = row.roleData ? (JSON.parse(row.roleData) as RoleData) : undefined;
    const sets = permissionSets(role?.permissions);
    const principal: Principal = Object.freeze({ user, api: sets.api, playbook: sets.playbook, jti: claims.jti, expiresAt: claims.expiresAt });
    this.remember(header, { principal, expiresAt: Math.min(claims.expiresAt, row.expiresAt) }, version);
    return principal;
  }

  /** Keeps `entry`, read after `sessionsVersion` was `version`; synchronous. */
  private remember(header: string, entry: CachedPrincipal, version: number): void {
    if (this.repo.inTransaction()) return;
    if (this.principalsAt !== version) {
      this.principals.clear();
      this.principalsAt = version;
    }
    if (this.principals.size >= PRINCIPAL_CACHE_SIZE) {
      const oldest = this.principals.keys().next();
      if (!oldest.done) this.principals.delete(oldest.value);
    }
    this.principals.set(header, entry);
  }

  /** Revokes the caller's token. */
  async logout(principal: Principal): Promise<void> {
    await this.repo.revokeToken(principal.jti, nowS(this.clock));
  }
}
