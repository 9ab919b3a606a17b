import type { Client, ListParams, Page } from '@carapace/client';
import type { Command } from 'commander';
import type { Cli } from '../context.js';
import { listParams, positiveInt, withListOptions } from '../options.js';

/** The read calls of one versioned model. */
export interface ReadCalls<M> {
  list(client: Client, params: ListParams): Promise<Page<M>>;
  get(client: Client, id: string): Promise<M>;
  versions(client: Client, id: string, params: ListParams): Promise<Page<M>>;
  version(client: Client, id: string, version: number): Promise<M>;
}

/**
 * `noun` with its indefinite article: "an execution", "a server", "a user" (the nouns of
 * the API: a vowel sound only after a, e, i and o).
 */
export function withArticle(noun: string): string {
  return `${/^[aeio]/i.test(noun) ? 'an' : 'a'} ${noun}`;
}

/** How the read commands show what they got (default: `cli.print`). */
export type Show = (command: Command, value: unknown) => void;

/** Prints a list answer: the page envelope when a page was asked for, else the bare items. */
export function showList(cli: Cli, command: Command, page: Page<unknown>, paged: boolean, show: Show = (c, v) => cli.print(c, v)): void {
  show(command, paged ? page : page.items);
}

/**
 * Adds `get-all`, `get`, `get-version-all` and `get-version` for a versioned model.
 * `extend` adds options of the model's own to each of them.
 */
export function addReadCommands<M>(
  group: Command,
  cli: Cli,
  noun: string,
  calls: ReadCalls<M>,
  { show, extend = () => undefined, states = true }: { show?: Show; extend?: (command: Command) => void; states?: boolean } = {},
): void {
  const idArg = `<${noun.replace(/ /g, '-')}-id>`;
  const getAll = withListOptions(group.command('get-all').description(`List the ${noun}s (active ones unless --list says otherwise).`), { states });
  extend(getAll);
  getAll.action(async (_options: unknown, command: Command) => {
    const { params, paged } = listParams(command);
    showList(cli, command, await calls.list(await cli.client(command), params), paged, show);
  });

  const get = group.command('get').description(`Show the latest version of ${withArticle(noun)}.`).argument(idArg);
  extend(get);
  get.action(async (id: string, _options: unknown, command: Command) => {
    (show ?? ((c, v) => cli.print(c, v)))(command, await calls.get(await cli.client(command), id));
  });

  const versions = withListOptions(group.command('get-version-all').description(`List the versions of ${withArticle(noun)}, newest first.`).argument(idArg), { states: false });
  extend(versions);
  versions.action(async (id: string, _options: unknown, command: Command) => {
    const { params, paged } = listParams(command);
    showList(cli, command, await calls.versions(await cli.client(command), id, params), paged, show);
  });

  const version = group.command('get-version').description(`Show one version of ${withArticle(noun)}.`).argument(idArg).argument('<version>', 'version number', positiveInt);
  extend(version);
  version.action(async (id: string, number: number, _options: unknown, command: Command) => {
    (show ?? ((c, v) => cli.print(c, v)))(command, await calls.version(await cli.client(command), id, number));
  });
}

/** Adds `delete <id>`: marks a model deleted and prints it. */
export function addDeleteCommand<M>(group: Command, cli: Cli, noun: string, remove: (client: Client, id: string) => Promise<M>): void {
  group
    .command('delete')
    .description(`Delete ${withArticle(noun)}: it is marked deleted (its versions stay readable) and printed.`)
    .argument(`<${noun.replace(/ /g, '-')}-id>`)
    .action(async (id: string, _options: unknown, command: Command) => {
      cli.print(command, await remove(await cli.client(command), id));
    });
}
