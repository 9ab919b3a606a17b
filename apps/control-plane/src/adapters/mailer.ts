import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Mail } from '../ports.js';

/** Where mail leaves the control plane: an SMTP server, or the spool folder. */
export interface MailTransport {
  /** Delivers one mail now; throws when it cannot (see `isPermanentMailError`). */
  deliver(mail: Mail): Promise<void>;
  /** Writes a mail to the spool folder, for an operator to forward by hand; returns the file. */
  spool(mail: Mail): Promise<string>;
  close(): Promise<void>;
}

/**
 * Whether a delivery error is about the mail itself (a recipient or the message refused
 * with a 5xx reply), so that trying again cannot help; connection errors, timeouts and 4xx
 * replies are temporary.
 */
export function isPermanentMailError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { permanent?: unknown; code?: unknown };
  return e.permanent === true && (e.code === 'EENVELOPE' || e.code === 'EMESSAGE');
}

/**
 * Sends mail over SMTP when a server is configured; with none configured, a delivery is
 * an `.eml` file written to the spool folder (`<dataDir>/mail`, mode 0700, files 0600) and
 * the log says where. The log never holds a body, which may carry a secret.
 */
export class SmtpTransport implements MailTransport {
  private readonly transport;
  private readonly spooler;

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
    this.spooler = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  }

  async deliver(mail: Mail): Promise<void> {
    if (!this.transport) {
      await this.spool(mail);
      return;
    }
    await this.transport.sendMail(this.message(mail));
  }

  async spool(mail: Mail): Promise<string> {
    const info = await this.spooler.sendMail(this.message(mail));
    mkdirSync(this.spoolDir, { recursive: true, mode: 0o700 });
    const file = join(this.spoolDir, `${Date.now()}-${randomBytes(4).toString('hex')}.eml`);
    writeFileSync(file, info.message as Buffer, { mode: 0o600 });
    this.log.warn({ to: mail.to, subject: mail.subject, file }, 'mail written to the spool folder');
    return file;
  }

  async close(): Promise<void> {
    this.transport?.close();
  }

  private message(mail: Mail) {
    return { from: this.smtp.from, to: mail.to, subject: mail.subject, text: mail.text };
  }
}
