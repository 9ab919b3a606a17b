import type { UserCreate, UserData, UserUpdate } from '@carapace/models';
import type { AuthRepository } from '../db/auth.repository.js';
import type { Stored, VersionedRepository } from '../db/versioned.repository.js';
import { ApiError, conflict, UniqueViolation } from '../errors.js';
import type { Clock, Mailer } from '../ports.js';
import { generatePassword, hashPassword } from './passwords.js';
import { permissionSets, type Principal } from './principal.js';
import { checkGrantable, type RoleService } from './role.service.js';
import { VersionedService } from './versioned.service.js';

/** Users: uniqueness of login and e-mail, roles, generated passwords, token revocation. */
export class UserService extends VersionedService<UserData> {
  constructor(
    repo: VersionedRepository<UserData>,
    clock: Clock,
    private readonly auth: AuthRepository,
    private readonly roles: RoleService,
    private readonly mailer: Mailer,
  ) {
    super('user', repo, clock);
  }

  /** Creates a user with a generated password, e-mailed to them. */
  async create(body: UserCreate, principal: Principal): Promise<Stored<UserData>> {
    const roleId = body.role_id ?? null;
    this.checkRole(roleId, principal);
    const password = generatePassword();
    const hash = await hashPassword(password);
    const data: UserData = { login: body.login, email: body.email, full_name: body.full_name ?? '', role_id: roleId };
    const user = this.unique(() =>
      this.repo.transaction(() => {
        this.checkRole(roleId, principal);
        const created = this.repo.create(data, principal.user.id, this.now());
        this.auth.setPasswordHash(created.id, hash, this.now());
        return created;
      }),
    );
    this.mailer.send({
      to: user.data.email,
      subject: 'Your Carapace account',
      text: [
        `Hello ${user.data.full_name || user.data.login},`,
        '',
        'An account was created for you on Carapace.',
        `Login: ${user.data.login}`,
        `Password: ${password}`,
        '',
        'Change this password by requesting a password reset.',
      ].join('\n'),
    });
    return user;
  }

  update(id: string, body: UserUpdate, principal: Principal): Stored<UserData> {
    const latest = this.checkUpdatable(id, body);
    const { login, email, full_name, role_id } = body.data;
    if (role_id !== latest.data.role_id) this.checkRole(role_id, principal);
    return this.unique(() =>
      this.appendChecked(
        id,
        body,
        (current) => {
          if (role_id !== current.data.role_id) this.checkRole(role_id, principal);
          return { data: { ...current.data, login, email, full_name, role_id } };
        },
        principal,
      ),
    );
  }

  /** Deletes a user and revokes their tokens. A user cannot delete themself. */
  delete(id: string, principal: Principal): Stored<UserData> {
    if (id === principal.user.id) throw conflict('CannotDeleteYourself', 'You cannot delete your own account.');
    return this.repo.transaction(() => {
      const deleted = this.appendChecked(id, null, () => ({ time_deleted: this.now() }), principal);
      this.auth.revokeUserTokens(id, this.now());
      this.auth.dropPasswordResets(id, this.now());
      return deleted;
    });
  }

  /** The live user with this login. */
  byLogin(login: string): Stored<UserData> | undefined {
    return this.repo.findLive('login', login);
  }

  /** The latest version of a user, if any. */
  find(id: string): Stored<UserData> | undefined {
    return this.repo.get(id);
  }

  /** How many live users have this role. */
  countWithRole(roleId: string): number {
    return this.repo.countLive('role_id', roleId);
  }

  /** A role given to a user must exist, and hold nothing the caller does not hold. */
  private checkRole(roleId: string | null, principal: Principal): void {
    if (roleId === null) return;
    const role = this.roles.live(roleId);
    if (!role) throw new ApiError(400, 'UnknownRoleError', `No live role with id ${roleId}.`);
    const sets = permissionSets(role.data.permissions);
    checkGrantable(principal, [
      { name: 'api', permissions: [...sets.api] },
      { name: 'playbook', permissions: [...sets.playbook] },
    ]);
  }

  private unique<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      if (e instanceof UniqueViolation) {
        throw conflict('ImpossibleToCreateSuchModel', `A user with this ${e.field === 'email' ? 'e-mail' : 'login'} exists already.`);
      }
      throw e;
    }
  }
}
