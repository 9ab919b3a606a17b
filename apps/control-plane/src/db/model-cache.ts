import type { Stored } from '../domain/list-types.js';

/**
 * Models kept in memory by a key, at most `max` of them (the oldest kept goes first). What
 * it holds is frozen, model and data, since every reader gets the same object.
 */
export class ModelCache<D> {
  private readonly models = new Map<string, Stored<D>>();

  constructor(private readonly max: number) {}

  get(key: string): Stored<D> | undefined {
    return this.models.get(key);
  }

  set(key: string, model: Stored<D>): void {
    if (this.models.size >= this.max) {
      const oldest = this.models.keys().next();
      if (!oldest.done) this.models.delete(oldest.value);
    }
    Object.freeze(model.data);
    this.models.set(key, Object.freeze(model));
  }

  clear(): void {
    this.models.clear();
  }
}
