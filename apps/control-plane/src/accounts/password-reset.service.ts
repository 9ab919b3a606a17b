import { createHash, randomBytes } from 'node:crypto';
import type { AuthRepository } from '../db/auth.repository.js';
import { badRequest, notFound, tooManyRequests } from '../errors.js';
import { nowS, type Clock, type Mailer, type PasswordHasher } from '../ports.js';
import type { Limiter } from './throttle.js';
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
    private readonly passwords: PasswordHasher,
    /** Requests are counted per login *and* address (so no one can keep a login from asking), and per address. */
    private readonly options: { ttlS: number; resetUrl: string; perLoginAndAddress: Limiter; perAddress: Limiter },
  ) {}

  /** Requests a reset. Answers the same whether or not the login exists. */
  async request(login: string, address: string): Promise<void> {
    const nowMs = this.clock.nowMs();
    const pairKey = `${address} ${login.toLowerCase()}`;
    const wait = Math.max(await this.options.perLoginAndAddress.retryAfterMs(pairKey, nowMs), await this.options.perAddress.retryAfterMs(address, nowMs));
    if (wait > 0) throw tooManyRequests('Too many password reset requests from this address: try again later.', wait / 1000);
    await this.options.perLoginAndAddress.hit(pairKey, nowMs);
    await this.options.perAddress.hit(address, nowMs);

    const user = await this.users.byLogin(login);
    if (!user) return;
    // hex: a token is pasted into URLs and onto command lines, where one starting with '-'
    // (base64url) would read as an option
    const token = randomBytes(32).toString('hex');
    const now = nowS(this.clock);
    const link = this.options.resetUrl.split('{reset_token}').join(token);
    // the token and its mail are stored together: a token is never valid without its mail
    await this.repo.transaction(async () => {
      await this.repo.addPasswordReset(digest(token), user.id, now, now + this.options.ttlS);
      await this.mailer.send({
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
  async check(token: string): Promise<void> {
    if (!(await this.repo.passwordResetUser(digest(token), nowS(this.clock)))) throw notFound('Unknown or expired password reset token.');
  }

  /** Sets a new password with a reset token, once. */
  async reset(token: string, password: string): Promise<void> {
    if (password.length < MIN_PASSWORD_LENGTH) throw badRequest(`A password has at least ${MIN_PASSWORD_LENGTH} characters.`);
    const hash = digest(token);
    const userId = await this.repo.passwordResetUser(hash, nowS(this.clock));
    if (!userId) throw notFound('Unknown or expired password reset token.');
    // hashed before the transaction opens: a transaction holds the database meanwhile
    const passwordHash = await this.passwords.hash(password);
    await this.repo.transaction(async () => {
      const now = nowS(this.clock);
      if (!(await this.repo.consumePasswordReset(hash, now))) throw notFound('Unknown or expired password reset token.');
      await this.repo.setPasswordHash(userId, passwordHash, now);
      await this.repo.dropPasswordResets(userId, now);
      await this.repo.revokeUserTokens(userId, now);
    });
  }
}
