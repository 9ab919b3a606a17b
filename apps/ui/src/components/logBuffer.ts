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
  /** How many times it was cleared: a search made before is of another text. */
  private clears = 0;

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
    this.clears++;
  }

  /** Changes each time the buffer is cleared. */
  get generation(): number {
    return this.clears;
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

/** The matches of a search in a {@link LogBuffer}, as of the lines scanned so far. Immutable. */
export interface SearchResult {
  readonly query: string;
  /** The indexes of the lines that match, in order. */
  readonly matches: readonly number[];
  /** How many lines were scanned. */
  readonly scanned: number;
  /** The buffer's generation it was made of. */
  readonly generation: number;
}

/** No search. */
export const NO_SEARCH: SearchResult = { query: '', matches: [], scanned: 0, generation: 0 };

/**
 * The search for `query` in `buffer` as it is now, made from `last` when it searched the same
 * query: only the lines added since are scanned (and the last one again, which may have
 * grown). A new query, or a buffer that was cleared, starts over. `last` is not changed.
 */
export function searchMore(last: SearchResult, buffer: LogBuffer, query: string): SearchResult {
  if (!query) return last.query === '' ? last : NO_SEARCH;
  const start = last.query === query && last.generation === buffer.generation && buffer.lineCount >= last.scanned ? last : { ...NO_SEARCH, query };
  // The last scanned line may have been the unfinished one: look at it again.
  const from = Math.max(0, start.scanned - 1);
  const kept = start.matches.at(-1) === from ? start.matches.slice(0, -1) : start.matches;
  return { query, matches: [...kept, ...buffer.search(query, from)], scanned: buffer.lineCount, generation: buffer.generation };
}
