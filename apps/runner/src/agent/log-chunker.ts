/** Default bounds of a log chunk: 32 KiB of text or 100 ms, whichever comes first. */
export const LOG_CHUNK_DEFAULTS = { chars: 32 * 1024, flushMs: 100 } as const;

/**
 * Cuts a run's log text into chunks of at most `maxChars` characters, each sent at most
 * `flushMs` after its first character, numbered by their offset in the whole log.
 */
export class LogChunker {
  private buffer = '';
  private offset = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly maxChars: number,
    private readonly flushMs: number,
    private readonly emit: (offset: number, text: string) => void,
  ) {}

  append(text: string): void {
    if (!text) return;
    this.buffer += text;
    if (this.buffer.length >= this.maxChars) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.flushMs);
  }

  /** Sends everything buffered now. */
  flush(): void {
    this.cancelTimer();
    while (this.buffer) {
      let text = this.buffer.slice(0, this.maxChars);
      // Never split a surrogate pair between two chunks.
      const last = text.charCodeAt(text.length - 1);
      if (text.length === this.maxChars && last >= 0xd800 && last <= 0xdbff) text = text.slice(0, -1);
      this.buffer = this.buffer.slice(text.length);
      const offset = this.offset;
      this.offset += text.length;
      this.emit(offset, text);
    }
  }

  /** Drops the pending flush (the agent stops); buffered text stays until the next append or flush. */
  cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
