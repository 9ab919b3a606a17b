import type { ListParams } from '@carapace/client';
import { InvalidArgumentError, Option, type Command } from 'commander';

/** Parses a whole number ≥ 1 (commander option/argument parser). */
export function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('a whole number of at least 1 is expected.');
  return Number(value);
}

/** Parses a number of seconds > 0. */
export function seconds(value: string): number {
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || !(n > 0)) throw new InvalidArgumentError('a number of seconds above 0 is expected.');
  return n;
}

/** Parses a JSON value. */
export function json(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw new InvalidArgumentError('valid JSON is expected.');
  }
}

/** Parses a JSON object. */
export function jsonObject(value: string): Record<string, unknown> {
  const parsed = json(value);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError('a JSON object is expected.');
  return parsed as Record<string, unknown>;
}

/** Parses a comma-separated list (empty items dropped). */
export function csv(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Parses `--sort-by name,-version`: `-` before a field sorts it descending, `+` (or nothing) ascending. */
export function sortBy(value: string): Record<string, 1 | -1> {
  const sort: Record<string, 1 | -1> = {};
  for (const field of csv(value)) {
    const name = field.replace(/^[+-]/, '');
    if (!/^[A-Za-z0-9_.]+$/.test(name)) throw new InvalidArgumentError(`"${field}" is not a field name.`);
    sort[name] = field.startsWith('-') ? -1 : 1;
  }
  return sort;
}

/** The list options a command was given. */
interface ListOptions {
  page?: number;
  perPage?: number;
  all?: boolean;
  list?: 'active' | 'archived' | 'all';
  sortBy?: Record<string, 1 | -1>;
}

/**
 * Adds the list options: `--page`, `--per-page`, `--all`, `--sort-by`, and with `states`
 * `--list active|archived|all`.
 */
export function withListOptions(command: Command, { states = true }: { states?: boolean } = {}): Command {
  command
    .option('--page <n>', 'show this page (from 1); prints the page envelope', positiveInt)
    .option('--per-page <n>', 'items per page; prints the page envelope', positiveInt)
    .option('--all', 'every item (the default unless --page or --per-page is given)')
    .option('--sort-by <fields>', 'comma-separated fields to sort by; "-" before a field for descending, e.g. "-time_updated,name"', sortBy);
  if (states) command.addOption(new Option('--list <which>', 'which models to list').choices(['active', 'archived', 'all']).default('active'));
  return command;
}

/**
 * The query of a list command, and whether to print the page envelope (only when a page was
 * asked for with `--page` or `--per-page`; otherwise every item, as a bare list).
 */
export function listParams(command: Command): { params: ListParams; paged: boolean } {
  const options = command.opts<ListOptions>();
  const paged = !options.all && (options.page !== undefined || options.perPage !== undefined);
  const params: ListParams = paged ? { page: options.page ?? 1, perPage: options.perPage } : { all: true };
  if (options.sortBy) params.sortBy = options.sortBy;
  if (options.list === 'archived') params.filter = { time_deleted: { ne: 0 } };
  if (options.list === 'all') params.filter = { time_deleted: { gte: 0 } };
  return { params, paged };
}
