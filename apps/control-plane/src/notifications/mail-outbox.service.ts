import type { Logger } from 'pino';
import type { MailOutboxRepository, OutboxMail } from '../db/mail-outbox.repository.js';
import type { Clock, Mail, Mailer } from '../ports.js';
import { DeliveryLoop } from './delivery-loop.js';
import { isPermanentMailError, type MailTransport } from '../adapters/mailer.js';

/** When a mail that could not be delivered is tried again. */
export interface MailRetry {
  /** The delay after the first failure; it doubles after each one ... */
  readonly initialMs: number;
  /** ... up to this. */
  readonly maxMs: number;
  /** A mail still undelivered this long after it was queued goes to the spool folder. */
  readonly giveUpMs: number;
}

export const DEFAULT_MAIL_RETRY: MailRetry = { initialMs: 5_000, maxMs: 600_000, giveUpMs: 86_400_000 };

const BATCH = 20;

/**
 * The mailer: `send` stores the mail in the outbox table, in the caller's transaction when
 * one is open, so a mail is committed (or rolled back) with what it tells of, and a crash
 * after the commit loses nothing. Mails are delivered from the outbox in the background:
 * at once after the commit (`Database.afterCommit`: never before it), again at start
 * (`resume`), and after a failure with capped exponential backoff and jitter. A delivered
 * mail is deleted; a mail refused for good (5xx to its recipient or content), or still
 * undelivered after `giveUpMs`, is written to the spool folder. Delivery is at least once:
 * a crash between the server's acceptance and the deletion sends that mail again at the
 * next start.
 *
 * The outbox holds mail bodies, among them generated passwords and reset tokens, in clear:
 * the database already holds the token signing key, so it is protected as a secret as a
 * whole (the data directory is created 0700); a body is deleted once delivered, and the log
 * never holds one.
 */
export class MailOutbox implements Mailer {
  private readonly loop: DeliveryLoop<OutboxMail>;

  constructor(
    private readonly repo: MailOutboxRepository,
    private readonly transport: MailTransport,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly retry: MailRetry = DEFAULT_MAIL_RETRY,
  ) {
    this.loop = new DeliveryLoop({
      queue: repo,
      batch: BATCH,
      deliver: async (batch) => {
        for (const mail of batch) {
          if (this.loop.closed) return;
          await this.attempt(mail);
        }
      },
      clock,
      log,
      messages: { passFailed: 'mail delivery pass failed', cannotRead: 'cannot read the mail outbox; its mails go at the next start' },
    });
  }

  async send(mail: Mail): Promise<void> {
    const id = await this.repo.add(mail, this.clock.nowMs());
    this.log.debug({ mailId: id, to: mail.to, subject: mail.subject }, 'mail queued');
    // a pass started before the commit would not see the mail
    this.repo.afterCommit(() => this.loop.kick());
  }

  /** Delivers what the outbox holds (mails left by an earlier run of the service). */
  async resume(): Promise<void> {
    const waiting = await this.repo.size();
    if (waiting > 0) this.log.info({ mails: waiting }, 'delivering the mails of the outbox');
    this.loop.kick();
  }

  async close(): Promise<void> {
    // a mail under way whose answer comes too late stays in the outbox and goes again at
    // the next start (the database closes after this)
    await this.loop.close();
    await this.transport.close();
  }

  private async attempt(mail: OutboxMail): Promise<void> {
    const meta = { mailId: mail.id, to: mail.to, subject: mail.subject };
    try {
      await this.transport.deliver(mail);
      await this.repo.remove(mail.id);
      this.log.info({ ...meta, attempts: mail.attempts + 1 }, 'mail sent');
      return;
    } catch (err) {
      const attempts = mail.attempts + 1;
      const now = this.clock.nowMs();
      if (isPermanentMailError(err) || now - mail.timeCreatedMs >= this.retry.giveUpMs) {
        this.log.error({ ...meta, attempts, err }, 'mail not delivered: refused for good or too old; spooling it');
        try {
          await this.transport.spool(mail);
          await this.repo.remove(mail.id);
          return;
        } catch (spoolErr) {
          this.log.error({ ...meta, err: spoolErr }, 'cannot spool the mail; it stays in the outbox');
        }
      }
      const delay = this.backoff(attempts);
      await this.repo.postpone(mail.id, attempts, now + delay, err instanceof Error ? err.message : String(err));
      this.log.warn({ ...meta, attempts, retryInMs: delay, err }, 'mail not delivered; will try again');
    }
  }

  /** Capped exponential backoff with ±20 % jitter. */
  private backoff(attempts: number): number {
    const base = Math.min(this.retry.maxMs, this.retry.initialMs * 2 ** Math.min(attempts - 1, 30));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }
}
