import { getTableName, sql, type SQL } from 'drizzle-orm';
import { changeCounters, type ChangeCounters } from './change-counter.js';
import type { Database } from './database.js';
import type { SqlEngine } from './engine.js';
import { roles, tokens, users } from './schema/index.js';
import type { SecretBox } from '../secrets/secret-box.js';
import { secretContext } from './encryption.repository.js';

/** What the authentication of one request needs, read in one query. */
export interface SessionRow {
  readonly userId: string;
  /** When the token expires (unix seconds), as stored. */
  readonly expiresAt: number;
  readonly userDeleted: number;
  readonly userRow: string;
  readonly roleData: string | null;
}

/** The session query: the token, its user's latest version as a model, and the user's live role. */
function sessionQuery(engine: SqlEngine, jti: string, nowS: number): SQL {
  const userRow = engine.jsonObject(sql`'id', u.id, 'version', u.version, 'time_updated', u.time_updated,
                         'time_deleted', u.time_deleted, 'initiator_id', u.initiator_id,
                         'data', ${engine.jsonDocument('u.data')}`);
  return sql`
      SELECT u.id AS "userId", t.expires_at AS "expiresAt", u.time_deleted AS "userDeleted",
             ${userRow} AS "userRow",
             r.data AS "roleData"
        FROM tokens t
        JOIN users u ON u.id = t.user_id AND u.is_latest = 1
        LEFT JOIN roles r ON r.id = ${engine.jsonText('u.data', 'role_id')} AND r.is_latest = 1 AND r.time_deleted = 0
       WHERE t.jti = ${jti} AND t.revoked_at IS NULL AND t.expires_at > ${nowS}`;
}

/** Credentials, issued tokens, password reset tokens and the service's own secrets. */
export class AuthRepository {
  private readonly counters: ChangeCounters;
  private readonly tokensTable = getTableName(tokens);
  /**
   * The tables a session is read from. Writes to tokens count only when they can change a
   * session read before: revocations, not the issue of a token (see `addToken`).
   */
  private readonly sessionTables: readonly string[] = [getTableName(tokens), getTableName(users), getTableName(roles)];

  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
  ) {
    this.counters = changeCounters(db);
  }

  /** The user and role behind a live token, as stored now. */
  session(jti: string, nowS: number): Promise<SessionRow | undefined> {
    return this.db.get<SessionRow>(sessionQuery(this.db.engine, jti, nowS));
  }

  /**
   * A number that changes whenever anything `session` answered before may have changed: a
   * revocation in the tokens table, a write to the users or roles table. A session read
   * after taking this value stays what `session` answers while the value stays.
   */
  sessionsVersion(): Promise<number> {
    return this.counters.read(this.sessionTables);
  }

  /** Whether a transaction is open (what is read then may yet be rolled back). */
  inTransaction(): boolean {
    return this.db.inTransaction();
  }

  async passwordHash(userId: string): Promise<string | undefined> {
    return (await this.db.get<{ h: string }>(sql`SELECT password_hash AS h FROM credentials WHERE user_id = ${userId}`))?.h;
  }

  async setPasswordHash(userId: string, passwordHash: string, nowS: number): Promise<void> {
    await this.db.run(sql`
      INSERT INTO credentials (user_id, password_hash, time_updated) VALUES (${userId}, ${passwordHash}, ${nowS})
      ON CONFLICT (user_id) DO UPDATE SET password_hash = excluded.password_hash, time_updated = excluded.time_updated`);
  }

  /**
   * Stores a new token, and purges tokens expired for a day. Neither changes a session read
   * before: the new `jti` was never read (a session is read only for an existing `jti`, and
   * no absence is cached), and a purged token expired long before, as did any principal
   * cached from it (a cached principal expires with its token). So no change is counted: a
   * login does not empty the principal cache of everyone else.
   */
  async addToken(jti: string, userId: string, nowS: number, expiresAt: number): Promise<void> {
    await this.db.run(sql`INSERT INTO tokens (jti, user_id, time_created, expires_at) VALUES (${jti}, ${userId}, ${nowS}, ${expiresAt})`);
    await this.db.run(sql`DELETE FROM tokens WHERE expires_at < ${nowS - 86_400}`);
  }

  async revokeToken(jti: string, nowS: number): Promise<void> {
    await this.db.transaction(async () => {
      await this.counters.bump(this.tokensTable);
      await this.db.run(sql`UPDATE tokens SET revoked_at = ${nowS} WHERE jti = ${jti} AND revoked_at IS NULL`);
    });
  }

  /** Revokes every live token of a user; returns how many. */
  revokeUserTokens(userId: string, nowS: number): Promise<number> {
    return this.db.transaction(async () => {
      await this.counters.bump(this.tokensTable);
      return this.db.run(sql`UPDATE tokens SET revoked_at = ${nowS} WHERE user_id = ${userId} AND revoked_at IS NULL AND expires_at > ${nowS}`);
    });
  }

  async addPasswordReset(tokenHash: string, userId: string, nowS: number, expiresAt: number): Promise<void> {
    await this.db.run(
      sql`INSERT INTO password_resets (token_hash, user_id, time_created, expires_at) VALUES (${tokenHash}, ${userId}, ${nowS}, ${expiresAt})`,
    );
    await this.db.run(sql`DELETE FROM password_resets WHERE expires_at < ${nowS - 86_400}`);
  }

  /** The user of an unused, unexpired reset token. */
  async passwordResetUser(tokenHash: string, nowS: number): Promise<string | undefined> {
    const row = await this.db.get<{ u: string }>(
      sql`SELECT user_id AS u FROM password_resets WHERE token_hash = ${tokenHash} AND used_at IS NULL AND expires_at > ${nowS}`,
    );
    return row?.u;
  }

  /** Marks a reset token used; false if it was used or expired meanwhile. */
  async consumePasswordReset(tokenHash: string, nowS: number): Promise<boolean> {
    const changed = await this.db.run(
      sql`UPDATE password_resets SET used_at = ${nowS} WHERE token_hash = ${tokenHash} AND used_at IS NULL AND expires_at > ${nowS}`,
    );
    return changed === 1;
  }

  /** Invalidates every pending reset token of a user. */
  async dropPasswordResets(userId: string, nowS: number): Promise<void> {
    await this.db.run(sql`UPDATE password_resets SET used_at = ${nowS} WHERE user_id = ${userId} AND used_at IS NULL`);
  }

  /**
   * A secret of the service, created with `make` the first time it is asked for (by any
   * replica: the first one stored wins). Stored encrypted; read once at start by its user,
   * which keeps it in memory (nothing decrypts it per request).
   */
  async secret(name: string, make: () => string, nowS: number): Promise<string> {
    const context = secretContext.secret(name);
    await this.db.run(sql`INSERT INTO secrets (name, value, time_created) VALUES (${name}, ${this.box.seal(make(), context)}, ${nowS}) ON CONFLICT (name) DO NOTHING`);
    const row = await this.db.get<{ value: string }>(sql`SELECT value FROM secrets WHERE name = ${name}`);
    if (!row) throw new Error(`secret ${name} missing`);
    return this.box.open(row.value, context);
  }

  transaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }
}
