import type { ModelName } from '@carapace/models';
import { conflict, notFound, UniqueViolation } from '../errors.js';
import type { VersionedRepository } from '../db/versioned.repository.js';
import { mapCursor, type ListCursor, type ListItem, type ListRequest, type Page, type Stored, type StoredText } from '../domain/list-types.js';
import { nowS, type Clock } from '../ports.js';
import type { Principal } from './principal.js';

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

  list(request: ListRequest): Page<Stored<D>> {
    return this.repo.list(request);
  }

  /** Every match of a list (`all`), read in bounded batches as the answer is written. */
  listCursor(request: ListRequest): ListCursor<ListItem<D>> {
    return mapCursor(this.repo.cursor(request), (row) => this.listItem(row));
  }

  /** A list item of a row: the parsed model, to go through the response schema. */
  protected listItem(row: StoredText): ListItem<D> {
    const { id, version, time_updated, time_deleted, initiator_id } = row;
    return { model: { id, version, time_updated, time_deleted, initiator_id, data: JSON.parse(row.data.toString('utf8')) as D } };
  }

  /** The latest version, deleted or not; 404 when the id is unknown. */
  get(id: string): Stored<D> {
    const model = this.repo.get(id);
    if (!model) throw notFound(`No ${this.model} with id ${id}.`);
    return model;
  }

  /** A page of the versions of a model (filtered and sorted; newest first by default); 404 when the id is unknown. */
  versions(id: string, request: ListRequest): Page<Stored<D>> {
    this.get(id);
    return this.repo.listVersions(id, request);
  }

  /** Every matching version of a model (`all`), read in bounded batches; 404 when the id is unknown. */
  versionsCursor(id: string, request: ListRequest): ListCursor<ListItem<D>> {
    this.get(id);
    return mapCursor(this.repo.cursorVersions(id, request), (row) => this.listItem(row));
  }

  version(id: string, version: number): Stored<D> {
    const model = this.repo.getVersion(id, version);
    if (!model) throw notFound(`No version ${version} of ${this.model} ${id}.`);
    return model;
  }

  /** The live (not deleted) latest version of a model, if any. */
  live(id: string): Stored<D> | undefined {
    const model = this.repo.get(id);
    return model && model.time_deleted === 0 ? model : undefined;
  }

  /** Runs a write, turning a taken unique field into 409 ImpossibleToCreateSuchModel. */
  protected unique<T>(fn: () => T): T {
    try {
      return fn();
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
  protected checkUpdatable(id: string, body: Envelope): Stored<D> {
    const latest = this.get(id);
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
    change: (latest: Stored<D>) => { data?: D; time_deleted?: number },
    principal: Principal,
  ): Stored<D> {
    const now = this.now();
    return this.repo.transaction(() => {
      const latest = this.get(id);
      if (latest.time_deleted !== 0) throw conflict('CannotUpdateDeletedModel', `The ${this.model} ${id} is deleted.`);
      if (body) this.checkFresh(latest, body);
      return this.repo.append(latest, change(latest), principal.user.id, now);
    });
  }
}
