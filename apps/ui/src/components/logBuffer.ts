/**
 * The text of a log kept as an array of lines, for a virtualised view: appending a chunk
 * touches only the last line and pushes the new ones, so 200,000 lines stay cheap.
 */

// Colour and cursor escape sequences (CSI ... letter) that a terminal would interpret.
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

/** Removes terminal escape sequences and a trailing carriage return from a line. */
export function cleanLine(line: string): string {
  const noAnsi = line.includes('\u001b') ? line.replace(ANSI, '') : line;
  return noAnsi.endsWith('\r') ? noAnsi.slice(0, -1) : noAnsi;
}

export class LogBuffer {
  /** Complete lines (without their newline), cleaned for display. */
  private readonly lines: string[] = [];
  /** The raw text after the last newline (an unfinished line). */
  private partial = '';
  /** Characters received so far. */
  private received = 0;

  /** Adds a chunk of text as it arrives; returns the number of lines now. */
  append(text: string): number {
    if (!text) return this.lineCount;
    this.received += text.length;
    let start = 0;
    for (;;) {
      const end = text.indexOf('\n', start);
      if (end === -1) {
        this.partial += text.slice(start);
        break;
      }
      const raw = this.partial + text.slice(start, end);
      this.partial = '';
      this.lines.push(cleanLine(raw));
      start = end + 1;
    }
    return this.lineCount;
  }

  /** Forgets everything. */
  clear(): void {
    this.lines.length = 0;
    this.partial = '';
    this.received = 0;
  }

  /** How many lines there are, the unfinished last one included. */
  get lineCount(): number {
    return this.lines.length + (this.partial ? 1 : 0);
  }

  /** Characters received so far. */
  get length(): number {
    return this.received;
  }

  /** The line at `index` (0-based), cleaned; '' out of range. */
  line(index: number): string {
    if (index < this.lines.length) return this.lines[index] ?? '';
    if (index === this.lines.length && this.partial) return cleanLine(this.partial);
    return '';
  }

  /** The whole text (cleaned lines joined by newlines). */
  text(): string {
    const body = this.lines.join('\n');
    if (!this.lines.length) return this.partial ? cleanLine(this.partial) : '';
    return this.partial ? `${body}\n${cleanLine(this.partial)}` : `${body}\n`;
  }

  /**
   * The indexes of the lines from `from` (inclusive) that contain `query`, case-insensitive,
   * at most `limit` of them. The unfinished last line is searched too.
   */
  search(query: string, from = 0, limit = 100_000): number[] {
    const found: number[] = [];
    if (!query) return found;
    const needle = query.toLowerCase();
    const count = this.lineCount;
    for (let i = Math.max(0, from); i < count && found.length < limit; i++) {
      if (this.line(i).toLowerCase().includes(needle)) found.push(i);
    }
    return found;
  }
}

/** Splits `line` around the case-insensitive occurrences of `query`, for highlighting. */
export function splitMatches(line: string, query: string): { text: string; match: boolean }[] {
  if (!query) return [{ text: line, match: false }];
  const lower = line.toLowerCase();
  const needle = query.toLowerCase();
  const parts: { text: string; match: boolean }[] = [];
  let at = 0;
  for (;;) {
    const hit = lower.indexOf(needle, at);
    if (hit === -1) break;
    if (hit > at) parts.push({ text: line.slice(at, hit), match: false });
    parts.push({ text: line.slice(hit, hit + needle.length), match: true });
    at = hit + needle.length;
  }
  if (at < line.length || !parts.length) parts.push({ text: line.slice(at), match: false });
  return parts;
}

/**
 * Incremental search over a growing {@link LogBuffer}: {@link update} scans only the lines
 * added since the last call (and the last line again, which may have grown).
 */
export class LogSearch {
  query = '';
  matches: number[] = [];
  private scanned = 0;

  /** Sets the query (restarting when it changed) and scans the new lines; returns the matches. */
  update(buffer: LogBuffer, query: string): number[] {
    if (query !== this.query) {
      this.query = query;
      this.matches = [];
      this.scanned = 0;
    }
    if (!query) return this.matches;
    // The last scanned line may have been the unfinished one: look at it again.
    const from = Math.max(0, this.scanned - 1);
    if (this.matches.length && this.matches[this.matches.length - 1] === from) this.matches.pop();
    this.matches.push(...buffer.search(query, from));
    this.scanned = buffer.lineCount;
    return this.matches;
  }
}
