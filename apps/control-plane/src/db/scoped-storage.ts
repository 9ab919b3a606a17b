import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * An `AsyncLocalStorage` that is enabled only while one of its `run`s is under way.
 *
 * On Node 20 an `AsyncLocalStorage` that has run once keeps async hooks enabled for good,
 * and from then on every promise of the process pays an init hook that copies the store
 * (`promiseInitHook`, `_propagate`, `lookupPublicResource` in a CPU profile): about 6 % of
 * the CPU of an authenticated GET that never opens a transaction nor a query budget (a
 * profile of `bench:api`'s server). This one disables its storage when its last `run` ends,
 * so the hooks run only while a transaction or a budget is open somewhere; `getStore()`
 * answers undefined outside every `run`, as a store that ended should.
 */
export class ScopedStorage<T> {
  private readonly storage = new AsyncLocalStorage<T>();
  private active = 0;

  /** The store of the caller's `run`, if any. */
  getStore(): T | undefined {
    return this.active === 0 ? undefined : this.storage.getStore();
  }

  /** Runs `fn` with `store` as the store of everything it awaits and starts. */
  async run<R>(store: T, fn: () => Promise<R>): Promise<R> {
    this.active += 1;
    try {
      return await this.storage.run(store, fn);
    } finally {
      this.active -= 1;
      if (this.active === 0) this.storage.disable();
    }
  }
}
