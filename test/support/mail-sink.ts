import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** A mail the sink received. */
export interface ReceivedMail {
  readonly to: string;
  readonly subject: string;
  readonly text: string;
}

/** A real SMTP server on 127.0.0.1, port 0, keeping what it receives (the control plane mails passwords). */
export class MailSink {
  readonly mails: ReceivedMail[] = [];
  /** While set, every mail is refused with this SMTP reply code (451: try later; 550: never). */
  refuseWith: number | null = null;
  /** How many mails were refused. */
  refused = 0;
  private waiters: (() => void)[] = [];
  private readonly server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData: (stream, _session, callback) => {
      const refuse = this.refuseWith;
      if (refuse !== null) {
        stream.on('end', () => {
          this.refused += 1;
          callback(Object.assign(new Error(refuse < 500 ? 'try again later' : 'refused for good'), { responseCode: refuse }));
        });
        stream.resume();
        return;
      }
      simpleParser(stream)
        .then((mail) => {
          const to = Array.isArray(mail.to) ? mail.to.map((a) => a.text).join(', ') : (mail.to?.text ?? '');
          this.mails.push({ to, subject: mail.subject ?? '', text: mail.text ?? '' });
          for (const wake of this.waiters.splice(0)) wake();
          callback();
        })
        .catch((err: Error) => callback(err));
    },
  });

  /** Listens (on `port`, or any free one); returns the port. */
  async start(port = 0): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    return (this.server.server.address() as AddressInfo).port;
  }

  /** Waits for a mail to `to` whose subject contains `subject` and that `accept` takes; returns it. */
  async waitFor(to: string, subject: string, accept: (mail: ReceivedMail) => boolean = () => true, timeoutMs = 10_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.mails.find((m) => m.to.includes(to) && m.subject.includes(subject) && accept(m));
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no mail to ${to} about "${subject}" within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The password of the welcome mail sent to `email`. */
  async passwordOf(email: string): Promise<string> {
    const mail = await this.waitFor(email, 'account');
    const password = /Password: (\S+)/.exec(mail.text)?.[1];
    if (!password) throw new Error(`no password in the mail to ${email}`);
    return password;
  }

  /** The reset token of the latest password reset mail sent to `email` that `skip` does not list. */
  async resetTokenOf(email: string, skip: readonly string[] = []): Promise<string> {
    const tokenOf = (m: ReceivedMail) => /reset token: (\S+)/.exec(m.text)?.[1];
    const mail = await this.waitFor(email, 'password reset', (m) => {
      const token = tokenOf(m);
      return token !== undefined && !skip.includes(token);
    });
    return tokenOf(mail) ?? '';
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
