import { createHash, randomBytes } from 'node:crypto';
import type { AuthRepository } from '../db/auth.repository.js';
import { badRequest, notFound, tooManyRequests } from '../errors.js';
import { nowS, type Clock, type Mailer } from '../ports.js';
import { hashPassword } from './passwords.js';
import type { Throttle } from './throttle.js';
import type { UserService } from './user.service.js';

const MIN_PASSWORD_LENGTH = 8;

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * The password reset flow: a request e-mails a single-use secret token (stored only as a
 * digest); the token can be checked without consuming it, and then used once to set a new
 * password, which revokes every token of the user.
 */
export class PasswordResetService {
  constructor(
    private readonly repo: AuthRepository,
    private readonly users: UserService,
    private readonly mailer: Mailer,
    private readonly clock: Clock,
    /** Requests are counted per login *and* address (so no one can keep a login from asking), and per address. */
    private readonly options: { ttlS: number; resetUrl: string; perLoginAndAddress: Throttle; perAddress: Throttle },
  ) {}

  /** Requests a reset. Answers the same whether or not the login exists. */
  request(login: string, address: string): void {
    const nowMs = this.clock.nowMs();
    const pairKey = `${address} ${login.toLowerCase()}`;
    const wait = Math.max(this.options.perLoginAndAddress.retryAfterMs(pairKey, nowMs), this.options.perAddress.retryAfterMs(address, nowMs));
    if (wait > 0) throw tooManyRequests('Too many password reset requests from this address: try again later.', wait / 1000);
    this.options.perLoginAndAddress.hit(pairKey, nowMs);
    this.options.perAddress.hit(address, nowMs);

    const user = this.users.byLogin(login);
    if (!user) return;
    // hex: a token is pasted into URLs and onto command lines, where one starting with '-'
    // (base64url) would read as an option
    const token = randomBytes(32).toString('hex');
    const now = nowS(this.clock);
    const link = this.options.resetUrl.split('{reset_token}').join(token);
    // the token and its mail are stored together: a token is never valid without its mail
    this.repo.transaction(() => {
      this.repo.addPasswordReset(digest(token), user.id, now, now + this.options.ttlS);
      this.mailer.send({
        to: user.data.email,
        subject: 'Carapace password reset',
        text: [
          `Hello ${user.data.full_name || user.data.login},`,
          '',
          'A password reset was requested for your Carapace account. To set a new password, open',
          '',
          `  ${link}`,
          '',
          `or use this reset token: ${token}`,
          '',
          `It is valid for ${Math.round(this.options.ttlS / 60)} minutes and works once.`,
          'If you did not ask for it, ignore this message: your password stays as it is.',
        ].join('\n'),
      });
    });
  }

  /** Checks that a reset token is valid, without consuming it; 404 otherwise. */
  check(token: string): void {
    if (!this.repo.passwordResetUser(digest(token), nowS(this.clock))) throw notFound('Unknown or expired password reset token.');
  }

  /** Sets a new password with a reset token, once. */
  async reset(token: string, password: string): Promise<void> {
    if (password.length < MIN_PASSWORD_LENGTH) throw badRequest(`A password has at least ${MIN_PASSWORD_LENGTH} characters.`);
    const hash = digest(token);
    const userId = this.repo.passwordResetUser(hash, nowS(this.clock));
    if (!userId) throw notFound('Unknown or expired password reset token.');
    const passwordHash = await hashPassword(password);
    this.repo.transaction(() => {
      const now = nowS(this.clock);
      if (!this.repo.consumePasswordReset(hash, now)) throw notFound('Unknown or expired password reset token.');
      this.repo.setPasswordHash(userId, passwordHash, now);
      this.repo.dropPasswordResets(userId, now);
      this.repo.revokeUserTokens(userId, now);
    });
  }
}
