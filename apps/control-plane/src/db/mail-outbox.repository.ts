import { sql } from 'drizzle-orm';
import type { SecretBox } from '../secrets/secret-box.js';
import type { Database } from './database.js';
import { secretContext } from './encryption.repository.js';

/** A mail of the outbox. */
export interface OutboxMail {
  readonly id: number;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly timeCreatedMs: number;
  readonly attempts: number;
}

/** How long a replica holds the mails it took to deliver (a send takes seconds at most). */
const CLAIM_MS = 120_000;

/** The outbox of mail to deliver (see `MailOutbox`); bodies are stored encrypted (a new password, a reset token). */
export class MailOutboxRepository {
  constructor(
    private readonly db: Database,
    private readonly box: SecretBox,
  ) {}

  /** Stores a mail to deliver from `nowMs` on; joins the caller's transaction if one is open. */
  async add(mail: { to: string; subject: string; text: string }, nowMs: number): Promise<number> {
    const row = await this.db.get<{ id: number }>(sql`
      INSERT INTO mail_outbox (recipient, subject, body, time_created_ms, next_attempt_ms)
      VALUES (${mail.to}, ${mail.subject}, ${this.box.seal(mail.text, secretContext.mail())}, ${nowMs}, ${nowMs}) RETURNING id`);
    if (!row) throw new Error('the outbox returned no id');
    return row.id;
  }

  /**
   * Runs `fn` once the caller's transaction commits (at once when none is open), so that what
   * it stored is seen by a delivery pass that `fn` starts; dropped on rollback.
   */
  afterCommit(fn: () => void): void {
    this.db.afterCommit(fn);
  }

  /**
   * Takes the mails due at `nowMs` (oldest first) for delivery: each is held for
   * `CLAIM_MS` (its next attempt moved past it), so that no other replica sends it meanwhile;
   * a replica that dies while sending leaves it to be taken again after that.
   */
  async due(nowMs: number, limit: number): Promise<OutboxMail[]> {
    const skip = this.db.engine.skipLocked();
    const rows = await this.db.all<OutboxMail & { due: number }>(sql`
      UPDATE mail_outbox SET next_attempt_ms = ${nowMs + CLAIM_MS}
       WHERE id IN (SELECT id FROM mail_outbox WHERE next_attempt_ms <= ${nowMs} ORDER BY next_attempt_ms, id LIMIT ${limit}${skip})
      RETURNING id, recipient AS "to", subject, body AS "text", time_created_ms AS "timeCreatedMs", attempts`);
    return rows
      .map((r) => ({ ...r, text: this.box.open(r.text, secretContext.mail()) }))
      .sort((x, y) => x.timeCreatedMs - y.timeCreatedMs || x.id - y.id);
  }

  /** When the next mail is due, if any is waiting. */
  async nextDueMs(): Promise<number | null> {
    return (await this.db.get<{ next: number | null }>(sql`SELECT min(next_attempt_ms) AS next FROM mail_outbox`))?.next ?? null;
  }

  /** How many mails wait. */
  async size(): Promise<number> {
    return (await this.db.get<{ n: number }>(sql`SELECT count(*) AS n FROM mail_outbox`))?.n ?? 0;
  }

  /** Forgets a delivered mail. */
  async remove(id: number): Promise<void> {
    await this.db.run(sql`DELETE FROM mail_outbox WHERE id = ${id}`);
  }

  /** Records a failed attempt and when to try again. */
  async postpone(id: number, attempts: number, nextAttemptMs: number, error: string): Promise<void> {
    await this.db.run(
      sql`UPDATE mail_outbox SET attempts = ${attempts}, next_attempt_ms = ${nextAttemptMs}, last_error = ${error.slice(0, 500)} WHERE id = ${id}`,
    );
  }
}
