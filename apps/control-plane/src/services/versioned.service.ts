import type { ModelName } from '@carapace/models';
import { conflict, notFound, UniqueViolation } from '../errors.js';
import type { Condition } from '../db/condition.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import { mapCursor, type ListCursor, type ListItem, type ListRequest, type Page, type Stored, type StoredText } from '../domain/list-types.js';
import { nowS, type Clock } from '../ports.js';
import type { Principal } from '../accounts/principal.js';

/** The envelope of a PUT body: the model as the caller last read it. */
export interface Envelope<D = unknown> {
  readonly id: string;
  readonly model: string;
  readonly version: number;
  readonly time_updated: number;
  readonly time_deleted: number;
  readonly initiator_id: string | null;
  readonly data: D;
}

/** What every versioned model service does: reads, and the checks around changes (api-v1 §5). */
export class VersionedService<D> {
  constructor(
    readonly model: ModelName,
    protected readonly repo: VersionedRepository<D>,
    protected readonly clock: Clock,
  ) {}

  list(request: ListRequest): Promise<Page<Stored<D>>> {
    return this.repo.list(request);
  }

  /** Every match of a list (`all`), read in bounded batches as the answer is written. */
  async listCursor(request: ListRequest): Promise<ListCursor<ListItem<D>>> {
    return mapCursor(await this.repo.cursor(request), (row) => this.listItem(row));
  }

  /** A list item of a row: the parsed model, to go through the response schema. */
  protected listItem(row: StoredText): ListItem<D> {
    const { id, version, time_updated, time_deleted, initiator_id } = row;
    return { model: { id, version, time_updated, time_deleted, initiator_id, data: JSON.parse(row.data.toString('utf8')) as D } };
  }

  /** The latest version, deleted or not; 404 when the id is unknown. */
  async get(id: string): Promise<Stored<D>> {
    const model = await this.repo.get(id);
    if (!model) throw notFound(`No ${this.model} with id ${id}.`);
    return model;
  }

  /** The latest version, locked until the caller's transaction ends (`VersionedRepository.getForUpdate`); 404 when the id is unknown. */
  protected async getForUpdate(id: string): Promise<Stored<D>> {
    const model = await this.repo.getForUpdate(id);
    if (!model) throw notFound(`No ${this.model} with id ${id}.`);
    return model;
  }

  /** A page of the versions of a model (filtered and sorted; newest first by default); 404 when the id is unknown. */
  async versions(id: string, request: ListRequest): Promise<Page<Stored<D>>> {
    await this.get(id);
    return this.repo.listVersions(id, request);
  }

  /** Every matching version of a model (`all`), read in bounded batches; 404 when the id is unknown. */
  async versionsCursor(id: string, request: ListRequest): Promise<ListCursor<ListItem<D>>> {
    await this.get(id);
    return mapCursor(await this.repo.cursorVersions(id, request), (row) => this.listItem(row));
  }

  async version(id: string, version: number): Promise<Stored<D>> {
    const model = await this.repo.getVersion(id, version);
    if (!model) throw notFound(`No version ${version} of ${this.model} ${id}.`);
    return model;
  }

  /** A condition for a statement (`VersionedRepository.createIf`): the model `id` is live. */
  liveCondition(id: string): Condition {
    return this.repo.liveCondition(id);
  }

  /** The live (not deleted) latest version of a model, if any. */
  async live(id: string): Promise<Stored<D> | undefined> {
    return this.repo.getLive(id);
  }

  /** Runs a write, turning a taken unique field into 409 ImpossibleToCreateSuchModel. */
  protected async unique<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof UniqueViolation) throw conflict('ImpossibleToCreateSuchModel', this.uniqueMessage(e.field));
      throw e;
    }
  }

  /** What a 409 for a taken unique field says; models unique by more than their name say which. */
  protected uniqueMessage(_field: string): string {
    return `A ${this.model} with this name exists already.`;
  }

  protected now(): number {
    return nowS(this.clock);
  }

  /** Checks the envelope of a PUT against the path and the stored latest version; returns that version. */
  protected async checkUpdatable(id: string, body: Envelope): Promise<Stored<D>> {
    const latest = await this.get(id);
    if (latest.time_deleted !== 0) throw conflict('CannotUpdateDeletedModel', `The ${this.model} ${id} is deleted.`);
    if (body.id !== id || body.model !== this.model) {
      throw conflict('CannotUpdateManagedFieldsError', 'The id and model of the body must be those of the path.');
    }
    this.checkFresh(latest, body);
    return latest;
  }

  /** Refuses a body whose envelope is not the stored latest one (optimistic concurrency). */
  protected checkFresh(latest: Stored<D>, body: Envelope): void {
    if (
      latest.version !== body.version ||
      latest.time_updated !== body.time_updated ||
      latest.time_deleted !== body.time_deleted ||
      latest.initiator_id !== body.initiator_id
    ) {
      throw conflict(
        'CannotUpdateManagedFieldsError',
        `The ${this.model} ${latest.id} has changed since it was read (stored version ${latest.version}): read it again.`,
      );
    }
  }

  /**
   * Appends the next version in one transaction, re-checking inside it that the envelope is
   * still the latest, then running `guard` (which may throw) on the latest version.
   */
  protected appendChecked(
    id: string,
    body: Envelope | null,
    change: (latest: Stored<D>) => { data?: D; time_deleted?: number } | Promise<{ data?: D; time_deleted?: number }>,
    principal: Principal,
  ): Promise<Stored<D>> {
    const now = this.now();
    return this.repo.transaction(async () => {
      const latest = await this.getForUpdate(id);
      if (latest.time_deleted !== 0) throw conflict('CannotUpdateDeletedModel', `The ${this.model} ${id} is deleted.`);
      if (body) this.checkFresh(latest, body);
      return this.repo.append(latest, await change(latest), principal.user.id, now);
    });
  }
}
