/** A tiny typed event: listeners are called synchronously, in order, and never throw out. */
export class Signal<T> {
  private readonly listeners = new Set<(value: T) => void>();

  /** Adds a listener; returns its removal. */
  on(listener: (value: T) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(value: T): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(value);
      } catch {
        // A listener's failure is its own; the emitter goes on.
      }
    }
  }
}

/**
 * A typed event whose listeners may be asynchronous: `emit` calls them in order and waits
 * for each, so that an emitter inside a transaction has their writes in it. A listener's
 * failure is its own: the emitter goes on.
 */
export class AsyncSignal<T> {
  private readonly listeners = new Set<(value: T) => Promise<void> | void>();

  /** Adds a listener; returns its removal. */
  on(listener: (value: T) => Promise<void> | void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async emit(value: T): Promise<void> {
    for (const listener of [...this.listeners]) {
      try {
        await listener(value);
      } catch {
        // A listener's failure is its own; the emitter goes on.
      }
    }
  }
}
