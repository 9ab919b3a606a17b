import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';

/**
 * What a prompt needs of the command line (`Cli` is one): its terminal streams and its stdin
 * read whole. Declared here, not taken from context.ts, which imports this module.
 */
export interface PromptIo {
  readonly io: {
    readonly stdin: NodeJS.ReadableStream;
    readonly stderr: NodeJS.WritableStream;
  };
  readStdin(): Promise<string>;
}

/** Asks for a line on the terminal; with `hidden`, without echoing what is typed. */
export async function ask(cli: PromptIo, prompt: string, { hidden = false }: { hidden?: boolean } = {}): Promise<string> {
  const output = hidden ? new Writable({ write: (_chunk, _encoding, done) => done() }) : cli.io.stderr;
  // The interface first: it puts a terminal in raw mode (no echo), so a password typed as soon
  // as the prompt shows is never echoed by the terminal.
  const rl = createInterface({ input: cli.io.stdin, output, terminal: true });
  cli.io.stderr.write(prompt);
  try {
    return await new Promise<string>((resolve) => rl.once('line', resolve));
  } finally {
    rl.close();
    if (hidden) cli.io.stderr.write('\n');
  }
}

/** The first line of stdin (read to its end), without its line break. */
export async function firstLine(cli: PromptIo): Promise<string> {
  return (await cli.readStdin()).split(/\r?\n/)[0] ?? '';
}
