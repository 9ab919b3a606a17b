import type { UserCreate, UserData, UserUpdate } from '@carapace/models';
import type { AuthRepository } from '../db/auth.repository.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import { ApiError, conflict } from '../errors.js';
import type { Clock, Mail, Mailer, PasswordHasher } from '../ports.js';
import type { Administrators } from './administrators.js';
import { generatePassword } from '../adapters/passwords.js';
import { permissionSets, type Principal } from './principal.js';
import { checkGrantable, checkHeld, type RoleService } from './role.service.js';
import { VersionedService } from '../services/versioned.service.js';

/**
 * Users: uniqueness of login and e-mail, roles, generated passwords, token revocation.
 * No takeover: a caller changes or deletes only users whose role's permissions they hold
 * in full (themself included), gives only roles they hold in full, and cannot leave the
 * service without a live user holding every permission. A changed e-mail address is told
 * to the old one.
 */
export class UserService extends VersionedService<UserData> {
  constructor(
    repo: VersionedRepository<UserData>,
    clock: Clock,
    private readonly auth: AuthRepository,
    private readonly roles: RoleService,
    private readonly mailer: Mailer,
    private readonly admins: Administrators,
    private readonly passwords: PasswordHasher,
  ) {
    super('user', repo, clock);
  }

  /**
   * Creates a user with a generated password, e-mailed to them: the mail is queued in the
   * transaction that stores the user, so an acknowledged user always gets it. The password
   * is hashed before the transaction opens: a transaction holds the database meanwhile.
   */
  async create(body: UserCreate, principal: Principal): Promise<Stored<UserData>> {
    const roleId = body.role_id ?? null;
    await this.checkRole(roleId, principal);
    const password = generatePassword();
    const hash = await this.passwords.hash(password);
    const data: UserData = { login: body.login, email: body.email, full_name: body.full_name ?? '', role_id: roleId };
    return this.unique(() =>
      this.repo.transaction(async () => {
        await this.checkRole(roleId, principal);
        const created = await this.repo.create(data, principal.user.id, this.now());
        await this.auth.setPasswordHash(created.id, hash, this.now());
        await this.mailer.send(welcomeMail(created.data, password));
        return created;
      }),
    );
  }

  async update(id: string, body: UserUpdate, principal: Principal): Promise<Stored<UserData>> {
    const latest = await this.checkUpdatable(id, body);
    await this.checkManageable(latest, principal);
    const { login, email, full_name, role_id } = body.data;
    if (role_id !== latest.data.role_id) await this.checkRole(role_id, principal);
    return this.unique(() =>
      this.admins.guard(() =>
        this.appendChecked(
          id,
          body,
          async (current) => {
            await this.checkManageable(current, principal);
            if (role_id !== current.data.role_id) await this.checkRole(role_id, principal);
            if (email !== current.data.email) await this.mailer.send(emailChangedMail(current.data, email, principal, this.clock.nowMs()));
            return { data: { ...current.data, login, email, full_name, role_id } };
          },
          principal,
        ),
      ),
    );
  }

  /** Deletes a user and revokes their tokens. A user cannot delete themself. */
  async delete(id: string, principal: Principal): Promise<Stored<UserData>> {
    if (id === principal.user.id) throw conflict('CannotDeleteYourself', 'You cannot delete your own account.');
    return this.admins.guard(async () => {
      const deleted = await this.appendChecked(
        id,
        null,
        async (latest) => {
          await this.checkManageable(latest, principal);
          return { time_deleted: this.now() };
        },
        principal,
      );
      await this.auth.revokeUserTokens(id, this.now());
      await this.auth.dropPasswordResets(id, this.now());
      return deleted;
    });
  }

  /** The live user with this login. */
  byLogin(login: string): Promise<Stored<UserData> | undefined> {
    return this.repo.findLive('login', login);
  }

  /** The latest version of a user, if any. */
  find(id: string): Promise<Stored<UserData> | undefined> {
    return this.repo.get(id);
  }

  /** A role given to a user must exist, and hold nothing the caller does not hold. */
  private async checkRole(roleId: string | null, principal: Principal): Promise<void> {
    if (roleId === null) return;
    const role = await this.roles.live(roleId);
    if (!role) throw new ApiError(400, 'UnknownRoleError', `No live role with id ${roleId}.`);
    const sets = permissionSets(role.data.permissions);
    checkGrantable(principal, [
      { name: 'api', permissions: [...sets.api] },
      { name: 'playbook', permissions: [...sets.playbook] },
    ]);
  }

  /** A user may be changed or deleted only by a caller holding every permission of their role. */
  private async checkManageable(target: Stored<UserData>, principal: Principal): Promise<void> {
    if (target.data.role_id === null) return;
    checkHeld(principal, (await this.roles.find(target.data.role_id))?.data.permissions, 'change or delete a user whose role holds');
  }

  /** Users are unique by login and by e-mail: the answer says which is taken. */
  protected override uniqueMessage(field: string): string {
    return `A user with this ${field === 'email' ? 'e-mail' : 'login'} exists already.`;
  }
}

function welcomeMail(user: UserData, password: string): Mail {
  return {
    to: user.email,
    subject: 'Your Carapace account',
    text: [
      `Hello ${user.full_name || user.login},`,
      '',
      'An account was created for you on Carapace.',
      `Login: ${user.login}`,
      `Password: ${password}`,
      '',
      'Change this password by requesting a password reset.',
    ].join('\n'),
  };
}

/** `jane.doe@example.com` → `j***@example.com`: enough to recognize, not to harvest. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at <= 0) return `${email.slice(0, 1)}***`;
  return `${email.slice(0, 1)}***${email.slice(at)}`;
}

function emailChangedMail(user: UserData, newEmail: string, principal: Principal, nowMs: number): Mail {
  const by = principal.user.data.login === user.login ? 'you (your own account)' : `the user ${principal.user.data.login}`;
  return {
    to: user.email,
    subject: 'Your Carapace e-mail address was changed',
    text: [
      `Hello ${user.full_name || user.login},`,
      '',
      `The e-mail address of your Carapace account ${user.login} was changed to ${maskEmail(newEmail)}`,
      `by ${by} on ${new Date(nowMs).toISOString()}.`,
      'Mail about this account, password resets included, now goes to the new address.',
      '',
      'If you did not expect this change, tell your Carapace administrator at once.',
    ].join('\n'),
  };
}
