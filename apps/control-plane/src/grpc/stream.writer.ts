/** What a writer needs of a stream: a gRPC server stream is one. */
export interface DrainableStream<T> {
  write(message: T): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

/**
 * Writes messages to one stream in order, honouring backpressure: once `write()` returns
 * false, later messages wait in a queue until the stream emits `drain` (the runner agent does
 * the same on its side).
 */
export class StreamWriter<T> {
  private readonly queue: T[] = [];
  private waiting = false;

  constructor(
    private readonly stream: DrainableStream<T>,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Messages waiting for `drain`. */
  get queued(): number {
    return this.queue.length;
  }

  /** Writes a message now, or queues it behind the earlier ones; false when the stream refused it. */
  write(message: T): boolean {
    if (this.waiting) {
      this.queue.push(message);
      return true;
    }
    return this.send(message);
  }

  private send(message: T): boolean {
    try {
      if (!this.stream.write(message)) {
        this.waiting = true;
        this.stream.once('drain', () => this.flush());
      }
      return true;
    } catch (err) {
      this.onError(err);
      return false;
    }
  }

  private flush(): void {
    this.waiting = false;
    while (!this.waiting && this.queue.length > 0) this.send(this.queue.shift() as T);
  }
}
