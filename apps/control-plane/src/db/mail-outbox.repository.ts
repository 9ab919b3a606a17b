import { asc, count, eq, lte, min } from 'drizzle-orm';
import type { Db } from './client.js';
import { mailOutbox } from './schema/index.js';

/** A mail of the outbox. */
export interface OutboxMail {
  readonly id: number;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly timeCreatedMs: number;
  readonly attempts: number;
}

/** The outbox of mail to deliver (see `MailOutbox`). */
export class MailOutboxRepository {
  constructor(private readonly db: Db) {}

  /** Stores a mail to deliver from `nowMs` on; joins the caller's transaction if one is open. */
  add(mail: { to: string; subject: string; text: string }, nowMs: number): number {
    const row = this.db
      .insert(mailOutbox)
      .values({ recipient: mail.to, subject: mail.subject, body: mail.text, timeCreatedMs: nowMs, nextAttemptMs: nowMs })
      .returning({ id: mailOutbox.id })
      .get();
    return row.id;
  }

  /** The mails due at `nowMs`, oldest first. */
  due(nowMs: number, limit: number): OutboxMail[] {
    return this.db
      .select()
      .from(mailOutbox)
      .where(lte(mailOutbox.nextAttemptMs, nowMs))
      .orderBy(asc(mailOutbox.nextAttemptMs), asc(mailOutbox.id))
      .limit(limit)
      .all()
      .map((r) => ({ id: r.id, to: r.recipient, subject: r.subject, text: r.body, timeCreatedMs: r.timeCreatedMs, attempts: r.attempts }));
  }

  /** When the next mail is due, if any is waiting. */
  nextDueMs(): number | null {
    return this.db.select({ next: min(mailOutbox.nextAttemptMs) }).from(mailOutbox).get()?.next ?? null;
  }

  /** How many mails wait. */
  size(): number {
    return this.db.select({ n: count() }).from(mailOutbox).get()?.n ?? 0;
  }

  /** Forgets a delivered mail. */
  remove(id: number): void {
    this.db.delete(mailOutbox).where(eq(mailOutbox.id, id)).run();
  }

  /** Records a failed attempt and when to try again. */
  postpone(id: number, attempts: number, nextAttemptMs: number, error: string): void {
    this.db.update(mailOutbox).set({ attempts, nextAttemptMs, lastError: error.slice(0, 500) }).where(eq(mailOutbox.id, id)).run();
  }
}
