import type { AdministratorRepository } from '../db/administrator.repository.js';
import { conflict } from '../errors.js';
import { holdsEverything } from './principal.js';

/**
 * The guards that keep the service administrable: some live user keeps holding every
 * permission, and the bootstrap role (`wheel`) keeps every permission.
 */
export class Administrators {
  private bootstrapRole: string | undefined;

  constructor(private readonly repo: AdministratorRepository) {}

  /** How many live users have a role holding every permission. */
  async count(): Promise<number> {
    const full = (await this.repo.liveRoles()).filter((r) => holdsEverything(r.permissions));
    return this.repo.countLiveUsersWithRoles(full.map((r) => r.id));
  }

  /**
   * Runs `change` in a transaction (a savepoint within the caller's) and refuses it (409,
   * rolled back) when it leaves no live user holding every permission where there was one.
   * The count, the change and the count again are one transaction, which no other guarded
   * change runs beside (`AdministratorRepository.serialize`): no concurrent change can slip
   * between them, whichever replica makes it.
   */
  guard<T>(change: () => Promise<T>): Promise<T> {
    return this.repo.transaction(async () => {
      await this.repo.serialize();
      const before = await this.count();
      const result = await change();
      if (before > 0 && (await this.count()) === 0) {
        throw conflict(
          'CannotRemoveLastAdministrator',
          'This would leave no live user holding every permission: give another user such a role first.',
        );
      }
      return result;
    });
  }

  /** Whether `roleId` is the role the first start created. */
  async isBootstrapRole(roleId: string): Promise<boolean> {
    this.bootstrapRole ??= await this.repo.bootstrapRoleId();
    return this.bootstrapRole === roleId;
  }
}
