import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Mail, Mailer } from '../ports.js';

/**
 * Sends mail over SMTP when a server is configured. A mail that cannot be sent, or any
 * mail when no SMTP server is configured, is written as an `.eml` file to the spool folder
 * (`<dataDir>/mail`) and the log says where: nothing is lost. The log never holds the body,
 * which may carry a secret.
 */
export class SmtpMailer implements Mailer {
  private readonly transport;
  private readonly spool;

  constructor(
    private readonly smtp: Config['smtp'],
    private readonly spoolDir: string,
    private readonly log: Logger,
  ) {
    this.transport = smtp.host
      ? nodemailer.createTransport({
          host: smtp.host,
          port: smtp.port,
          secure: smtp.secure,
          auth: smtp.user ? { user: smtp.user, pass: smtp.password ?? '' } : undefined,
          connectionTimeout: 10_000,
          greetingTimeout: 10_000,
          socketTimeout: 20_000,
        })
      : null;
    this.spool = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  }

  private readonly pending = new Set<Promise<void>>();

  send(mail: Mail): void {
    const p = this.deliver(mail)
      .catch((err: unknown) => this.log.error({ err, to: mail.to, subject: mail.subject }, 'mail lost: cannot spool it'))
      .finally(() => this.pending.delete(p));
    this.pending.add(p);
  }

  async close(): Promise<void> {
    await Promise.all([...this.pending]);
    this.transport?.close();
  }

  private async deliver(mail: Mail): Promise<void> {
    const message = { from: this.smtp.from, to: mail.to, subject: mail.subject, text: mail.text };
    if (this.transport) {
      try {
        await this.transport.sendMail(message);
        this.log.info({ to: mail.to, subject: mail.subject }, 'mail sent');
        return;
      } catch (err) {
        this.log.error({ err, to: mail.to, subject: mail.subject }, 'mail could not be sent over SMTP; spooling it');
      }
    }
    const info = await this.spool.sendMail(message);
    mkdirSync(this.spoolDir, { recursive: true, mode: 0o700 });
    const file = join(this.spoolDir, `${Date.now()}-${randomBytes(4).toString('hex')}.eml`);
    writeFileSync(file, info.message as Buffer, { mode: 0o600 });
    this.log.warn({ to: mail.to, subject: mail.subject, file }, 'mail written to the spool folder');
  }
}
