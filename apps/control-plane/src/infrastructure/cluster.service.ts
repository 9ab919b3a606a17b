import type { ClusterCreate, ClusterData, ClusterUpdate } from '@carapace/models';
import type { VersionedRepository } from '../db/versioned.repository.js';
import type { Stored } from '../domain/list-types.js';
import { conflict } from '../errors.js';
import type { Clock } from '../ports.js';
import type { Principal } from '../accounts/principal.js';
import { VersionedService } from '../services/versioned.service.js';

/** Clusters: unique names, and no deletion while servers are in them. */
export class ClusterService extends VersionedService<ClusterData> {
  constructor(
    repo: VersionedRepository<ClusterData>,
    clock: Clock,
    private readonly countServers: (clusterId: string) => Promise<number>,
  ) {
    super('cluster', repo, clock);
  }

  create(body: ClusterCreate, principal: Principal): Promise<Stored<ClusterData>> {
    return this.unique(() => this.repo.create({ name: body.name, configuration: {} }, principal.user.id, this.now()));
  }

  async update(id: string, body: ClusterUpdate, principal: Principal): Promise<Stored<ClusterData>> {
    await this.checkUpdatable(id, body);
    return this.unique(() => this.appendChecked(id, body, (latest) => ({ data: { ...latest.data, name: body.data.name } }), principal));
  }

  delete(id: string, principal: Principal): Promise<Stored<ClusterData>> {
    return this.appendChecked(
      id,
      null,
      async (latest) => {
        if ((await this.countServers(id)) > 0 || Object.values(latest.data.configuration).some((members) => members.length > 0)) {
          throw conflict('CannotDeleteClusterWithServers', `The cluster ${id} still has servers: purge it first.`);
        }
        return { time_deleted: this.now() };
      },
      principal,
    );
  }
}
