import { and, eq, getTableName, gt, isNull, lt } from 'drizzle-orm';
import { tableChanges, type ChangeCounter } from './change-counter.js';
import type { Db } from './client.js';
import { credentials, passwordResets, roles, secrets, tokens, users } from './schema/index.js';

/** What the authentication of one request needs, read in one query. */
export interface SessionRow {
  readonly userId: string;
  /** When the token expires (unix seconds), as stored. */
  readonly expiresAt: number;
  readonly userDeleted: number;
  readonly userRow: string;
  readonly roleData: string | null;
}

/** Credentials, issued tokens, password reset tokens and the service's own secrets. */
export class AuthRepository {
  private readonly sessionStmt;
  /**
   * Bumped by every write to the tokens table that can change a session read before:
   * revocations. Not by issuing a token (see `addToken`).
   */
  private readonly tokenChanges: ChangeCounter;
  /** The counters of the tables a session is read from. */
  private readonly sessionTables: readonly ChangeCounter[];

  constructor(private readonly db: Db) {
    this.tokenChanges = tableChanges(db, getTableName(tokens));
    this.sessionTables = [this.tokenChanges, tableChanges(db, getTableName(users)), tableChanges(db, getTableName(roles))];
    this.sessionStmt = db.$client.prepare<[string, number], SessionRow>(`
      SELECT u.id AS userId, t.expires_at AS expiresAt, u.time_deleted AS userDeleted,
             json_object('id', u.id, 'version', u.version, 'time_updated', u.time_updated,
                         'time_deleted', u.time_deleted, 'initiator_id', u.initiator_id,
                         'data', json(u.data)) AS userRow,
             r.data AS roleData
        FROM tokens t
        JOIN users u ON u.id = t.user_id AND u.is_latest = 1
        LEFT JOIN roles r ON r.id = json_extract(u.data, '$.role_id') AND r.is_latest = 1 AND r.time_deleted = 0
       WHERE t.jti = ? AND t.revoked_at IS NULL AND t.expires_at > ?`);
  }

  /** The user and role behind a live token, as stored now. */
  session(jti: string, nowS: number): SessionRow | undefined {
    return this.sessionStmt.get(jti, nowS);
  }

  /**
   * A number that changes whenever anything `session` answered before may have changed: a
   * revocation in the tokens table, a write to the users or roles table (each counter only
   * grows, so their sum changes when one does). A session read at a value stays what
   * `session` answers while the value stays.
   */
  sessionsVersion(): number {
    let sum = 0;
    for (const counter of this.sessionTables) sum += counter.value;
    return sum;
  }

  /** Whether a transaction is open (what is read then may yet be rolled back). */
  inTransaction(): boolean {
    return this.db.$client.inTransaction;
  }

  passwordHash(userId: string): string | undefined {
    return this.db.select().from(credentials).where(eq(credentials.userId, userId)).get()?.passwordHash;
  }

  setPasswordHash(userId: string, passwordHash: string, nowS: number): void {
    this.db
      .insert(credentials)
      .values({ userId, passwordHash, timeUpdated: nowS })
      .onConflictDoUpdate({ target: credentials.userId, set: { passwordHash, timeUpdated: nowS } })
      .run();
  }

  /**
   * Stores a new token, and purges tokens expired for a day. Neither changes a session read
   * before: the new `jti` was never read (a session is read only for an existing `jti`, and
   * no absence is cached), and a purged token expired long before, as did any principal
   * cached from it (a cached principal expires with its token). So no change is counted: a
   * login does not empty the principal cache of everyone else.
   */
  addToken(jti: string, userId: string, nowS: number, expiresAt: number): void {
    this.db.insert(tokens).values({ jti, userId, timeCreated: nowS, expiresAt }).run();
    this.db.delete(tokens).where(lt(tokens.expiresAt, nowS - 86_400)).run();
  }

  revokeToken(jti: string, nowS: number): void {
    this.tokenChanges.bump();
    this.db.update(tokens).set({ revokedAt: nowS }).where(and(eq(tokens.jti, jti), isNull(tokens.revokedAt))).run();
  }

  /** Revokes every live token of a user; returns how many. */
  revokeUserTokens(userId: string, nowS: number): number {
    this.tokenChanges.bump();
    return this.db
      .update(tokens)
      .set({ revokedAt: nowS })
      .where(and(eq(tokens.userId, userId), isNull(tokens.revokedAt), gt(tokens.expiresAt, nowS)))
      .run().changes;
  }

  addPasswordReset(tokenHash: string, userId: string, nowS: number, expiresAt: number): void {
    this.db.insert(passwordResets).values({ tokenHash, userId, timeCreated: nowS, expiresAt }).run();
    this.db.delete(passwordResets).where(lt(passwordResets.expiresAt, nowS - 86_400)).run();
  }

  /** The user of an unused, unexpired reset token. */
  passwordResetUser(tokenHash: string, nowS: number): string | undefined {
    return this.db
      .select({ userId: passwordResets.userId })
      .from(passwordResets)
      .where(and(eq(passwordResets.tokenHash, tokenHash), isNull(passwordResets.usedAt), gt(passwordResets.expiresAt, nowS)))
      .get()?.userId;
  }

  /** Marks a reset token used; false if it was used or expired meanwhile. */
  consumePasswordReset(tokenHash: string, nowS: number): boolean {
    return (
      this.db
        .update(passwordResets)
        .set({ usedAt: nowS })
        .where(and(eq(passwordResets.tokenHash, tokenHash), isNull(passwordResets.usedAt), gt(passwordResets.expiresAt, nowS)))
        .run().changes === 1
    );
  }

  /** Invalidates every pending reset token of a user. */
  dropPasswordResets(userId: string, nowS: number): void {
    this.db
      .update(passwordResets)
      .set({ usedAt: nowS })
      .where(and(eq(passwordResets.userId, userId), isNull(passwordResets.usedAt)))
      .run();
  }

  /** A secret of the service, created with `make` the first time it is asked for. */
  secret(name: string, make: () => string, nowS: number): string {
    this.db.insert(secrets).values({ name, value: make(), timeCreated: nowS }).onConflictDoNothing().run();
    const row = this.db.select().from(secrets).where(eq(secrets.name, name)).get();
    if (!row) throw new Error(`secret ${name} missing`);
    return row.value;
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn);
  }
}
