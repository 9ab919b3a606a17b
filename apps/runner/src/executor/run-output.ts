// What ansible-playbook writes while it runs: stdout and stderr become log text, the
// callback plugin's pipe becomes steps and the final stats; both feed the failure reason.
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { assertNever } from '../state-machine.js';
import { parseEventLine, summarizeStats, type StatsEvent } from './events.schema.js';
import type { RunSink } from './executor.types.js';
import { LineSplitter } from './line-splitter.js';

// The plugin caps a step's error at 64 KiB; anything far longer is not one of its lines.
const MAX_EVENT_LINE_CHARS = 1024 * 1024;

// What ansible-playbook's exit codes mean (used when neither the stats nor an ERROR line say).
const EXIT_MEANINGS: Readonly<Record<number, string>> = {
  1: 'error',
  2: 'one or more hosts failed',
  3: 'one or more hosts unreachable',
  4: 'one or more hosts unreachable, or a parser error',
  5: 'bad or incomplete options',
  99: 'interrupted',
  250: 'unexpected error',
};

/** The output of one ansible-playbook run, delivered to its sink as it comes. */
export class RunOutput {
  private stats: StatsEvent | null = null;
  private lastErrorLine: string | null = null;

  constructor(
    private readonly sink: RunSink,
    /** Writes a note of the runner to the log. */
    private readonly note: (text: string) => void,
  ) {}

  /** Why a run that exited with `code` (not 0) failed: the stats, else Ansible's last ERROR line, else the code's meaning. */
  failureDetail(code: number): string {
    return (this.stats && summarizeStats(this.stats)) ?? this.lastErrorLine ?? EXIT_MEANINGS[code] ?? 'no reason given';
  }

  // stdout and stderr go to the log in arrival order, each decoded on its own so that a
  // character split between two chunks arrives whole. Returns the flush of the tail.
  pipeLog(stream: Readable | null): () => void {
    if (stream === null) return () => undefined;
    const decoder = new StringDecoder('utf8');
    const lines = new LineSplitter((line) => this.noticeErrorLine(line), 4096);
    const deliver = (text: string): void => {
      if (text.length === 0) return;
      this.sink.log(text);
      lines.push(text);
    };
    let flushed = false;
    const flush = (): void => {
      if (flushed) return;
      flushed = true;
      deliver(decoder.end());
      lines.end();
    };
    stream.on('data', (chunk: Buffer) => deliver(decoder.write(chunk)));
    stream.once('end', flush);
    // a broken pipe ends the stream; 'close' follows
    stream.on('error', () => undefined);
    return flush;
  }

  /** The callback plugin's JSON lines: steps to the sink, stats kept. Returns the flush of the tail. */
  pipeEvents(stream: Readable | null): () => void {
    if (stream === null) {
      this.note('no events pipe: steps will be missing');
      return () => undefined;
    }
    const decoder = new StringDecoder('utf8');
    const lines = new LineSplitter(
      (line) => this.onEventLine(line),
      MAX_EVENT_LINE_CHARS,
      (head) => this.note(`ignored an event line longer than ${MAX_EVENT_LINE_CHARS} characters: ${preview(head)}`),
    );
    let flushed = false;
    const flush = (): void => {
      if (flushed) return;
      flushed = true;
      lines.push(decoder.end());
      lines.end();
    };
    stream.on('data', (chunk: Buffer) => lines.push(decoder.write(chunk)));
    stream.once('end', flush);
    stream.on('error', () => undefined);
    return flush;
  }

  private onEventLine(line: string): void {
    if (line.trim().length === 0) return;
    const parsed = parseEventLine(line);
    switch (parsed.kind) {
      case 'step':
        this.sink.step(parsed.step);
        return;
      case 'stats':
        this.stats = parsed.stats;
        return;
      case 'other':
        return;
      case 'malformed':
        this.note(`ignored a malformed event line (${parsed.problem}): ${preview(line)}`);
        return;
      default:
        assertNever(parsed);
    }
  }

  // Ansible's fatal errors ("ERROR! the playbook: x could not be found") make the best
  // failure reason when no host result explains the exit.
  private noticeErrorLine(line: string): void {
    const match = /^(?:ERROR!|\[ERROR\]:)\s*(.+)$/.exec(line.trim());
    if (match?.[1]) this.lastErrorLine = `ERROR! ${match[1]}`.slice(0, 500);
  }
}

// A line quoted for the log: one line, at most 200 characters of it.
function preview(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}
