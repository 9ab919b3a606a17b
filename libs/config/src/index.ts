import { readFileSync } from 'node:fs';
import { Type, type TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { isMap, isNode, parse as parseYaml, parseDocument, type Document } from 'yaml';

/** Environment variables, as `process.env` holds them. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Makes the caller's error for an unusable configuration (`ConfigError`, `RunnerConfigError`). */
export type ConfigErrorFactory = (message: string) => Error;

/** Whether `value` is a plain mapping (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const TRUE = /^(1|y|yes|t|true|on)$/i;
const FALSE = /^(0|n|no|f|false|off)$/i;

/**
 * The boolean a word stands for, in any case: `1 y yes t true on` are true, `0 n no f false off`
 * are false; anything else is undefined. The one vocabulary of boolean environment variables
 * and query-string parameters.
 */
export function parseBoolean(raw: string): boolean | undefined {
  if (TRUE.test(raw)) return true;
  if (FALSE.test(raw)) return false;
  return undefined;
}

/**
 * Reads a YAML configuration file that must hold a mapping (an empty file is `{}`). Throws
 * `error(...)` naming the file when it cannot be read, is not YAML or holds something else.
 */
export function readYamlMapping(file: string, error: ConfigErrorFactory): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw error(`cannot read configuration file ${file}: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text) ?? {};
  } catch (e) {
    throw error(`configuration file ${file} is not valid YAML: ${(e as Error).message}`);
  }
  if (!isRecord(parsed)) throw error(`configuration file ${file} must hold a mapping`);
  return parsed;
}

function getPath(source: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((node, part) => (isRecord(node) ? node[part] : undefined), source);
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    if (!isRecord(node[part])) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1) as string] = value;
}

/**
 * The layer of environment variables: for each set, non-empty variable of `keys` (name →
 * dotted key), its value at that key. `parse` may take a variable whose value is not a plain
 * one (a list, labels) by returning something other than undefined; otherwise the type of
 * the key's default decides: a whole number, a boolean word (`parseBoolean`), else the text.
 */
export function envLayer(
  env: Env,
  keys: Readonly<Record<string, string>>,
  defaults: unknown,
  error: ConfigErrorFactory,
  parse?: (path: string, raw: string) => unknown,
): Record<string, unknown> {
  const layer: Record<string, unknown> = {};
  for (const [name, path] of Object.entries(keys)) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    setPath(layer, path, envValue(name, path, raw, defaults, error, parse));
  }
  return layer;
}

function envValue(name: string, path: string, raw: string, defaults: unknown, error: ConfigErrorFactory, parse?: (path: string, raw: string) => unknown): unknown {
  const special = parse?.(path, raw);
  if (special !== undefined) return special;
  const def = getPath(defaults, path);
  if (typeof def === 'number') {
    if (!/^\d+$/.test(raw)) throw error(`${name} must be a whole number, not "${raw}"`);
    return Number(raw);
  }
  if (typeof def === 'boolean') {
    const value = parseBoolean(raw);
    if (value === undefined) throw error(`${name} must be true or false, not "${raw}"`);
    return value;
  }
  return raw;
}

function merge(base: unknown, over: unknown): unknown {
  if (!isRecord(base) || !isRecord(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = merge(base[k], v);
  return out;
}

/**
 * Deep-merges configuration layers, later ones over earlier ones: mappings merge key by
 * key; any other value (arrays included) replaces; undefined leaves the value below.
 */
export function mergeLayers(...layers: readonly unknown[]): unknown {
  return layers.reduce((merged, layer) => merge(merged, layer), {});
}

/** The first way `value` breaks `schema`, as `at /path: message`, or null when it fits. */
export function schemaProblem(schema: TSchema, value: unknown): string | null {
  const [first] = Value.Errors(schema, value);
  return first ? `at ${first.instancePath || '/'}: ${first.message}` : null;
}

/** Freezes `value` and every mapping and array inside it. */
export function deepFreeze<T>(value: T): T {
  if (isRecord(value) || Array.isArray(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** The log levels both programs accept (pino's names). */
export const LogLevelSchema = Type.Union([
  Type.Literal('fatal'),
  Type.Literal('error'),
  Type.Literal('warn'),
  Type.Literal('info'),
  Type.Literal('debug'),
  Type.Literal('trace'),
  Type.Literal('silent'),
]);

/** How logs are written: `auto` (coloured lines on a terminal, JSON lines otherwise), `json` or `pretty`. */
export const LogFormatSchema = Type.Union([Type.Literal('auto'), Type.Literal('json'), Type.Literal('pretty')]);

/**
 * The YAML text `text` with each dotted key of `values` set (a mapping made where missing; an
 * undefined value removes the key), keeping every other key and the comments. Throws
 * `error(...)` when the text is not YAML or does not hold a mapping.
 */
export function setYamlValues(text: string, values: Readonly<Record<string, unknown>>, error: ConfigErrorFactory): string {
  const doc: Document = parseDocument(text);
  if (doc.errors.length > 0) throw error(`not valid YAML: ${doc.errors[0]?.message ?? ''}`);
  if (doc.contents === null) doc.contents = doc.createNode({});
  if (!isMap(doc.contents)) throw error('the YAML must hold a mapping');
  for (const [key, value] of Object.entries(values)) {
    const path = key.split('.');
    if (value === undefined) {
      if (doc.hasIn(path)) doc.deleteIn(path);
      continue;
    }
    // A mapping where the path goes through a scalar or nothing (`tls: null`).
    for (let depth = 1; depth < path.length; depth += 1) {
      if (!isMap(doc.getIn(path.slice(0, depth), true))) doc.setIn(path.slice(0, depth), doc.createNode({}));
    }
    // The new value keeps the comments of the one it replaces (`key: value # comment`).
    const before: unknown = doc.getIn(path, true);
    const node = doc.createNode(value);
    if (isNode(before)) {
      node.comment = before.comment;
      node.commentBefore = before.commentBefore;
    }
    doc.setIn(path, node);
  }
  return doc.toString({ lineWidth: 0 });
}
