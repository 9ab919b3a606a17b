// Cuts decoded text into lines as it arrives, holding back the unfinished last line.

/** Splits text on `\n`; a line longer than `maxLineChars` is dropped and reported. */
export class LineSplitter {
  private partial = '';
  private overflowing = false;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLineChars: number,
    private readonly onOverflow: (head: string) => void = () => undefined,
  ) {}

  push(text: string): void {
    let start = 0;
    for (let nl = text.indexOf('\n', start); nl !== -1; nl = text.indexOf('\n', start)) {
      const piece = text.slice(start, nl);
      start = nl + 1;
      if (this.overflowing) {
        this.overflowing = false;
        this.partial = '';
        continue;
      }
      const line = this.partial + piece;
      this.partial = '';
      if (line.length > this.maxLineChars) this.onOverflow(line.slice(0, 200));
      else this.onLine(line);
    }
    if (this.overflowing) return;
    this.partial += text.slice(start);
    if (this.partial.length > this.maxLineChars) {
      this.onOverflow(this.partial.slice(0, 200));
      this.overflowing = true;
      this.partial = '';
    }
  }

  /** Delivers an unfinished last line, if any. */
  end(): void {
    const line = this.partial;
    this.partial = '';
    if (!this.overflowing && line.length > 0) this.onLine(line);
    this.overflowing = false;
  }
}
